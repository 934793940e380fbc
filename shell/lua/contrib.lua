-- MXNet's operator namespaces: mx.nd.contrib and mx.sym.contrib, where a
-- name resolves to the operator registered as _contrib_<name>
-- (contrib.CTCLoss, ...), and mx.nd.contrib adds the control-flow functions
-- foreach, while_loop and cond, which run the Lua functions given (so they
-- record under mx.autograd like any other calls), and boolean_mask;
-- mx.nd.linalg and
-- mx.sym.linalg, where linalg.<name> is the operator _linalg_<name>.
local help = require 'tessera.help'

local unpack = unpack or table.unpack

return function(mx)
  local is_array = mx.nd.is_ndarray

  local function namespace(ops, extra, prefix)
    prefix = prefix or '_contrib_'
    return setmetatable(extra, {
      __index = function(_, k)
        if type(k) ~= 'string' then return nil end
        return ops[prefix .. k]
      end,
    })
  end

  -- A value of a kind (an NDArray, a Symbol) or a list of them, as a list,
  -- and a way back to the same form; nil as an empty list where allowed.
  local function as_list_of(is_kind, kind, x, what, allow_nil)
    if x == nil and allow_nil then return {}, function() return nil end end
    if is_kind(x) then return { x }, function(l) return l[1] end end
    if type(x) ~= 'table' then
      error(('%s must be %s or a list of them, got %s'):format(what, kind, type(x)), 4)
    end
    for i, v in ipairs(x) do
      if not is_kind(v) then
        error(('%s[%d] is a %s, not %s'):format(what, i, type(v), kind), 4)
      end
    end
    return x, function(l) return l end
  end

  local function as_list(x, what)
    return as_list_of(is_array, 'an NDArray', x, what)
  end

  local function stack(steps, n)
    local out = {}
    for k = 1, n do
      local items = {}
      for t, s in ipairs(steps) do items[t] = s[k] end
      out[k] = mx.nd.stack(items, { axis = 1 })
    end
    return out
  end

  local function truth(x, what)
    if type(x) == 'boolean' then return x end
    if type(x) == 'number' then return x ~= 0 end
    if is_array(x) then
      if x.size ~= 1 then
        error(('%s must return one value, got an array of shape (%s)'):format(what,
          table.concat(x.shape, ',')), 3)
      end
      return x:asscalar() ~= 0
    end
    error(('%s must return a boolean, a number or a one-element NDArray, got %s'):format(what,
      type(x)), 3)
  end

  local nd = {}

  -- foreach(body, data, init_states) -> outputs, states: body(data_t,
  -- states) -> step outputs, new states, for each t along data's first axis;
  -- the step outputs stacked on a new first axis.
  function nd.foreach(body, data, init_states)
    if type(body) ~= 'function' then error('foreach: body must be a function', 2) end
    local data_list, data_back = as_list(data, 'foreach: data')
    local states, states_back = as_list(init_states, 'foreach: init_states')
    local n = data_list[1].shape[1]
    for i, d in ipairs(data_list) do
      if d.shape[1] ~= n then
        error(('foreach: data[%d] has %d steps, data[1] %d'):format(i, d.shape[1], n), 2)
      end
    end
    local steps, out_back, n_out = {}, nil, 0
    for t = 1, n do
      local slice = {}
      for i, d in ipairs(data_list) do slice[i] = d[t] end
      local out, new = body(data_back(slice), states_back(states))
      local outs
      outs, out_back = as_list(out, 'foreach: the outputs of body')
      states = as_list(new, 'foreach: the states body returns')
      if t == 1 then n_out = #outs elseif #outs ~= n_out then
        error(('foreach: body returned %d outputs at step %d, %d before'):format(#outs, t, n_out), 2)
      end
      steps[t] = outs
    end
    if n == 0 then error('foreach: data has no steps', 2) end
    return out_back(stack(steps, n_out)), states_back(states)
  end

  -- while_loop(cond, func, loop_vars, max_iterations) -> outputs, loop_vars:
  -- while cond(vars...) holds (at most max_iterations times), func(vars...)
  -- -> step outputs, new vars. The step outputs are stacked on a new first
  -- axis and padded with zeros to max_iterations, as MXNet's (whose padding
  -- is left uninitialised).
  function nd.while_loop(cond, func, loop_vars, max_iterations)
    if type(cond) ~= 'function' or type(func) ~= 'function' then
      error('while_loop: cond and func must be functions', 2)
    end
    if type(max_iterations) ~= 'number' or max_iterations < 1 then
      error('while_loop: max_iterations must be a whole number >= 1', 2)
    end
    local vars, vars_back = as_list(loop_vars, 'while_loop: loop_vars')
    local steps, out_back, n_out = {}, nil, nil
    while #steps < max_iterations and truth(cond(unpack(vars)), 'while_loop: cond') do
      local out, new = func(unpack(vars))
      local outs = {}
      if out ~= nil then outs, out_back = as_list(out, 'while_loop: the outputs of func') end
      local new_vars = as_list(new, 'while_loop: the loop variables func returns')
      if #new_vars ~= #vars then
        error(('while_loop: func returned %d loop variables for %d'):format(#new_vars, #vars), 2)
      end
      n_out = n_out or #outs
      steps[#steps + 1] = outs
      vars = new_vars
    end
    if #steps == 0 or n_out == 0 then return {}, vars_back(vars) end
    local outputs = {}
    for k = 1, n_out do
      local items = {}
      for t, s in ipairs(steps) do items[t] = s[k] end
      local stacked = mx.nd.stack(items, { axis = 1 })
      if #steps < max_iterations then
        local pad_shape = { max_iterations - #steps }
        for d = 2, #stacked.shape do pad_shape[d] = stacked.shape[d] end
        stacked = mx.nd.concat({ stacked, mx.nd.zeros(pad_shape, { dtype = stacked.dtype,
          ctx = stacked.ctx }) }, { dim = 1 })
      end
      outputs[k] = stacked
    end
    return out_back(outputs), vars_back(vars)
  end

  -- cond(pred, then_func, else_func): then_func() when pred (a one-element
  -- array or a Lua value) holds, else else_func().
  function nd.cond(pred, then_func, else_func)
    if type(then_func) ~= 'function' or type(else_func) ~= 'function' then
      error('cond: then_func and else_func must be functions', 2)
    end
    if truth(pred, 'cond: pred') then return then_func() end
    return else_func()
  end

  help.doc(nd.foreach, [[
mx.nd.contrib.foreach(body, data, init_states) -> outputs, states: for each
step t of data's first axis, out_t, states = body(data[t], states); the
outputs stacked on a new first axis. data, states and outputs are an
NDArray or a list of them. The calls record under mx.autograd.]])
  help.doc(nd.while_loop, [[
mx.nd.contrib.while_loop(cond, func, loop_vars, max_iterations) -> outputs,
loop_vars: while cond(vars...) is true, at most max_iterations times,
out, vars = func(vars...); the outputs stacked on a new first axis, padded
with zeros to max_iterations.]])
  help.doc(nd.cond, [[
mx.nd.contrib.cond(pred, then_func, else_func) -> then_func() if pred (a
one-element NDArray, a number or a boolean) holds, else else_func().]])

  -- boolean_mask(data, index, {axis = 1}) -> the rows of data (its first
  -- axis, the only one MXNet takes) whose index is nonzero, in order, as
  -- MXNet's contrib.boolean_mask. The output's size depends on index's
  -- values, so the call waits for index; gradients reach data (through
  -- take), none reach index.
  function nd.boolean_mask(data, index, opts)
    if not is_array(data) or not is_array(index) then
      error('boolean_mask: data and index must be NDArrays', 2)
    end
    local axis = opts and opts.axis or 1
    if axis ~= 1 and axis ~= -#data.shape then
      error(('boolean_mask: axis %s is not supported (only the first axis, as MXNet\'s)')
        :format(tostring(axis)), 2)
    end
    if #index.shape ~= 1 or index.shape[1] ~= data.shape[1] then
      error(('boolean_mask: index has shape (%s); it must be (%d), one flag per row of data (%s)')
        :format(table.concat(index.shape, ','), data.shape[1], table.concat(data.shape, ',')), 2)
    end
    local keep = {}
    for i, v in ipairs(index:totable()) do
      if v ~= 0 then keep[#keep + 1] = i - 1 end
    end
    if #keep == 0 then
      error('boolean_mask: index keeps no row, and arrays cannot have a zero-size axis', 2)
    end
    return mx.nd.take(data, mx.nd.array(keep, { dtype = 'int64', ctx = data.context }))
  end
  help.doc(nd.boolean_mask, [[
mx.nd.contrib.boolean_mask(data, index) -> the rows of data whose flag in
index (one per row) is nonzero, in order (MXNet's contrib.boolean_mask).
Waits for index, since the result's size depends on it; gradients reach
data. A mask keeping no row is an error (arrays have no zero-size axis).]])

  -- Control flow in symbols: the bodies are called once on placeholder
  -- variables and become subgraphs of one node (_foreach, _while_loop,
  -- _cond); a bound graph unrolls it (docs/sequence.md).
  local is_symbol = mx.sym.is_symbol

  local function as_symbols(x, what, allow_nil)
    return as_list_of(is_symbol, 'a Symbol', x, what, allow_nil)
  end

  -- The outputs of one node as a list of one-output symbols.
  local function outputs_of(s)
    local out = {}
    for i = 1, #s do out[i] = s[i] end
    return out
  end

  local function placeholders(prefix, n)
    local vars = {}
    for i = 1, n do vars[i] = mx.sym.Variable(('%s%d'):format(prefix, i - 1)) end
    return vars
  end

  local function join(a, b)
    local all = {}
    for _, v in ipairs(a) do all[#all + 1] = v end
    for _, v in ipairs(b) do all[#all + 1] = v end
    return all
  end

  local function split_at(list, n)
    local a, b = {}, {}
    for i, v in ipairs(list) do
      if i <= n then a[#a + 1] = v else b[#b + 1] = v end
    end
    return a, b
  end

  local sym = {}

  -- foreach(body, data, init_states, {name}) -> outputs, states
  function sym.foreach(body, data, init_states, opts)
    if type(body) ~= 'function' then error('foreach: body must be a function', 2) end
    local name = opts and opts.name
    local data_list, data_back = as_symbols(data, 'foreach: data')
    local states, states_back = as_symbols(init_states or {}, 'foreach: init_states')
    local prefix = (name or 'foreach') .. '_'
    local data_vars = placeholders(prefix .. 'data', #data_list)
    local state_vars = placeholders(prefix .. 'state', #states)
    local out, new = body(data_back(data_vars), states_back(state_vars))
    local outs, out_back = as_symbols(out, 'foreach: the outputs of body', true)
    local new_states = as_symbols(new or {}, 'foreach: the states body returns')
    if #new_states ~= #states then
      error(('foreach: body returned %d states for %d'):format(#new_states, #states), 2)
    end
    local node = mx.sym._make_foreach(mx.sym.Group(join(outs, new_states)), #outs, data_vars,
      state_vars, data_list, states, name)
    local a, b = split_at(outputs_of(node), #outs)
    return out_back(a), states_back(b)
  end

  -- while_loop(cond, func, loop_vars, max_iterations, {name}) -> outputs, loop_vars
  function sym.while_loop(cond, func, loop_vars, max_iterations, opts)
    if type(cond) ~= 'function' or type(func) ~= 'function' then
      error('while_loop: cond and func must be functions', 2)
    end
    if type(max_iterations) ~= 'number' or max_iterations < 1
        or max_iterations ~= math.floor(max_iterations) then
      error('while_loop: max_iterations must be a whole number >= 1 (a symbol graph is static)', 2)
    end
    local name = opts and opts.name
    local vars, vars_back = as_symbols(loop_vars, 'while_loop: loop_vars')
    local ph = placeholders((name or 'while_loop') .. '_var', #vars)
    local c = cond(unpack(ph))
    if not is_symbol(c) then error('while_loop: cond must return a Symbol', 2) end
    local out, new = func(unpack(ph))
    local outs, out_back = as_symbols(out, 'while_loop: the outputs of func', true)
    local new_vars = as_symbols(new, 'while_loop: the loop variables func returns')
    if #new_vars ~= #vars then
      error(('while_loop: func returned %d loop variables for %d'):format(#new_vars, #vars), 2)
    end
    local node = mx.sym._make_while_loop(c, mx.sym.Group(join(outs, new_vars)), #outs, ph, vars,
      max_iterations, name)
    local a, b = split_at(outputs_of(node), #outs)
    return out_back(a), vars_back(b)
  end

  -- cond(pred, then_func, else_func, {name}) -> then_func()'s outputs where
  -- pred is nonzero, else else_func()'s
  function sym.cond(pred, then_func, else_func, opts)
    if not is_symbol(pred) then error('cond: pred must be a Symbol', 2) end
    if type(then_func) ~= 'function' or type(else_func) ~= 'function' then
      error('cond: then_func and else_func must be functions', 2)
    end
    local t, back = as_symbols(then_func(), 'cond: the outputs of then_func')
    local e = as_symbols(else_func(), 'cond: the outputs of else_func')
    local node = mx.sym._make_cond(pred, mx.sym.Group(t), mx.sym.Group(e), opts and opts.name)
    return back(outputs_of(node))
  end

  sym.boolean_mask = function()
    error('mx.sym.contrib.boolean_mask: its output shape depends on the values of index, '
      .. 'which a symbol graph cannot infer; use mx.nd.contrib.boolean_mask', 2)
  end

  help.doc(sym.foreach, [[
mx.sym.contrib.foreach(body, data, init_states, {name =}) -> outputs, states:
MXNet's foreach in a graph. body(slices, states) -> step outputs, new states
is called once, on placeholder variables, and becomes the subgraph of one
_foreach node; binding unrolls it over data's first axis. Values the body
computes from no loop input are computed once, before the loop.]])
  help.doc(sym.while_loop, [[
mx.sym.contrib.while_loop(cond, func, loop_vars, max_iterations, {name =}) ->
outputs, loop_vars: MXNet's while_loop in a graph. The step outputs have
max_iterations rows, zero after the last step; binding unrolls the loop to
max_iterations steps, masking those after cond first gives 0.]])
  help.doc(sym.cond, [[
mx.sym.contrib.cond(pred, then_func, else_func, {name =}) -> outputs: MXNet's
cond in a graph: then_func()'s outputs where pred (one value) is nonzero,
else else_func()'s. Both branches are computed and one is selected.]])

  rawset(mx.nd, 'contrib', namespace(mx.nd, nd))
  rawset(mx.sym, 'contrib', namespace(mx.sym, sym))
  rawset(mx.nd, 'linalg', namespace(mx.nd, {}, '_linalg_'))
  rawset(mx.sym, 'linalg', namespace(mx.sym, {}, '_linalg_'))
end
