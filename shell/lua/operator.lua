-- mx.operator: operators written in Lua (MXNet's CustomOp / CustomOpProp).
--
--   local Square = {}                        -- the operator
--   function Square:forward(is_train, req, in_data, out_data, aux)
--     self:assign(out_data[1], req[1], in_data[1] * in_data[1])
--   end
--   function Square:backward(req, out_grad, in_data, out_data, in_grad, aux)
--     self:assign(in_grad[1], req[1], out_grad[1] * in_data[1] * 2)
--   end
--   local SquareProp = {}                    -- its description
--   function SquareProp:create_operator(ctx, shapes, dtypes) return setmetatable({}, {__index = Square}) end
--   mx.operator.register('square', SquareProp)
--   mx.nd.Custom(x, {op_type = 'square'})
--
-- The C++ side (shell/bind_custom_op.cc) calls the property's methods while
-- graphs are built and its operator's forward/backward from the engine.
local help = require 'tessera.help'
local class = require 'tessera.class'

local unpack = unpack or table.unpack

return function(mx)
  local M = mx.operator  -- made by the C++ bindings
  local registered = {}

  -- The defaults a property falls back on (as MXNet's CustomOpProp).
  local CustomOpProp = class.root('CustomOpProp', {need_top_grad = true})
  -- MXNet's CustomOpProp.__init__(need_top_grad = True), for subclasses:
  -- function P:__init() P.super.__init(self, {need_top_grad = false}) end
  function CustomOpProp:__init(opts)
    if type(opts) == 'table' and opts.need_top_grad ~= nil then
      self.need_top_grad = opts.need_top_grad
    end
  end
  function CustomOpProp:list_arguments() return {'data'} end
  function CustomOpProp:list_outputs() return {'output'} end
  function CustomOpProp:list_auxiliary_states() return {} end
  -- Every output and aux state has the first argument's shape.
  function CustomOpProp:infer_shape(in_shape)
    local outs, aux = {}, {}
    for i = 1, #self:list_outputs() do outs[i] = in_shape[1] end
    for i = 1, #self:list_auxiliary_states() do aux[i] = in_shape[1] end
    return in_shape, outs, aux
  end
  -- Every array has the first argument's dtype.
  function CustomOpProp:infer_type(in_type)
    local t = in_type[1]
    local ins, outs, aux = {}, {}, {}
    for i = 1, #in_type do ins[i] = t end
    for i = 1, #self:list_outputs() do outs[i] = t end
    for i = 1, #self:list_auxiliary_states() do aux[i] = t end
    return ins, outs, aux
  end
  function CustomOpProp:declare_backward_dependency(out_grad, in_data, out_data)
    local deps = {}
    local need = self.need_top_grad
    if type(need) == 'function' then need = need(self) end  -- MXNet spells it as a method
    if need then
      for _, id in ipairs(out_grad) do deps[#deps + 1] = id end
    end
    for _, id in ipairs(in_data) do deps[#deps + 1] = id end
    for _, id in ipairs(out_data) do deps[#deps + 1] = id end
    return deps
  end
  function CustomOpProp:create_operator()
    error('the property must define create_operator(ctx, shapes, dtypes)', 0)
  end
  -- Subclasses: local P = mx.operator.CustomOpProp:extend('P') (or :extend{fields}).

  -- The defaults of an operator: assign, and errors for missing methods.
  local CustomOp = class.root('CustomOp')
  -- Writes src into dst as req says: 'write'/'inplace' copy, 'add' adds,
  -- 'null' does nothing.
  function CustomOp:assign(dst, req, src)
    if req == 'null' then return end
    if req == 'add' then
      dst:add_(src)
    elseif req == 'write' or req == 'inplace' then
      if type(src) == 'number' then
        dst[{1, dst.shape[1]}] = src
      else
        src:copyto(dst)
      end
    else
      error("assign: req must be 'write', 'inplace', 'add' or 'null', not " .. tostring(req), 2)
    end
  end
  function CustomOp:forward()
    error('the operator has no forward method', 0)
  end
  function CustomOp:backward()
    error('the operator has no backward method (it has no gradient)', 0)
  end

  -- Called by the C++ side on what create_operator returned: a function
  -- running op:forward / op:backward.
  CustomOpProp._runner = function(op)
    if type(op) ~= 'table' then
      error('create_operator must return the operator object (a table), got ' .. type(op), 0)
    end
    local function method(name)
      local f = op[name]
      if f == nil then f = CustomOp[name] end
      return f
    end
    if op.assign == nil then rawset(op, 'assign', CustomOp.assign) end
    return function(name, ...) return method(name)(op, ...) end
  end

  -- A property from its registration: a constructor function, a class
  -- (called with the parameters, as MXNet calls Prop(**kwargs)), or a plain
  -- table of methods; init(self, kwargs) is also called when present.
  local function instantiate(Prop, kwargs)
    if type(Prop) == 'function' then return Prop(kwargs) end
    local self
    if class.is_class(Prop) then
      self = Prop(kwargs)
    else
      self = setmetatable({}, {__index = Prop})
    end
    if Prop.init then Prop.init(self, kwargs) end
    return self
  end

  M.CustomOpProp = help.doc(CustomOpProp, [[
mx.operator.CustomOpProp: the defaults of a custom op's property (list_arguments
{'data'}, list_outputs {'output'}, no aux states, infer_shape/infer_type from
the first argument, declare_backward_dependency: out_grad when need_top_grad,
in_data, out_data). A property given to mx.operator.register without a
metatable inherits them. CustomOpProp:extend('Name') (or :extend{fields})
makes a subclass, a class called to construct (mx.class); its
__init(self, kwargs) may call CustomOpProp.__init(self, {need_top_grad =
false}), as MXNet's super().__init__(need_top_grad = False).]])
  M.CustomOp = help.doc(CustomOp, [[
mx.operator.CustomOp: the base of a custom operator: op:assign(dst, req, src)
writes src into dst as req ('write', 'inplace', 'add', 'null') says.
CustomOp:extend('Name') makes a subclass that is called to construct, so
create_operator can return Softmax() as in MXNet's example.]])

  M.register = help.doc(function(op_type, Prop)
    if type(op_type) ~= 'string' or op_type == '' then
      error('mx.operator.register: op_type must be a non-empty string', 2)
    end
    if type(Prop) ~= 'table' and type(Prop) ~= 'function' then
      error('mx.operator.register: expected a property class (table) or constructor function, got '
        .. type(Prop), 2)
    end
    if type(Prop) == 'table' and getmetatable(Prop) == nil and Prop ~= CustomOpProp then
      setmetatable(Prop, CustomOpProp)
    end
    local replaced = M._register(op_type, function(kwargs) return instantiate(Prop, kwargs) end,
                                 CustomOpProp)
    if replaced or registered[op_type] then
      io.stderr:write(("warning: mx.operator.register: '%s' was registered before; the new " ..
        "definition replaces it (symbols made before keep the old one)\n"):format(op_type))
    end
    registered[op_type] = Prop
    return Prop
  end, [[
mx.operator.register(op_type, Prop) -> Prop. Registers an operator written in
Lua, used as mx.nd.Custom(x, ..., {op_type = op_type, ...}) or
mx.sym.Custom{data = x, op_type = op_type, ...}, in executors and under
autograd. Prop is a property class: its methods list_arguments, list_outputs,
list_auxiliary_states, infer_shape(in_shapes) -> arg, out, aux shapes,
infer_type(in_types), declare_backward_dependency, and
create_operator(ctx, shapes, dtypes) -> an operator with
forward(is_train, req, in_data, out_data, aux) and
backward(req, out_grad, in_data, out_data, in_grad, aux). Prop.init(self,
kwargs) receives the other parameters as strings. Registering a name again
replaces it (with a warning).]])

  -- ?op_type for an operator registered from Lua: its registration.
  help.add_source(function(name)
    local Prop = registered[name]
    if not Prop then return nil end
    local lines = { ("%s: an operator written in Lua (mx.operator.register), used as "
      .. "mx.nd.Custom(x, ..., {op_type = '%s'}) or mx.sym.Custom{..., op_type = '%s'}")
      :format(name, name, name) }
    local ok, prop = pcall(instantiate, Prop, {})
    if ok and type(prop) == 'table' then
      for _, part in ipairs({ 'arguments', 'outputs', 'auxiliary_states' }) do
        local got, list = pcall(prop['list_' .. part], prop)
        if got and type(list) == 'table' and #list > 0 then
          lines[#lines + 1] = ('  %s: %s'):format(part:gsub('_', ' '), table.concat(list, ', '))
        end
      end
    end
    local doc = help.lookup(Prop)
    if doc and doc ~= help.lookup(CustomOpProp) then lines[#lines + 1] = doc end
    return table.concat(lines, '\n')
  end)

  -- ---- elementwise operators compiled by LuaJIT -----------------------------

  -- The loop over raw buffers for one op, kernel kind and set of requests,
  -- generated as source so that each op gets loops of its own (a trace
  -- specialised to its function). Pointers come typed from data_ptr.
  local function gen_loop(n_in, n_res, reqs, kind)
    local p = {}
    local ins, outs = {}, {}
    for i = 1, n_in do ins[i] = 'x' .. i end
    for i = 1, n_res do outs[i] = 'o' .. i end
    local params = table.concat(ins, ', ') .. ', ' .. table.concat(outs, ', ')
    p[#p + 1] = 'local f = ...\nreturn function(n, ' .. params .. ')\n'
    p[#p + 1] = '  for i = 0, n - 1 do\n'
    local vals, args = {}, {}
    for i = 1, n_res do vals[i] = 'v' .. i end
    for i = 1, n_in do args[i] = 'x' .. i .. '[i]' end
    p[#p + 1] = '    local ' .. table.concat(vals, ', ') .. ' = f(' .. table.concat(args, ', ') .. ')\n'
    for i = 1, n_res do
      if reqs[i] == 'add' then
        p[#p + 1] = ('    o%d[i] = o%d[i] + v%d\n'):format(i, i, i)
      elseif reqs[i] ~= 'null' then
        p[#p + 1] = ('    o%d[i] = v%d\n'):format(i, i)
      end
    end
    p[#p + 1] = '  end\nend\n'
    return table.concat(p), kind
  end

  local float_types = {float32 = true, float64 = true}
  local function numel(a)
    local n = 1
    for _, d in ipairs(a.shape) do n = n * d end
    return n
  end

  local function split_call(...)
    local args = {...}
    local last = args[#args]
    local opts = {}
    if type(last) == 'table' and not mx.nd.is_ndarray(last)
        and (#last == 0 or not mx.nd.is_ndarray(last[1])) then
      opts = table.remove(args)
    end
    if #args == 1 and type(args[1]) == 'table' and not mx.nd.is_ndarray(args[1]) then args = args[1] end
    return args, opts
  end

  M.elementwise = help.doc(function(spec)
    if type(spec) ~= 'table' then error('mx.operator.elementwise: expected a table {name, forward, backward}', 2) end
    local name, fwd, bwd = spec.name, spec.forward, spec.backward
    if type(name) ~= 'string' or not name:match('^[%a_][%w_]*$') then
      error('mx.operator.elementwise: name must be an identifier, got ' .. tostring(name), 2)
    end
    if type(fwd) ~= 'function' then error("mx.operator.elementwise '" .. name .. "': forward must be a function", 2) end
    if bwd ~= nil and type(bwd) ~= 'function' then
      error("mx.operator.elementwise '" .. name .. "': backward must be a function or nil", 2)
    end
    local keys = getmetatable(mx.nd).__keys
    for _, k in ipairs(keys and keys() or {}) do
      if k == name then
        error("mx.operator.elementwise: '" .. name .. "' is a built-in operator; choose another name", 2)
      end
    end
    -- Inputs are the forward's parameters, named as in its source.
    local n_in = debug.getinfo(fwd, 'u').nparams
    if n_in < 1 then error("mx.operator.elementwise '" .. name .. "': forward takes no arguments", 2) end
    local inputs = spec.inputs or {}
    if #inputs == 0 then
      for i = 1, n_in do inputs[i] = debug.getlocal(fwd, i) or ('x' .. i) end
    end
    if #inputs ~= n_in then
      error(("mx.operator.elementwise '%s': %d input names for a forward of %d arguments"):format(name, #inputs, n_in), 2)
    end

    local loops = {}
    local function loop(kind, f, n_args, n_res, reqs)
      local key = kind .. table.concat(reqs, ',')
      local l = loops[key]
      if not l then
        local src = gen_loop(n_args, n_res, reqs)
        l = assert(load(src, '=' .. name .. ':' .. kind))(f)
        loops[key] = l
      end
      return l
    end
    local function ptrs(list, n, what)
      local p = {}
      for i = 1, n do
        local a = list[i]
        if not float_types[a.dtype] then
          error(("elementwise op '%s': %s %d is %s; only float32 and float64 are supported"):format(name, what, i, a.dtype), 0)
        end
        p[i] = a:data_ptr()
      end
      return p
    end

    -- GPU arrays: the functions translated to CUDA (elementwise_gpu.lua),
    -- compiled on first use.
    local gpu_run
    local function on_gpu(a) return a.context.device_type == 'gpu' end
    local function gpu(kind, f, ins, outs, req)
      gpu_run = gpu_run or require('tessera.elementwise_gpu').launcher(name)
      gpu_run(kind, f, ins, outs, req)
    end
    local function first(list, n)
      local out = {}
      for i = 1, n do out[i] = list[i] end
      return out
    end

    local Op = CustomOp:extend()
    function Op:forward(_, req, in_data, out_data)
      if req[1] == 'null' then return end
      if on_gpu(out_data[1]) then return gpu('forward', fwd, first(in_data, n_in), {out_data[1]}, req) end
      local x = ptrs(in_data, n_in, 'input')
      x[n_in + 1] = ptrs(out_data, 1, 'output')[1]
      loop('forward', fwd, n_in, 1, req)(numel(out_data[1]), unpack(x, 1, n_in + 1))
    end
    function Op:backward(req, out_grad, in_data, out_data, in_grad)
      if not bwd then error("elementwise op '" .. name .. "' has no backward", 0) end
      if on_gpu(in_grad[1]) then
        local ins = first(in_data, n_in)
        ins[n_in + 1], ins[n_in + 2] = out_data[1], out_grad[1]
        return gpu('backward', bwd, ins, first(in_grad, n_in), req)
      end
      local args = ptrs(in_data, n_in, 'input')
      args[n_in + 1] = ptrs(out_data, 1, 'output')[1]
      args[n_in + 2] = ptrs(out_grad, 1, 'output gradient')[1]
      local g = ptrs(in_grad, n_in, 'gradient')
      for i = 1, n_in do args[n_in + 2 + i] = g[i] end
      loop('backward', bwd, n_in + 2, n_in, req)(numel(in_grad[1]), unpack(args, 1, 2 * n_in + 2))
    end

    local Prop = CustomOpProp:extend()
    function Prop:list_arguments() return inputs end
    function Prop:infer_shape(in_shape)
      local s = in_shape[1]
      for i = 2, n_in do
        local t = in_shape[i]
        if t and #t > 0 and table.concat(t, ',') ~= table.concat(s, ',') then
          error(("input %d has shape (%s), input 1 (%s): elementwise ops take one shape"):format(
            i, table.concat(t, ','), table.concat(s, ',')), 0)
        end
      end
      local ins = {}
      for i = 1, n_in do ins[i] = s end
      return ins, {s}, {}
    end
    function Prop:create_operator() return Op() end
    local doc = spec.doc or ('elementwise op ' .. name .. '(' .. table.concat(inputs, ', ') .. ') written in Lua')
    help.doc(Prop, ('%s (mx.operator.elementwise: a LuaJIT-compiled loop%s)'):format(doc,
      bwd and ', with a gradient' or ', no gradient'))
    M.register(name, Prop)

    mx.nd[name] = help.doc(function(...)
      local args, opts = split_call(...)
      local p = {}
      for k, v in pairs(opts) do p[k] = v end
      p.op_type = name
      return mx.nd.Custom(args, p)
    end, 'mx.nd.' .. name .. ': ' .. doc)
    mx.sym[name] = help.doc(function(...)
      local args, opts = split_call(...)
      local p = {}
      for k, v in pairs(opts) do p[k] = v end
      p.op_type = name
      if #args == 0 then return mx.sym.Custom(p) end
      return mx.sym.Custom(args, p)
    end, 'mx.sym.' .. name .. ': ' .. doc)
    return name
  end, [[
mx.operator.elementwise{name = ..., forward = f, backward = g} -> name.
An elementwise operator whose bodies are Lua functions of numbers, compiled
by LuaJIT into loops over the raw buffers (float32, float64), run on the
interpreter thread; on GPU arrays, translated to CUDA C (lua_to_c) and
compiled by NVRTC on first use (not yet run on a device). forward(x1, ...,
xn) -> y; backward(x1, ..., xn, y, dy)
-> dx1, ..., dxn (optional: without it the op has no gradient). The inputs
are named after forward's parameters. Usable as mx.nd.<name>(x, ...),
mx.sym.<name>(x, ...) and mx.nd.Custom(x, {op_type = name}), under autograd
and in executors.
  mx.operator.elementwise{name = 'softplus',
    forward = function(x) return math.log(1 + math.exp(x)) end,
    backward = function(x, y, dy) return dy / (1 + math.exp(-x)) end}]])

  M.lua_to_c = help.doc(function(f, opts)
    return require('tessera.lua2c').translate(f, opts)
  end, [[
mx.operator.lua_to_c(f, {name = 'fn', results = 1}) -> {source, params, results}.
Translates a Lua function of numbers (arithmetic, comparisons, and/or/not,
if/else, math.* functions and constants, number upvalues read once) into a C
function `void name(double r0, ..., double* y1, ...)`, from its LuaJIT
bytecode, so functions typed at the prompt translate too. The source uses
TS_LUA2C_FN (define it: `static inline`, `__device__ inline`) and the helpers
in require('tessera.lua2c').prelude. What a kernel cannot do (loops, tables,
strings, other globals and calls) is an error naming the function, the line
and the construct. This is the translation GPU elementwise ops are to be
built on (NVRTC); on the CPU, elementwise ops run LuaJIT's own loop.]])

  help.doc(M, [[
mx.operator: operators written in Lua, as MXNet's CustomOp. register(op_type,
Prop) adds one described by a property class; elementwise{name, forward,
backward} makes an elementwise one from Lua functions of numbers.

CustomOpProp holds the defaults of a property (CustomOpProp:extend('Name')
makes a subclass, called to construct) and CustomOp those of an operator (op:assign(dst, req,
src)). A registered operator runs as mx.nd.Custom(x, ..., {op_type =
name}) or mx.sym.Custom{..., op_type = name}; an elementwise one also as
mx.nd.<name> and mx.sym.<name>. load(path) loads C++ operator plugins, and
loaded() lists them. lua_to_c(f) translates a Lua function of numbers to C.]])
end
