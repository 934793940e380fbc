-- sym:simple_bind{...}, sym:bind{...} and the Executor object over the C++
-- executor (shell/bind_executor.cc). The arrays an executor holds are fixed
-- at bind time, so exe.outputs, exe.arg_dict, exe.grad_dict and exe.aux_dict
-- are plain tables of those arrays; forward writes them in place.
local help = require 'tessera.help'

return function(mx)
  local Executor = {}
  Executor.__index = Executor
  Executor.__name = 'Executor'

  local function names_text(list)
    return table.concat(list, ', ')
  end

  local function wrap(handle, sym)
    local self = setmetatable({ _handle = handle, _symbol = sym }, Executor)
    self.outputs = handle:outputs()
    self.arg_arrays = handle:arg_arrays()
    self.grad_arrays = handle:grad_arrays()
    self.aux_arrays = handle:aux_arrays()
    self.arg_dict, self.grad_dict, self.aux_dict, self.output_dict = {}, {}, {}, {}
    for i, name in ipairs(sym:list_arguments()) do
      self.arg_dict[name] = self.arg_arrays[i]
      if self.grad_arrays[i] then self.grad_dict[name] = self.grad_arrays[i] end
    end
    for i, name in ipairs(sym:list_auxiliary_states()) do self.aux_dict[name] = self.aux_arrays[i] end
    for i, name in ipairs(sym:list_outputs()) do self.output_dict[name] = self.outputs[i] end
    return self
  end

  function Executor:forward(opts)
    if type(opts) == 'boolean' then opts = {is_train = opts} end  -- exe:forward(true)
    opts = opts or {}
    for k, v in pairs(opts) do
      if k ~= 'is_train' then
        local dst = self.arg_dict[k]
        if not dst then
          error("forward: '" .. tostring(k) .. "' is not an argument (arguments: "
            .. names_text(self._symbol:list_arguments()) .. ')', 2)
        end
        if not mx.nd.is_ndarray(v) then
          local ok, a = pcall(mx.nd.array, v, { dtype = dst.dtype })
          if not ok then error("forward: argument '" .. k .. "': " .. tostring(a), 2) end
          v = a
        end
        -- Checked here, so the error names the argument and not a copy.
        if table.concat(v.shape, ',') ~= table.concat(dst.shape, ',') then
          error(("forward: argument '%s' has shape (%s) in this executor, got (%s) "
            .. "(exe:reshape{%s = shape} makes an executor for another shape)"):format(k,
            table.concat(dst.shape, ','), table.concat(v.shape, ','), k), 2)
        end
        v:copyto(dst)
      end
    end
    self._handle:forward(opts.is_train and true or false)
    return self.outputs
  end

  function Executor:backward(out_grads)
    self._handle:backward(out_grads)
  end

  -- MXNet's set_monitor_callback(callback, monitor_all): fn(name, array)
  -- after each node of every forward and backward, on its outputs (and
  -- inputs with monitor_all); nil turns it off.
  function Executor:set_monitor_callback(fn, opts)
    if fn ~= nil and type(fn) ~= 'function' then
      error('set_monitor_callback: expected a function(name, array) or nil, got ' .. type(fn), 2)
    end
    local all = opts
    if type(opts) == 'table' then all = opts.monitor_all end
    self._handle:set_monitor_callback(fn, all and true or false)
  end

  function Executor:reshape(opts)
    local shapes = {}
    for k, v in pairs(opts or {}) do
      if k ~= 'partial_shaping' and k ~= 'allow_up_sizing' then shapes[k] = v end
    end
    return wrap(self._handle:reshape(shapes), self._symbol)
  end

  function Executor:copy_params_from(arg_params, aux_params, allow_extra_params)
    local function copy(params, dict, what)
      for name, arr in pairs(params or {}) do
        local dst = dict[name]
        if dst then
          if arr.dtype ~= dst.dtype then arr = arr:astype(dst.dtype) end
          arr:copyto(dst)
        elseif not allow_extra_params then
          error('copy_params_from: ' .. what .. " '" .. name .. "' is not in the executor", 2)
        end
      end
    end
    copy(arg_params, self.arg_dict, 'argument')
    copy(aux_params, self.aux_dict, 'auxiliary state')
  end

  function Executor:debug_str() return self._handle:debug_str() end
  function Executor:memory_bytes() return self._handle:memory_bytes() end
  Executor.__tostring = function(self)
    return '<Executor ' .. names_text(self._symbol:list_outputs()) .. '>'
  end

  local function in_order(sym, given, list, what)
    if given == nil then return nil end
    if given[1] ~= nil or next(given) == nil then return given end
    local out = {}
    for i, name in ipairs(list) do
      out[i] = given[name] or false
    end
    for name in pairs(given) do
      local known = false
      for _, n in ipairs(list) do known = known or n == name end
      if not known then
        error(what .. ": '" .. tostring(name) .. "' is not in the symbol (" .. names_text(list) .. ')', 3)
      end
    end
    return out
  end

  local methods = getmetatable(mx.sym.Variable('_')).__index

  methods.simple_bind = help.doc(function(self, opts)
    opts = opts or {}
    local shapes, reqs, default = {}, nil, 'write'
    local gr = opts.grad_req
    -- A table names the arguments with gradients; the rest get none (MXNet).
    if type(gr) == 'string' then default = gr elseif type(gr) == 'table' then reqs, default = gr, 'null' end
    for k, v in pairs(opts) do
      if k ~= 'ctx' and k ~= 'grad_req' and k ~= 'type_dict' and k ~= 'stype_dict' then
        shapes[k] = v
      end
    end
    return wrap(mx.sym._simple_bind(self, opts.ctx or mx.cpu(), shapes, opts.type_dict, reqs,
      default), self)
  end, [[
s:simple_bind{ctx = mx.cpu(), grad_req = 'write' | 'add' | 'null' | {name = req},
  type_dict = {name = 'float32'}, <name> = shape, ...} -> an Executor with every
argument, gradient and auxiliary state allocated from the shapes given (the rest
inferred). exe:forward{is_train = true, data = x}, exe:backward(out_grads),
exe.outputs, exe.arg_dict, exe.grad_dict, exe.aux_dict, exe:reshape{...},
exe:copy_params_from(args, aux), exe:debug_str().]])

  methods.bind = help.doc(function(self, opts)
    opts = opts or {}
    local args_list = self:list_arguments()
    local args = in_order(self, opts.args, args_list, 'bind (args)')
    if not args then error('bind: args = {arrays} is required', 2) end
    local grads = in_order(self, opts.args_grad, args_list, 'bind (args_grad)')
    local reqs
    local gr = opts.grad_req or 'write'
    if grads then
      reqs = {}
      for i, name in ipairs(args_list) do
        local r = type(gr) == 'string' and gr or (gr[name] or gr[i] or 'null')
        if not grads[i] then r = 'null' end
        reqs[i] = r
      end
    end
    local aux = in_order(self, opts.aux_states, self:list_auxiliary_states(), 'bind (aux_states)')
    local shared = opts.shared_exec and opts.shared_exec._handle
    return wrap(mx.sym._bind(self, opts.ctx or mx.cpu(), args, grads, reqs, aux, shared), self)
  end, [[
s:bind{ctx = mx.cpu(), args = {arrays} | {name = array}, args_grad = ..., grad_req =
  'write' | 'add' | 'null' | {name = req}, aux_states = ..., shared_exec = exe} -> an
Executor on the arrays given (no args_grad: no gradients). shared_exec: take the
internal storage from exe's where big enough (the two must not run interleaved).]])

  help.doc(Executor.forward, [[
exe:forward{is_train = false, name = array | table, ...} -> exe.outputs. Copies
the arrays given into the arguments of those names (shapes must match), then
runs the graph; exe:forward(true) is forward{is_train = true}.]])
  help.doc(Executor.backward, [[
exe:backward(out_grads) -> writes the gradients of the arguments bound with
grad_req 'write' or 'add' into exe.grad_arrays (exe.grad_dict by name).
out_grads: the head gradients, one per output (omitted for loss outputs).]])
  help.doc(Executor.reshape, [[
exe:reshape{name = shape, ...} -> a new executor for other input shapes,
sharing this one's parameters (partial_shaping and allow_up_sizing accepted).]])
  help.doc(Executor.copy_params_from, [[
exe:copy_params_from(arg_params, aux_params, allow_extra_params = false): copies
named arrays into the arguments and auxiliary states (cast to their dtype);
a name the executor lacks is an error unless allow_extra_params.]])
  help.doc(Executor.debug_str, 'exe:debug_str() -> the bound graph, its memory plan and its ops, as text')
  help.doc(Executor.set_monitor_callback, [[
exe:set_monitor_callback(fn, {monitor_all = false}) -> after each node of every
forward and backward, fn(name, array) gets each of its outputs ('fc1_output')
and, with monitor_all, first its inputs ('fc1_weight'). The values are not
computed yet: push work on them (statistics as NDArray ops), do not read them
in fn. Nodes run one per engine op while a callback is set. nil turns it
off. mx.monitor.Monitor uses it.]])
  help.doc(Executor.memory_bytes, 'exe:memory_bytes() -> the bytes of the arrays the executor planned')
  help.doc(Executor, [[
mx.Executor: what sym:simple_bind{...} and sym:bind{...} return. Methods:
forward, backward, reshape, copy_params_from, set_monitor_callback, debug_str,
memory_bytes. Fields:
outputs, arg_arrays, grad_arrays, aux_arrays, and arg_dict, grad_dict,
aux_dict, output_dict by name.]])
  mx.Executor = Executor
end
