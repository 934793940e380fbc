-- mx.test_utils: checking values and gradients, MXNet's helpers in Lua.
--   assert_almost_equal(a, b, {rtol =, atol =, names =})
--   check_numeric_gradient(sym, location, {...})    -- through the executor
--   check_autograd_gradient(fn, location, {...})   -- through mx.autograd
--   check_symbolic_forward(sym, location, expected, {...})
--   check_symbolic_backward(sym, location, out_grads, expected, {...})
-- location: arrays (NDArrays or nested tables) in list_arguments order, or
-- by argument name.
local help = require 'tessera.help'

return function(mx)
  local M = {}

  -- MXNet's default tolerances per dtype (test_utils.default_rtols/atols).
  local RTOL = { float16 = 1e-2, bfloat16 = 1e-2, float32 = 1e-4, float64 = 1e-5 }
  local ATOL = { float16 = 1e-1, bfloat16 = 1e-1, float32 = 1e-3, float64 = 1e-20 }
  local RANK = { float64 = 1, float32 = 2, float16 = 3, bfloat16 = 4 }

  local function flatten(v, out)
    out = out or {}
    if type(v) == 'table' then
      for _, x in ipairs(v) do flatten(x, out) end
    else
      out[#out + 1] = v
    end
    return out
  end

  -- values (flat), shape, dtype of an NDArray, a nested table or a number.
  local function values_of(v)
    if mx.nd.is_ndarray(v) then
      return flatten(v:totable()), v.shape, v.dtype
    elseif type(v) == 'number' then
      return { v }, { 1 }, 'float64'
    elseif type(v) == 'table' then
      local shape, t = {}, v
      while type(t) == 'table' do
        shape[#shape + 1] = #t
        t = t[1]
      end
      return flatten(v), shape, 'float64'
    end
    error('expected an NDArray, a table or a number, got ' .. type(v), 3)
  end

  local function tolerance(tbl, a, b)
    local ta = RANK[a] and a or 'float64'
    local tb = RANK[b] and b or 'float64'
    return tbl[RANK[ta] > RANK[tb] and ta or tb] or 0
  end

  local function shape_text(s) return '{' .. table.concat(s, ', ') .. '}' end

  function M.assert_almost_equal(a, b, opts)
    opts = opts or {}
    local va, sa, ta = values_of(a)
    local vb, sb, tb = values_of(b)
    local names = opts.names or { 'a', 'b' }
    local rtol = opts.rtol or tolerance(RTOL, ta, tb)
    local atol = opts.atol or tolerance(ATOL, ta, tb)
    if #va ~= #vb or (mx.nd.is_ndarray(a) and mx.nd.is_ndarray(b) and shape_text(sa) ~= shape_text(sb)) then
      error(string.format('assert_almost_equal: %s has shape %s, %s has %s', names[1],
        shape_text(sa), names[2], shape_text(sb)), 2)
    end
    local worst, worst_i = -1, nil
    for i = 1, #va do
      local x, y = va[i], vb[i]
      local bad
      if x ~= x or y ~= y then
        bad = not (opts.equal_nan and x ~= x and y ~= y) and math.huge or 0
      else
        bad = math.abs(x - y) - (atol + rtol * math.abs(y))
      end
      if bad > 0 and bad > worst then worst, worst_i = bad, i end
    end
    if worst_i then
      error(string.format(
        'assert_almost_equal: %s and %s differ at element %d: %.10g vs %.10g (rtol %g, atol %g)',
        names[1], names[2], worst_i, va[worst_i], vb[worst_i], rtol, atol), 2)
    end
    return true
  end
  help.doc(M.assert_almost_equal, [[
mx.test_utils.assert_almost_equal(a, b, {rtol =, atol =, names = {'a', 'b'},
  equal_nan = false}) -> true, or an error naming the element that is the
furthest beyond the tolerance.

a and b are NDArrays, nested tables or numbers, and every element must meet
|a - b| <= atol + rtol * |b|. The default tolerances are MXNet's for the less
precise of the two dtypes (tables, numbers and other dtypes count as
float64): float16 and bfloat16 rtol 1e-2, atol 1e-1; float32 1e-4, 1e-3;
float64 1e-5, 1e-20. NaNs match only each other, and only with equal_nan =
true. Two NDArrays must have the same shape, other values the same number of
elements.]])

  -- location as a list in list_arguments order, of NDArrays of `dtype`.
  local function arrays_for(sym, location, dtype, ctx)
    local args = sym:list_arguments()
    local list = {}
    if location[1] ~= nil or next(location) == nil then
      list = location
    else
      for i, name in ipairs(args) do
        list[i] = location[name] or error("location has no value for argument '" .. name .. "'", 3)
      end
    end
    if #list ~= #args then
      error(string.format('location has %d values for %d arguments (%s)', #list, #args,
        table.concat(args, ', ')), 3)
    end
    local out = {}
    for i, v in ipairs(list) do
      if mx.nd.is_ndarray(v) then
        out[i] = (dtype and v.dtype ~= dtype) and v:astype(dtype) or v:copyto(ctx)
      else
        out[i] = mx.nd.array(v, { dtype = dtype or 'float64', ctx = ctx })
      end
    end
    return out, args
  end

  local function aux_for(sym, aux, dtype, ctx)
    local names = sym:list_auxiliary_states()
    if #names == 0 then return nil end
    aux = aux or {}
    local out = {}
    for i, name in ipairs(names) do
      local v = aux[name] or aux[i] or error("aux_states has no value for '" .. name .. "'", 3)
      out[i] = mx.nd.is_ndarray(v) and v:copyto(ctx) or mx.nd.array(v, { dtype = dtype or 'float64', ctx = ctx })
    end
    return out
  end

  local function random_like(a, seed_state)
    local n = a.size
    local t = {}
    for i = 1, n do
      seed_state[1] = (seed_state[1] * 1103515245 + 12345) % 2147483648
      t[i] = seed_state[1] / 2147483648 * 2 - 1
    end
    return mx.nd.array(t, { dtype = a.dtype, ctx = a.ctx }):reshape(a.shape)
  end

  local function dot_all(outs, projs)
    local s = 0
    for k, o in ipairs(outs) do
      local v, p = flatten(o:totable()), flatten(projs[k]:totable())
      for i = 1, #v do s = s + v[i] * p[i] end
    end
    return s
  end

  -- Central differences of loss(arrays) for every element of arrays[j]
  -- where wanted[j].
  local function numeric(arrays, wanted, loss, eps)
    local grads = {}
    for j, a in ipairs(arrays) do
      if wanted[j] then
        local base = flatten(a:totable())
        local g = {}
        for e = 1, #base do
          local function at(x)
            local v = { unpack(base) }
            v[e] = x
            local copy = {}
            for k, b in ipairs(arrays) do copy[k] = b end
            copy[j] = mx.nd.array(v, { dtype = a.dtype, ctx = a.ctx }):reshape(a.shape)
            return loss(copy)
          end
          g[e] = (at(base[e] + eps / 2) - at(base[e] - eps / 2)) / eps
        end
        grads[j] = g
      end
    end
    return grads
  end

  local function req_of(grad_req, name, i)
    if type(grad_req) == 'table' then return grad_req[name] or grad_req[i] or 'null' end
    return grad_req or 'write'
  end

  function M.check_numeric_gradient(sym, location, opts)
    opts = opts or {}
    local ctx = opts.ctx or mx.cpu()
    local dtype = opts.dtype or 'float64'
    local eps = opts.numeric_eps or 1e-3
    local rtol, atol = opts.rtol or 1e-2, opts.atol or 1e-4
    local arrays, names = arrays_for(sym, location, dtype, ctx)
    local aux = aux_for(sym, opts.aux_states, dtype, ctx)
    local train = opts.use_forward_train ~= false
    local wanted, reqs, grads, before = {}, {}, {}, {}
    local grad_nodes = opts.grad_nodes
    local seed = { opts.seed or 7 }
    for i, name in ipairs(names) do
      local want = true
      if grad_nodes then
        want = false
        for _, g in ipairs(grad_nodes) do want = want or g == name end
      end
      reqs[i] = want and req_of(opts.grad_req, name, i) or 'null'
      wanted[i] = want and reqs[i] ~= 'null'
      grads[i] = mx.nd.zeros(arrays[i].shape, { dtype = dtype, ctx = ctx })
      if reqs[i] ~= 'write' then
        -- add accumulates onto these values; null must leave them alone.
        grads[i] = random_like(arrays[i], seed)
        before[i] = flatten(grads[i]:totable())
      end
    end
    local exe = sym:bind { ctx = ctx, args = arrays, args_grad = grads, grad_req = reqs, aux_states = aux }
    exe:forward { is_train = train }
    local projs = {}
    for k, o in ipairs(exe.outputs) do projs[k] = random_like(o, seed) end
    exe:backward(projs)

    -- One executor without gradients evaluates every perturbed point.
    local e = sym:bind { ctx = ctx, args = arrays_for(sym, arrays, dtype, ctx),
      aux_states = aux_for(sym, opts.aux_states, dtype, ctx) }
    local function loss(at)
      for k, a in ipairs(at) do a:copyto(e.arg_arrays[k]) end
      e:forward { is_train = train }
      return dot_all(e.outputs, projs)
    end
    local num = numeric(arrays, wanted, loss, eps)
    for i, name in ipairs(names) do
      local got = flatten(exe.grad_arrays[i] and exe.grad_arrays[i]:totable() or grads[i]:totable())
      if reqs[i] == 'null' then
        if before[i] then
          M.assert_almost_equal(got, before[i], { rtol = 0, atol = 0,
            names = { 'gradient of ' .. name .. " (grad_req 'null')", 'its initial value' } })
        end
      elseif wanted[i] then
        local expected = num[i]
        if reqs[i] == 'add' then
          expected = {}
          for e = 1, #num[i] do expected[e] = num[i][e] + before[i][e] end
        end
        M.assert_almost_equal(got, expected, { rtol = rtol, atol = atol,
          names = { 'symbolic gradient of ' .. name .. " (grad_req '" .. reqs[i] .. "')", 'numeric gradient' } })
      end
    end
    return true
  end
  help.doc(M.check_numeric_gradient, [[
mx.test_utils.check_numeric_gradient(sym, location, {grad_req = 'write',
  grad_nodes =, aux_states =, numeric_eps = 1e-3, rtol = 1e-2, atol = 1e-4,
  dtype = 'float64', ctx = mx.cpu(), use_forward_train = true, seed = 7})
-> true, or an error naming the argument whose gradient is wrong.

It binds sym at location (a list in list_arguments order, or a table by
argument name, of NDArrays or nested tables converted to dtype), runs
backward with a random projection of the outputs as their gradient, and
compares each argument's gradient with central differences (step
numeric_eps) of the outputs' dot product with that projection. grad_req is
one request or a table by argument name or position (those missing get
'null'): 'add' starts from random values and expects them plus the
gradient, 'null' expects the gradient array left alone. grad_nodes = {names}
checks those arguments only. aux_states are given by name or position.]])

  function M.check_autograd_gradient(fn, location, opts)
    opts = opts or {}
    local ctx = opts.ctx or mx.cpu()
    local dtype = opts.dtype or 'float64'
    local eps = opts.numeric_eps or 1e-3
    local rtol, atol = opts.rtol or 1e-2, opts.atol or 1e-4
    local seed = { opts.seed or 11 }
    local arrays = {}
    for i, v in ipairs(location) do
      arrays[i] = mx.nd.is_ndarray(v) and v:astype(dtype) or mx.nd.array(v, { dtype = dtype, ctx = ctx })
    end
    local function outputs_of(...)
      local r = { ... }
      if #r == 1 and type(r[1]) == 'table' and not mx.nd.is_ndarray(r[1]) then r = r[1] end
      return r
    end
    local wanted, reqs, before = {}, {}, {}
    for i, a in ipairs(arrays) do
      local want = true
      if opts.grad_nodes then
        want = false
        for _, g in ipairs(opts.grad_nodes) do want = want or g == i end
      end
      reqs[i] = req_of(opts.grad_req, nil, i)
      wanted[i] = want and reqs[i] ~= 'null'
      if want then a:attach_grad(reqs[i]) end
      if want and reqs[i] == 'add' then
        random_like(a, seed):copyto(a.grad)
        before[i] = flatten(a.grad:totable())
      end
    end
    local outs = mx.autograd.record(function() return outputs_of(fn(unpack(arrays))) end,
      opts.train_mode ~= false)
    local projs = {}
    for k, o in ipairs(outs) do projs[k] = random_like(o, seed) end
    mx.autograd.backward(outs, projs)
    local function loss(at)
      local o = mx.autograd.train_mode(function() return outputs_of(fn(unpack(at))) end)
      return dot_all(o, projs)
    end
    local num = numeric(arrays, wanted, loss, eps)
    for i, a in ipairs(arrays) do
      if wanted[i] then
        local expected = num[i]
        if reqs[i] == 'add' then
          expected = {}
          for e = 1, #num[i] do expected[e] = num[i][e] + before[i][e] end
        end
        M.assert_almost_equal(flatten(a.grad:totable()), expected, { rtol = rtol, atol = atol,
          names = { 'autograd gradient of input ' .. i .. " (grad_req '" .. reqs[i] .. "')", 'numeric gradient' } })
      end
    end
    return true
  end
  help.doc(M.check_autograd_gradient, [[
mx.test_utils.check_autograd_gradient(fn, location, {grad_req = 'write',
  grad_nodes =, numeric_eps = 1e-3, rtol = 1e-2, atol = 1e-4, dtype =
  'float64', ctx = mx.cpu(), train_mode = true, seed = 11}) -> true, or an
error naming the input whose gradient is wrong.

fn(x1, x2, ...) returns an NDArray, several, or a list of them; location is
the list of its inputs (NDArrays or nested tables, converted to dtype). The
call is recorded by mx.autograd (in training mode unless train_mode =
false), and the gradients backward gives from a random projection of the
outputs are compared with central differences (step numeric_eps). grad_req
is one request or a table by input position (those missing get 'null');
'add' starts from random values and expects them plus the gradient.
grad_nodes = {positions} checks those inputs only.]])

  function M.check_symbolic_forward(sym, location, expected, opts)
    opts = opts or {}
    local ctx = opts.ctx or mx.cpu()
    local arrays = arrays_for(sym, location, opts.dtype, ctx)
    local exe = sym:bind { ctx = ctx, args = arrays, aux_states = aux_for(sym, opts.aux_states, opts.dtype, ctx) }
    exe:forward { is_train = opts.is_train or false }
    local names = sym:list_outputs()
    for k, out in ipairs(exe.outputs) do
      local want = expected[k] or expected[names[k]]
      M.assert_almost_equal(out, want, { rtol = opts.rtol, atol = opts.atol, names = { 'output ' .. names[k], 'expected' } })
    end
    return exe.outputs
  end
  help.doc(M.check_symbolic_forward, [[
mx.test_utils.check_symbolic_forward(sym, location, expected, {rtol =,
  atol =, dtype =, ctx = mx.cpu(), aux_states =, is_train = false}) -> the
outputs, or an error naming the output that differs from what is expected.

location is a list in list_arguments order or a table by argument name, of
NDArrays or nested tables (converted to dtype when it is given; tables are
float64 otherwise). expected holds the outputs' values in order or by
output name. The tolerances default to assert_almost_equal's.]])

  function M.check_symbolic_backward(sym, location, out_grads, expected, opts)
    opts = opts or {}
    local ctx = opts.ctx or mx.cpu()
    local arrays, names = arrays_for(sym, location, opts.dtype, ctx)
    local grads, reqs = {}, {}
    for i, a in ipairs(arrays) do
      reqs[i] = req_of(opts.grad_req, names[i], i)
      grads[i] = mx.nd.zeros(a.shape, { dtype = a.dtype, ctx = ctx })
    end
    local exe = sym:bind { ctx = ctx, args = arrays, args_grad = grads, grad_req = reqs,
      aux_states = aux_for(sym, opts.aux_states, opts.dtype, ctx) }
    exe:forward { is_train = true }
    local og = {}
    for k, g in ipairs(out_grads) do
      og[k] = mx.nd.is_ndarray(g) and g or mx.nd.array(g, { dtype = exe.outputs[k].dtype, ctx = ctx })
    end
    exe:backward(og)
    for i, name in ipairs(names) do
      local want = expected[name] or expected[i]
      if want and reqs[i] ~= 'null' then
        M.assert_almost_equal(exe.grad_arrays[i], want, { rtol = opts.rtol, atol = opts.atol,
          names = { 'gradient of ' .. name, 'expected' } })
      end
    end
    return exe.grad_arrays
  end
  help.doc(M.check_symbolic_backward, [[
mx.test_utils.check_symbolic_backward(sym, location, out_grads, expected,
  {grad_req = 'write', rtol =, atol =, dtype =, ctx = mx.cpu(), aux_states =})
-> the gradient arrays, or an error naming the argument whose gradient
differs from what is expected.

It runs forward in training mode, then backward with out_grads (one per
output, NDArrays or nested tables), and compares the gradient of each
argument expected gives, by name or position; arguments it leaves out, and
those whose grad_req is 'null', are not checked. location is as for
check_symbolic_forward; grad_req is one request or a table by argument name
or position (those missing get 'null'). The tolerances default to
assert_almost_equal's.]])

  -- The reference of check_consistency: the entry whose arrays are all of the
  -- most precise dtype (the first such), so float16 runs are held to float64.
  local function most_precise(exes)
    local best, best_rank = 1, math.huge
    for i, e in ipairs(exes) do
      local worst = 0  -- RANK: 1 is float64, larger is less precise
      for _, a in ipairs(e.arg_arrays) do worst = math.max(worst, RANK[a.dtype] or 0) end
      if worst < best_rank then best, best_rank = i, worst end
    end
    return best
  end

  function M.check_consistency(sym, ctx_list, opts)
    opts = opts or {}
    if type(ctx_list) ~= 'table' or #ctx_list < 2 then
      error('check_consistency: ctx_list must list at least two {ctx = ..., <arg> = shape} entries', 2)
    end
    local scale, grad_req = opts.scale or 1, opts.grad_req or 'write'
    local exes = {}
    for i, entry in ipairs(ctx_list) do
      local bind = { grad_req = grad_req }
      for k, v in pairs(entry) do bind[k] = v end
      local ok, exe = pcall(sym.simple_bind, sym, bind)
      if not ok then error(('check_consistency: entry %d (%s): %s'):format(i, tostring(entry.ctx), exe), 2) end
      exes[i] = exe
    end
    -- One set of values for every entry: float64 draws (or the given
    -- params), cast to each entry's dtypes. Auxiliary states are drawn
    -- positive, as running variances must be.
    local names, aux_names = sym:list_arguments(), sym:list_auxiliary_states()
    local function fill(list, dicts, given, draw)
      for _, name in ipairs(list) do
        local first = dicts(exes[1])[name]
        local v = given and given[name] or draw(first.shape)
        for _, e in ipairs(exes) do
          local dst = dicts(e)[name]
          v:astype(dst.dtype):copyto(dst)
        end
      end
    end
    fill(names, function(e) return e.arg_dict end, opts.arg_params,
      function(shape) return mx.nd.random.normal(0, scale, shape, { dtype = 'float64' }) end)
    fill(aux_names, function(e) return e.aux_dict end, opts.aux_params,
      function(shape) return mx.nd.random.uniform(0.5, 1.5, shape, { dtype = 'float64' }) end)
    for _, e in ipairs(exes) do e:forward { is_train = grad_req ~= 'null' } end
    if grad_req ~= 'null' then
      local heads = {}
      for k, out in ipairs(exes[1].outputs) do
        heads[k] = mx.nd.random.normal(0, 1, out.shape, { dtype = 'float64' })
      end
      for _, e in ipairs(exes) do
        local og = {}
        for k, h in ipairs(heads) do og[k] = h:astype(e.outputs[k].dtype):as_in_context(e.outputs[k].context) end
        e:backward(og)
      end
    end
    local ref = most_precise(exes)
    local out_names = sym:list_outputs()
    for i, e in ipairs(exes) do
      if i ~= ref then
        local where = ('entry %d (%s)'):format(i, tostring(ctx_list[i].ctx or mx.cpu()))
        local there = ('entry %d (%s)'):format(ref, tostring(ctx_list[ref].ctx or mx.cpu()))
        for k, out in ipairs(e.outputs) do
          M.assert_almost_equal(out, exes[ref].outputs[k], { rtol = opts.rtol, atol = opts.atol,
            names = { 'output ' .. out_names[k] .. ' of ' .. where, there } })
        end
        if grad_req ~= 'null' then
          for _, name in ipairs(names) do
            local g = e.grad_dict[name]
            if g then
              M.assert_almost_equal(g, exes[ref].grad_dict[name], { rtol = opts.rtol,
                atol = opts.atol, names = { 'gradient of ' .. name .. ' on ' .. where, there } })
            end
          end
        end
      end
    end
    return exes
  end
  help.doc(M.check_consistency, [[
mx.test_utils.check_consistency(sym, ctx_list, {scale = 1, grad_req =
'write', arg_params =, aux_params =, rtol =, atol =}) -> the executors, or
an error naming the output or gradient and the entries that differ.

MXNet's check: sym is bound once per entry of ctx_list, each a table of
simple_bind arguments ({ctx = mx.gpu(0), data = {8, 3, 32, 32}, type_dict
= {data = 'float16'}}); every entry gets the same arguments (normal draws
times scale, or arg_params), auxiliary states (uniform in [0.5, 1.5], or
aux_params) and output gradients, cast to its dtypes; forward (in training
mode unless grad_req is 'null') and backward run on each; the outputs and
gradients of each entry are compared with those of the most precise entry
(float64 before float32 before float16), with assert_almost_equal's
tolerances for the less precise dtype unless rtol / atol are given.]])

  help.doc(M, [[
mx.test_utils: assert_almost_equal(a, b, {rtol, atol}) with MXNet's default
tolerances per dtype; check_numeric_gradient(sym, location, {grad_req =
'write'|'add'|'null', numeric_eps, rtol, atol, grad_nodes, aux_states, dtype})
compares the executor's gradients with central differences of a random
projection of the outputs (float64 by default); check_autograd_gradient(fn,
location, {grad_req, grad_nodes = {input positions}, ...}) does the same
through mx.autograd; check_symbolic_forward and
check_symbolic_backward compare with expected values; check_consistency runs
a symbol on several contexts and dtypes and compares them.]])
  -- The values of an NDArray or a nested table, as one flat list.
  function M.flatten(v)
    return flatten(mx.nd.is_ndarray(v) and v:totable() or v)
  end
  help.doc(M.flatten, [[
mx.test_utils.flatten(x) -> the values of an NDArray (or a nested table) as
one flat Lua list, row-major.]])
  return M
end
