-- mx.gluon.Parameter and ParameterDict (MXNet's gluon/parameter.py in Lua).
--
-- A Parameter holds one array per context it was initialised on, each with
-- a gradient buffer (attach_grad) unless grad_req is 'null'. A shape with
-- unknown dimensions (0) defers the initialisation to the first forward,
-- where the block infers the shape from its input. _version counts the
-- times the arrays were replaced (not written): a bound graph holding them
-- is stale once it moves.
local class = require 'tessera.class'

local unpack = unpack or table.unpack

return function(mx)
  local M = {}

  local function shape_text(s)
    if not s then return 'None' end
    return '(' .. table.concat(s, ', ') .. ')'
  end

  local function shape_known(s)
    if not s or #s == 0 then return false end
    for _, d in ipairs(s) do if d <= 0 then return false end end
    return true
  end

  local function copy_list(t)
    if not t then return nil end
    local c = {}
    for i, v in ipairs(t) do c[i] = v end
    return c
  end

  -- f(a, b, ...) or f{a =, b =, ...}: a plain first argument (a table with
  -- no metatable, so no initializer or context) holds them all by name;
  -- `names` are their positions.
  local function args_or_table(names, first, ...)
    if type(first) ~= 'table' or getmetatable(first) ~= nil then return first, ... end
    local args = {}
    for i, name in ipairs(names) do args[i] = first[name] end
    return unpack(args, 1, #names)
  end

  local function ctx_list(ctx)
    if ctx == nil then return { mx.cpu() } end
    if type(ctx) == 'table' and not mx.context.is_context(ctx) then
      if #ctx == 0 then error('initialize: ctx is an empty list', 3) end
      return copy_list(ctx)
    end
    return { ctx }
  end

  -- Initialisers by MXNet's names ('zeros', 'xavier', ...), or objects as given.
  local function make_init(init)
    if type(init) ~= 'string' then return init end
    local makers = {
      zeros = function() return mx.init.Zero() end, ones = function() return mx.init.One() end,
      xavier = function() return mx.init.Xavier() end, uniform = function() return mx.init.Uniform() end,
      normal = function() return mx.init.Normal() end,
    }
    local f = makers[init:lower()]
    if not f then
      error("initializer '" .. init .. "' is not known (zeros, ones, xavier, uniform, normal, "
        .. 'or an mx.init object)', 4)
    end
    return f()
  end

  local function req_ok(req)
    return req == 'write' or req == 'add' or req == 'null'
  end

  -- ---- Parameter ---------------------------------------------------------
  local Parameter = class.root('Parameter')
  -- grad_req is a property: setting it re-attaches the gradient buffers.
  Parameter.__index = function(self, k)
    if k == 'grad_req' then return rawget(self, '_grad_req') end
    return Parameter[k]
  end
  Parameter.__newindex = function(self, k, v)
    if k == 'grad_req' then return self:set_grad_req(v) end
    rawset(self, k, v)
  end

  function Parameter:__init(name, opts)
    opts = opts or {}
    if type(name) ~= 'string' or name == '' then
      error('Parameter: the name must be a non-empty string', 3)
    end
    rawset(self, 'name', name)
    self.shape = copy_list(opts.shape)
    self.dtype = opts.dtype or 'float32'
    self.init = opts.init
    self.lr_mult = opts.lr_mult or 1
    self.wd_mult = opts.wd_mult or 1
    self.allow_deferred_init = opts.allow_deferred_init or false
    self.differentiable = opts.differentiable ~= false
    local req = opts.grad_req or 'write'
    if not req_ok(req) then
      error(("Parameter '%s': grad_req must be 'write', 'add' or 'null', not '%s'"):format(name,
        tostring(req)), 3)
    end
    rawset(self, '_grad_req', self.differentiable and req or 'null')
    self._version = 0
  end

  function Parameter:__tostring()
    return ('Parameter %s (shape=%s, dtype=%s)'):format(self.name, shape_text(self.shape), self.dtype)
  end

  local function not_ready(self)
    if self._deferred then
      return ("Parameter '%s' has not been initialized yet because initialization was deferred: "
        .. 'it happens at the first forward, once its shape %s is known from the input'):format(
        self.name, shape_text(self.shape))
    end
    return ("Parameter '%s' has not been initialized: call block:initialize() or "
      .. 'param:initialize() first'):format(self.name)
  end

  local function attach(self, arr)
    if self._grad_req ~= 'null' then arr:attach_grad(self._grad_req) end
    return arr
  end

  -- Fills the arrays: `data` when given (a load), else the initialiser. The
  -- parameter's own init wins and is applied as a weight rule; otherwise
  -- default_init chooses by the name's ending (mx.init's rules).
  local function init_impl(self, init, ctxs, default_init, data)
    local first = mx.nd.zeros(self.shape, { dtype = self.dtype, ctx = mx.cpu() })
    if data then
      if table.concat(data.shape, ',') ~= table.concat(self.shape, ',') then
        error(("Parameter '%s': shape %s given, the parameter's is %s"):format(self.name,
          shape_text(data.shape), shape_text(self.shape)), 0)
      end
      data:copyto(first)
    else
      local own = make_init(init or self.init)
      if own then
        if own.init_weight then own:init_weight(self.name, first) else own(self.name, first) end
      else
        make_init(default_init or mx.init.Uniform())(self.name, first)
      end
    end
    local arrays = {}
    for i, ctx in ipairs(ctxs) do
      arrays[i] = attach(self, (i == 1 and ctx == first.ctx) and first or first:copyto(ctx))
    end
    self._data, self._ctx = arrays, ctxs
    self._deferred = nil
    self._version = self._version + 1
  end

  -- p:initialize(init, ctx, default_init, force_reinit) or p:initialize{...}.
  function Parameter:initialize(...)
    local init, ctx, default_init, force_reinit =
      args_or_table({ 'init', 'ctx', 'default_init', 'force_reinit' }, ...)
    if self._data and not force_reinit then
      io.stderr:write(("warning: Parameter '%s' is already initialized, ignoring; "
        .. 'set force_reinit = true to re-initialize\n'):format(self.name))
      return
    end
    local ctxs = ctx_list(ctx)
    self._data = nil
    if not shape_known(self.shape) then
      if not self.allow_deferred_init then
        error(("Parameter '%s': cannot initialize it, its shape %s is not known"):format(self.name,
          shape_text(self.shape)), 2)
      end
      self._deferred = { init = init, ctx = ctxs, default_init = default_init }
      return
    end
    init_impl(self, init, ctxs, default_init)
  end

  -- The deferred initialisation, once the shape is known.
  function Parameter:_finish_deferred_init()
    local d = self._deferred
    if not d then return end
    if not shape_known(self.shape) then
      error(("Parameter '%s': its shape %s is still unknown at the first forward"):format(self.name,
        shape_text(self.shape)), 0)
    end
    init_impl(self, d.init, d.ctx, d.default_init, d.data)
  end

  -- Merges an inferred shape into a partly known one (0 = unknown).
  function Parameter:_set_shape(shape)
    local s = self.shape
    if s and #s > 0 then
      local ok = #s == #shape
      for i = 1, #s do ok = ok and (s[i] == 0 or s[i] == shape[i]) end
      if not ok then
        error(("Parameter '%s': inferred shape %s does not match its declared shape %s"):format(
          self.name, shape_text(shape), shape_text(s)), 0)
      end
    end
    self.shape = copy_list(shape)
  end

  function Parameter:_is_ready() return self._data ~= nil end
  function Parameter:_is_deferred() return self._deferred ~= nil end

  local function pick(self, list, ctx, what)
    if not self._data then error(not_ready(self), 3) end
    if ctx == nil then return list[1] end
    for i, c in ipairs(self._ctx) do
      if c == ctx then return list[i] end
    end
    local have = {}
    for i, c in ipairs(self._ctx) do have[i] = tostring(c) end
    error(("Parameter '%s': its %s is not on %s (it is on %s)"):format(self.name, what,
      tostring(ctx), table.concat(have, ', ')), 3)
  end

  function Parameter:data(ctx) return pick(self, self._data or {}, ctx, 'data') end
  function Parameter:list_data()
    if not self._data then error(not_ready(self), 2) end
    return copy_list(self._data)
  end
  function Parameter:list_ctx()
    if self._deferred then return copy_list(self._deferred.ctx) end
    if not self._data then error(not_ready(self), 2) end
    return copy_list(self._ctx)
  end

  local function grads(self)
    if self._grad_req == 'null' then
      error(("Parameter '%s' has no gradient: its grad_req is 'null'"):format(self.name), 3)
    end
    if not self._data then error(not_ready(self), 3) end
    local g = {}
    for i, a in ipairs(self._data) do g[i] = a.grad end
    return g
  end
  function Parameter:grad(ctx)
    local g = grads(self)
    return pick(self, g, ctx, 'gradient')
  end
  function Parameter:list_grad() return grads(self) end

  function Parameter:zero_grad()
    if self._grad_req == 'null' or not self._data then return end
    for _, a in ipairs(self._data) do
      local g = a.grad
      mx.nd.full(g.shape, 0, { dtype = g.dtype, ctx = g.ctx, out = g })
    end
  end

  -- Copies `arr` into the arrays on every context (their shape must match).
  function Parameter:set_data(arr)
    if not self._data then
      if self._deferred then
        self:_set_shape(arr.shape)
        self._deferred.data = arr
        return
      end
      error(not_ready(self), 2)
    end
    for _, d in ipairs(self._data) do
      if table.concat(d.shape, ',') ~= table.concat(arr.shape, ',') then
        error(("Parameter '%s': set_data of shape %s, the parameter's is %s"):format(self.name,
          shape_text(arr.shape), shape_text(d.shape)), 2)
      end
      local src = arr.dtype == d.dtype and arr or arr:astype(d.dtype)
      src:copyto(d)
    end
  end

  -- Loads a value: into the arrays, or initialises with it on ctx.
  function Parameter:_load_init(arr, ctx)
    if self._data then return self:set_data(arr) end
    if self.shape and #self.shape > 0 then self:_set_shape(arr.shape) else self.shape = copy_list(arr.shape) end
    local ctxs = ctx_list(ctx or (self._deferred and self._deferred.ctx))
    init_impl(self, nil, ctxs, nil, arr)
  end

  function Parameter:set_grad_req(req)
    if not req_ok(req) then
      error(("Parameter '%s': grad_req must be 'write', 'add' or 'null', not '%s'"):format(self.name,
        tostring(req)), 2)
    end
    if not self.differentiable then req = 'null' end
    if req == self._grad_req then return end
    rawset(self, '_grad_req', req)
    if self._data then
      for _, a in ipairs(self._data) do a:attach_grad(req) end
    end
  end

  -- Moves the arrays to other contexts (values kept).
  function Parameter:reset_ctx(ctx)
    local ctxs = ctx_list(ctx)
    if self._deferred then self._deferred.ctx = ctxs; return end
    if not self._data then error(not_ready(self), 2) end
    local src = self._data[1]
    local arrays = {}
    for i, c in ipairs(ctxs) do arrays[i] = attach(self, src:copyto(c)) end
    self._data, self._ctx = arrays, ctxs
    self._version = self._version + 1
  end

  function Parameter:cast(dtype)
    self.dtype = dtype
    if not self._data then return end
    for i, a in ipairs(self._data) do self._data[i] = attach(self, a:astype(dtype)) end
    self._version = self._version + 1
  end

  -- The symbol standing for the parameter in a traced graph.
  function Parameter:var()
    if not self._var then
      local opts = { dtype = self.dtype, lr_mult = self.lr_mult, wd_mult = self.wd_mult }
      if self.shape and #self.shape > 0 then opts.shape = self.shape end
      self._var = mx.sym.Variable(self.name, opts)
    end
    return self._var
  end

  M.Parameter = Parameter

  -- A parameter that is not learned: its value fixed, grad_req 'null'.
  function M.Constant(name, value)
    if not mx.nd.is_ndarray(value) then value = mx.nd.array(value) end
    local p = Parameter(name, { shape = value.shape, dtype = value.dtype, grad_req = 'null',
      differentiable = false })
    p.init = setmetatable({}, { __call = function(_, _, arr) value:copyto(arr) end })
    return p
  end

  -- ---- ParameterDict -----------------------------------------------------
  local ParameterDict = class.root('ParameterDict')
  -- pd['dense0_weight'] reads a parameter by its full name.
  ParameterDict.__index = function(self, k)
    local m = ParameterDict[k]
    if m ~= nil then return m end
    local p = rawget(self, '_params')
    return p and p[k]
  end

  function ParameterDict:__init(prefix, shared)
    rawset(self, 'prefix', prefix or '')
    rawset(self, '_params', {})
    rawset(self, '_order', {})
    rawset(self, '_shared', shared)
  end

  function ParameterDict:__tostring()
    local lines = { 'ParameterDict ' .. (self.prefix ~= '' and self.prefix or '') .. '(' }
    for _, name in ipairs(self._order) do lines[#lines + 1] = '  ' .. tostring(self._params[name]) end
    lines[#lines + 1] = ')'
    return table.concat(lines, '\n')
  end

  function ParameterDict:_add(p)
    if not self._params[p.name] then self._order[#self._order + 1] = p.name end
    self._params[p.name] = p
  end

  local function lookup(self, name)
    local p = self._params[name]
    if p then return p end
    local shared = self._shared
    if shared then
      p = shared._params[name]
      if p then self:_add(p) end
    end
    return p
  end

  -- The parameter prefix..name, its full name, and whether it was there
  -- already (here or in the shared dictionary); when not, it is made by
  -- make(full, arg) and added.
  local function find_or_make(self, name, make, arg)
    local full = self.prefix .. name
    local p = lookup(self, full)
    if p then return p, full, true end
    p = make(full, arg)
    self:_add(p)
    return p, full, false
  end

  -- The parameter prefix..name, made with opts when there is none yet (a
  -- shared dictionary is searched first); an existing one must agree with
  -- the shape and dtype asked for.
  function ParameterDict:get(name, opts)
    local p, full, found = find_or_make(self, name, Parameter, opts)
    if not found then return p end
    opts = opts or {}
    if opts.shape and p.shape then
      local s, q = opts.shape, p.shape
      local ok = #s == #q
      for i = 1, math.min(#s, #q) do ok = ok and (s[i] == 0 or q[i] == 0 or s[i] == q[i]) end
      if not ok then
        error(("ParameterDict.get: parameter '%s' exists with shape %s, asked for %s"):format(full,
          shape_text(q), shape_text(s)), 2)
      end
      local merged = {}
      for i = 1, #s do merged[i] = s[i] ~= 0 and s[i] or q[i] end
      p.shape = merged
    elseif opts.shape then
      p.shape = copy_list(opts.shape)
    end
    for k, v in pairs(opts) do
      if k ~= 'shape' and k ~= 'init' and p[k] ~= nil and p[k] ~= v and k ~= 'allow_deferred_init' then
        if k == 'grad_req' then p:set_grad_req(v) else p[k] = v end
      end
    end
    return p
  end

  -- get_constant's maker: a new constant needs its value. The error names
  -- get_constant's caller (three levels up, through find_or_make).
  local function new_constant(full, value)
    if value == nil then error(("get_constant: no constant '%s' and no value given"):format(full), 4) end
    return M.Constant(full, value)
  end

  function ParameterDict:get_constant(name, value)
    return (find_or_make(self, name, new_constant, value))
  end

  function ParameterDict:update(other)
    for _, name in ipairs(other._order) do
      local p = other._params[name]
      local mine = self._params[name]
      if mine and mine ~= p then
        error(("ParameterDict.update: two different parameters named '%s'"):format(name), 2)
      end
      self:_add(p)
    end
  end

  -- for name, p in pd:items() do ... end, in the order they were added.
  function ParameterDict:items()
    local i = 0
    return function()
      i = i + 1
      local name = self._order[i]
      if name then return name, self._params[name] end
    end
  end
  function ParameterDict:keys() return copy_list(self._order) end
  function ParameterDict:values()
    local v = {}
    for i, name in ipairs(self._order) do v[i] = self._params[name] end
    return v
  end
  function ParameterDict:size() return #self._order end

  -- A pattern as MXNet's regular expressions are usually written: '|'
  -- separates alternatives, each a Lua pattern matched from the start.
  function M._matcher(select)
    if select == nil then return function() return true end end
    local alts = {}
    for part in (select .. '|'):gmatch('([^|]*)|') do alts[#alts + 1] = '^' .. part end
    return function(name)
      for _, p in ipairs(alts) do if name:find(p) then return true end end
      return false
    end
  end

  function ParameterDict:select(pattern)
    local out = ParameterDict(self.prefix)
    local match = M._matcher(pattern)
    for _, name in ipairs(self._order) do
      if match(name) then out:_add(self._params[name]) end
    end
    return out
  end

  -- pd:initialize(init, ctx, verbose, force_reinit) or pd:initialize{...}.
  function ParameterDict:initialize(...)
    local init, ctx, verbose, force_reinit =
      args_or_table({ 'init', 'ctx', 'verbose', 'force_reinit' }, ...)
    init = make_init(init) or mx.init.Uniform()
    for _, p in ipairs(self:values()) do
      if verbose then io.write('initializing ', p.name, '\n') end
      p:initialize(nil, ctx, init, force_reinit)
    end
  end

  function ParameterDict:zero_grad()
    for _, p in ipairs(self:values()) do p:zero_grad() end
  end
  function ParameterDict:reset_ctx(ctx)
    for _, p in ipairs(self:values()) do p:reset_ctx(ctx) end
  end
  function ParameterDict:cast(dtype)
    for _, p in ipairs(self:values()) do p:cast(dtype) end
  end
  -- pd:setattr('grad_req', 'null'), pd:setattr('lr_mult', 0.1), ...
  function ParameterDict:setattr(name, value)
    for _, p in ipairs(self:values()) do
      if name == 'grad_req' then p:set_grad_req(value) else p[name] = value end
    end
  end

  -- Saves the values by full name, strip_prefix taken off (MXNet's .params).
  function ParameterDict:save(path, strip_prefix)
    strip_prefix = strip_prefix or ''
    local out = {}
    for _, name in ipairs(self._order) do
      local p = self._params[name]
      if name:sub(1, #strip_prefix) ~= strip_prefix then
        error(("ParameterDict.save: prefix '%s' is not a prefix of parameter '%s'"):format(
          strip_prefix, name), 2)
      end
      out[name:sub(#strip_prefix + 1)] = p:data():as_in_context(mx.cpu())
    end
    mx.nd.save(path, out, { format = 'mxnet' })
  end

  -- Loads values saved by name (restore_prefix added; MXNet's 'arg:' and
  -- 'aux:' markers dropped).
  function ParameterDict:load(path, ctx, allow_missing, ignore_extra, restore_prefix)
    if type(ctx) == 'table' and not mx.context.is_context(ctx) and #ctx == 0 then
      local o = ctx
      ctx, allow_missing, ignore_extra, restore_prefix = o.ctx, o.allow_missing, o.ignore_extra,
        o.restore_prefix
    end
    restore_prefix = restore_prefix or ''
    local loaded = mx.nd.load(path)
    if #loaded > 0 then error(("ParameterDict.load: '%s' holds unnamed arrays"):format(path), 2) end
    local values = {}
    for k, v in pairs(loaded) do
      local name = k:match('^arg:(.*)$') or k:match('^aux:(.*)$') or k
      values[restore_prefix .. name] = v
    end
    if not allow_missing then
      for _, name in ipairs(self._order) do
        if not values[name] then
          error(("ParameterDict.load: parameter '%s' is missing in '%s' (allow_missing = true "
            .. 'skips it)'):format(name, path), 2)
        end
      end
    end
    for name, v in pairs(values) do
      local p = self._params[name]
      if p then
        p:_load_init(v, ctx)
      elseif not ignore_extra then
        error(("ParameterDict.load: '%s' holds '%s', which is not in this dictionary "
          .. '(ignore_extra = true skips it)'):format(path, name), 2)
      end
    end
  end

  M.ParameterDict = ParameterDict
  return M
end
