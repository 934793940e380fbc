-- mx.gluon.Block, HybridBlock and SymbolBlock (MXNet's gluon/block.py in Lua).
--
-- A Block registers the Blocks and Parameters assigned to its fields, in
-- order; calling it calls forward. A HybridBlock writes hybrid_forward(F,
-- x, ..., params) once for both F = mx.nd (run op by op) and F = mx.sym
-- (traced into a symbol): the trace infers deferred parameter shapes, and
-- after hybridize() the traced graph runs as a CachedOp (bound executors with
-- their memory plan, one per input signature; recorded as one node by
-- autograd, its gradient the executor's backward).
local class = require 'tessera.class'
local help = require 'tessera.help'

local unpack = unpack or table.unpack

return function(mx, P)
  local M = {}
  local Parameter, ParameterDict = P.Parameter, P.ParameterDict
  local isinstance = class.isinstance

  local function pack(...) return { n = select('#', ...), ... } end

  -- ---- names: MXNet's _BlockScope -----------------------------------------
  local scopes = {}          -- blocks whose name_scope is running
  local global_counts = {}   -- hint -> next number, outside any scope

  local function next_name(counts, hint)
    local n = counts[hint] or 0
    counts[hint] = n + 1
    return hint .. n .. '_'
  end

  -- The prefix and parameter dictionary of a new block.
  local function create_scope(hint, prefix, params)
    local cur = scopes[#scopes]
    if not cur then
      prefix = prefix or next_name(global_counts, hint)
      if params then return prefix, ParameterDict(params.prefix, params) end
      return prefix, ParameterDict(prefix)
    end
    prefix = prefix or next_name(cur._counts, hint)
    local full = cur.prefix .. prefix
    if params then return full, ParameterDict(params.prefix, params) end
    return full, ParameterDict(cur.params.prefix .. prefix, cur.params._shared)
  end

  -- ---- Block ---------------------------------------------------------------
  local Block = class.root('Block')
  local HybridBlock

  -- Methods come from the class; children and registered parameters from
  -- _fields; a number n is the n-th child (net[1]).
  Block.__index = function(self, k)
    local v = getmetatable(self)[k]
    if v ~= nil then return v end
    if type(k) == 'number' then
      local c = rawget(self, '_children')
      return c and c[k] and c[k].block
    end
    local f = rawget(self, '_fields')
    return f and f[k]
  end

  -- Assigning a Block or a Parameter to a field registers it (replacing
  -- what the field held); anything else is a plain field.
  Block.__newindex = function(self, k, v)
    if isinstance(v, Block) then
      self:register_child(v, k)
    elseif isinstance(v, Parameter) then
      local f = rawget(self, '_fields')
      if not rawget(self, '_reg_index')[k] then
        local r = rawget(self, '_reg_order')
        r[#r + 1] = k
        rawget(self, '_reg_index')[k] = true
      end
      f[k] = v
    else
      rawset(self, k, v)
    end
  end

  function Block:__init(opts)
    opts = opts or {}
    local cls = getmetatable(self)
    local hint = opts.hint or cls._alias or tostring(rawget(cls, '__name') or 'block'):lower()
    local prefix, params = create_scope(hint, opts.prefix, opts.params)
    rawset(self, 'prefix', prefix)
    rawset(self, '_empty_prefix', opts.prefix == '')
    rawset(self, 'name', prefix:sub(-1) == '_' and prefix:sub(1, -2) or prefix)
    rawset(self, 'params', params)
    rawset(self, '_counts', {})
    rawset(self, '_fields', {})
    rawset(self, '_children', {})     -- {name =, block =}, in order
    rawset(self, '_child_index', {})  -- name -> position
    rawset(self, '_reg_order', {})
    rawset(self, '_reg_index', {})
    rawset(self, '_pre_hooks', {})
    rawset(self, '_hooks', {})
  end

  function Block:register_child(block, name)
    name = name or tostring(#self._children)
    local pos = self._child_index[name]
    if pos then
      self._children[pos].block = block
    else
      self._children[#self._children + 1] = { name = name, block = block }
      self._child_index[name] = #self._children
    end
    self._fields[name] = block
    return block
  end

  -- Runs fn with this block's name scope current: blocks made inside get
  -- names under its prefix (MXNet's `with self.name_scope():`).
  function Block:name_scope(fn)
    -- A block made with prefix '' opens no scope of its own: what it makes
    -- is named in the enclosing scope (MXNet's _BlockScope).
    if self._empty_prefix then return fn() end
    scopes[#scopes + 1] = self
    local ok, err = pcall(fn)
    table.remove(scopes)
    if not ok then error(err, 0) end
  end

  -- The registered parameters: name -> Parameter, and their names in order.
  function Block:_registered()
    local out = {}
    for _, k in ipairs(self._reg_order) do out[k] = self._fields[k] end
    return out, self._reg_order
  end

  function Block:children()
    local out = {}
    for i, c in ipairs(self._children) do out[i] = c.block end
    return out
  end

  function Block:collect_params(select)
    local ret = ParameterDict(self.params.prefix)
    local match = P._matcher(select)
    for name, p in self.params:items() do
      if match(name) then ret:_add(p) end
    end
    for _, c in ipairs(self._children) do ret:update(c.block:collect_params(select)) end
    return ret
  end

  -- Parameters by their place in the tree ('0.weight', 'features.3.bias').
  function Block:_collect_params_with_prefix(prefix, out)
    out = out or {}
    prefix = (prefix and prefix ~= '') and prefix .. '.' or ''
    for _, k in ipairs(self._reg_order) do out[prefix .. k] = self._fields[k] end
    for _, c in ipairs(self._children) do
      c.block:_collect_params_with_prefix(prefix .. c.name, out)
    end
    return out
  end

  local function sorted_keys(t)
    local keys = {}
    for k in pairs(t) do keys[#keys + 1] = k end
    table.sort(keys)
    return keys
  end

  function Block:save_parameters(path)
    local out = {}
    for name, p in pairs(self:_collect_params_with_prefix()) do
      out[name] = p:data():as_in_context(mx.cpu())
    end
    mx.nd.save(path, out, { format = 'mxnet' })
  end

  -- block:load_parameters(path, ctx, allow_missing, ignore_extra) or
  -- block:load_parameters(path, {ctx =, allow_missing =, ignore_extra =}).
  function Block:load_parameters(path, ctx, allow_missing, ignore_extra)
    if type(ctx) == 'table' and not mx.context.is_context(ctx) and #ctx == 0 then
      local o = ctx
      ctx, allow_missing, ignore_extra = o.ctx, o.allow_missing, o.ignore_extra
    end
    local loaded = mx.nd.load(path)
    if #loaded > 0 then error(("load_parameters: '%s' holds unnamed arrays"):format(path), 2) end
    local params = self:_collect_params_with_prefix()
    local structural = false
    for k in pairs(loaded) do structural = structural or k:find('.', 1, true) ~= nil end
    if not structural and next(loaded) ~= nil then
      -- Saved by collect_params():save(), by full names without the prefix.
      return self:collect_params():load(path, ctx, allow_missing, ignore_extra, self.prefix)
    end
    -- Every name is checked before anything is loaded.
    if not allow_missing then
      for _, name in ipairs(sorted_keys(params)) do
        if not loaded[name] then
          error(("load_parameters: parameter '%s' is missing in '%s', which holds %s "
            .. '(allow_missing = true skips it)'):format(name, path,
            table.concat(sorted_keys(loaded), ', ')), 2)
        end
      end
    end
    if not ignore_extra then
      for _, name in ipairs(sorted_keys(loaded)) do
        if not params[name] then
          error(("load_parameters: '%s' holds parameter '%s', which this block does not have "
            .. '(ignore_extra = true skips it)'):format(path, name), 2)
        end
      end
    end
    for _, name in ipairs(sorted_keys(loaded)) do
      local p = params[name]
      if p then
        local ok, err = pcall(p._load_init, p, loaded[name], ctx)
        if not ok then error(("load_parameters: '%s' in '%s': %s"):format(name, path, err), 2) end
      end
    end
  end

  function Block:initialize(init, ctx, verbose, force_reinit)
    self:collect_params():initialize(init, ctx, verbose, force_reinit)
    return self
  end

  function Block:zero_grad() self:collect_params():zero_grad() end
  function Block:reset_ctx(ctx) self:collect_params():reset_ctx(ctx) end

  function Block:cast(dtype)
    for _, c in ipairs(self._children) do c.block:cast(dtype) end
    for _, p in ipairs(self.params:values()) do p:cast(dtype) end
  end

  function Block:apply(fn)
    for _, c in ipairs(self._children) do c.block:apply(fn) end
    fn(self)
    return self
  end

  function Block:hybridize(active, opts)
    for _, c in ipairs(self._children) do c.block:hybridize(active, opts) end
  end

  local function add_hook(list, fn)
    list[#list + 1] = fn
    return { detach = function()
      for i, f in ipairs(list) do if f == fn then table.remove(list, i) return end end
    end }
  end
  function Block:register_forward_pre_hook(fn) return add_hook(self._pre_hooks, fn) end
  function Block:register_forward_hook(fn) return add_hook(self._hooks, fn) end

  function Block:forward()
    error(("%s: the block has no forward method"):format(self.name), 2)
  end

  Block.__call = function(self, ...)
    local pre, post = self._pre_hooks, self._hooks
    if #pre == 0 and #post == 0 then return self:forward(...) end
    local args = pack(...)
    for _, h in ipairs(pre) do h(self, args) end
    local out = pack(self:forward(unpack(args, 1, args.n)))
    for _, h in ipairs(post) do h(self, args, out) end
    return unpack(out, 1, out.n)
  end

  -- The line a block prints as; layers override _repr with their settings.
  function Block:_repr()
    return rawget(getmetatable(self), '__name') or 'Block'
  end

  Block.__tostring = function(self)
    if #self._children == 0 or self._repr ~= Block._repr then return self:_repr() end
    local lines = { (rawget(getmetatable(self), '__name') or 'Block') .. '(' }
    for _, c in ipairs(self._children) do
      local child = tostring(c.block):gsub('\n', '\n  ')
      lines[#lines + 1] = ('  (%s): %s'):format(c.name, child)
    end
    lines[#lines + 1] = ')'
    return table.concat(lines, '\n')
  end

  M.Block = Block

  -- ---- HybridBlock ---------------------------------------------------------
  HybridBlock = Block:extend('HybridBlock')

  function HybridBlock:__init(opts)
    Block.__init(self, opts)
    rawset(self, '_active', false)
    rawset(self, '_graphs', {})   -- by number of inputs: the traced graph and its CachedOp
  end

  function HybridBlock:hybridize(active, opts)
    if type(active) == 'table' then active, opts = true, active end
    rawset(self, '_active', active ~= false)
    rawset(self, '_flags', opts or {})
    self:_clear_cache()
    Block.hybridize(self, active, opts)
  end

  function HybridBlock:_clear_cache()
    rawset(self, '_graphs', {})
  end

  local function is_sym(x) return mx.sym.is_symbol(x) end

  -- hybrid_forward(F, inputs..., params): params by registered name, arrays
  -- on the input's context (F = mx.nd) or variables (F = mx.sym).
  local function call_hybrid(self, F, args, params)
    args[args.n + 1] = params
    return self:hybrid_forward(F, unpack(args, 1, args.n + 1))
  end

  function HybridBlock:hybrid_forward()
    error(("%s: the block has no hybrid_forward method"):format(self.name), 2)
  end

  local function param_vars(self)
    local params = {}
    for k, p in pairs((self:_registered())) do params[k] = p:var() end
    return params
  end

  -- The arrays of the registered parameters on ctx; nil when one waits for
  -- its deferred initialisation.
  local function param_arrays(self, ctx)
    local params = {}
    for k, p in pairs((self:_registered())) do
      if not p:_is_ready() then
        if p:_is_deferred() then return nil end
        p:data(ctx)  -- raises "not initialized"
      end
      params[k] = p:data(ctx)
    end
    return params
  end

  -- The traced graph for `args`: input variables ('data', or 'data0',
  -- 'data1', ... for several), the symbol, and the number of outputs.
  function HybridBlock:_get_graph(args)
    local g = self._graphs[args.n]
    if g then return g end
    local names, inputs = {}, pack(unpack(args, 1, args.n))
    local k = 0
    for i = 1, args.n do
      if mx.nd.is_ndarray(args[i]) then k = k + 1 end
    end
    local j = 0
    for i = 1, args.n do
      if mx.nd.is_ndarray(args[i]) then
        j = j + 1
        names[j] = k == 1 and 'data' or ('data' .. (j - 1))
        inputs[i] = mx.sym.Variable(names[j])
      end
    end
    local out = pack(call_hybrid(self, mx.sym, inputs, param_vars(self)))
    for i = 1, out.n do
      if not is_sym(out[i]) then
        error(("%s: hybrid_forward returned a %s as output %d under mx.sym (outputs must be "
          .. 'symbols when traced)'):format(self.name, type(out[i]), i), 0)
      end
    end
    local sym = out.n == 1 and out[1] or mx.sym.Group({ unpack(out, 1, out.n) })
    g = { names = names, sym = sym, n_out = out.n }
    self._graphs[args.n] = g
    return g
  end

  local function input_shapes(g, args)
    local shapes, j = {}, 0
    for i = 1, args.n do
      if mx.nd.is_ndarray(args[i]) then
        j = j + 1
        shapes[g.names[j]] = args[i].shape
      end
    end
    return shapes
  end

  -- Fills the unknown shapes of every parameter below this block from the
  -- input shapes (through the traced graph), then finishes their deferred
  -- initialisation.
  function HybridBlock:_deferred_infer_shape(args)
    local g = self:_get_graph(args)
    local shapes = input_shapes(g, args)
    local sym = g.sym
    local arg_shapes, _, aux_shapes = sym:infer_shape_partial(shapes)
    local all = self:collect_params()
    local function set(names, list)
      for i, name in ipairs(names) do
        local p = all[name]
        if p and list[i] and #list[i] > 0 then p:_set_shape(list[i]) end
      end
    end
    set(sym:list_arguments(), arg_shapes)
    set(sym:list_auxiliary_states(), aux_shapes)
    for _, p in ipairs(all:values()) do
      if p:_is_deferred() then p:_finish_deferred_init() end
    end
  end

  function HybridBlock:infer_shape(...)
    self:_deferred_infer_shape(pack(...))
  end

  local function first_ctx(args)
    for i = 1, args.n do
      if mx.nd.is_ndarray(args[i]) then return args[i].ctx end
    end
    return mx.cpu()
  end

  local function ensure_params(self, args)
    for _, p in ipairs(self:collect_params():values()) do
      if p:_is_deferred() then return self:_deferred_infer_shape(args) end
    end
  end

  -- The graph's CachedOp (engine/autograd/cached_op.h): bound once per
  -- input signature, recorded as one node under mx.autograd.record.
  local function cached_op(g)
    if not g.cop then
      g.cop = mx.autograd._cached_op(g.sym, g.names)
      g.input_names = g.cop:input_names()
    end
    return g.cop
  end

  -- A hybridized call: the inputs and the parameters' arrays, by the
  -- graph's input names, through the CachedOp.
  local function call_cached(self, args)
    local g = self:_get_graph(args)
    ensure_params(self, args)
    local cop = cached_op(g)
    local ctx, by_name, j = first_ctx(args), {}, 0
    for i = 1, args.n do
      if mx.nd.is_ndarray(args[i]) then
        j = j + 1
        by_name[g.names[j]] = args[i]
      end
    end
    local all = self:collect_params()
    local list = {}
    for i, name in ipairs(g.input_names) do
      local a = by_name[name]
      if not a then
        local p = all[name]
        if not p then
          error(("%s: the traced graph reads '%s', which is neither an input nor a parameter of "
            .. 'the block'):format(self.name, name), 0)
        end
        a = p:data(ctx)
      end
      list[i] = a
    end
    local outs = cop:forward(list)
    return unpack(outs, 1, #outs)
  end

  -- Executors bound by the block's graphs (for tests and reports).
  function HybridBlock:_num_executors()
    local n = 0
    for _, g in pairs(self._graphs) do
      if g.cop then n = n + g.cop:num_executors() end
    end
    return n
  end

  function HybridBlock:forward(...)
    local args = pack(...)
    local x = args[1]
    if is_sym(x) then return call_hybrid(self, mx.sym, args, param_vars(self)) end
    if not mx.nd.is_ndarray(x) then
      error(("%s: the first input must be an NDArray or a Symbol, got %s"):format(self.name,
        type(x)), 2)
    end
    if self._active then return call_cached(self, args) end
    local params = param_arrays(self, x.ctx)
    if not params then
      self:_deferred_infer_shape(args)
      params = param_arrays(self, x.ctx)
    end
    return call_hybrid(self, mx.nd, args, params)
  end

  -- Writes path-symbol.json and path-EEEE.params (arg:/aux: names), as
  -- MXNet's export, from the graph of the last hybridized call.
  function HybridBlock:export(path, epoch)
    local g = self._graphs[1]
    if not g then
      for _, v in pairs(self._graphs) do g = v break end
    end
    if not g then
      error(('%s: export needs the traced graph: call hybridize() and run the block once '
        .. 'first'):format(self.name), 2)
    end
    local sym = g.sym
    local all = self:collect_params()
    local arrays = {}
    local inputs = {}
    for _, n in ipairs(g.names) do inputs[n] = true end
    for _, name in ipairs(sym:list_arguments()) do
      if not inputs[name] then arrays['arg:' .. name] = all[name]:data():as_in_context(mx.cpu()) end
    end
    for _, name in ipairs(sym:list_auxiliary_states()) do
      arrays['aux:' .. name] = all[name]:data():as_in_context(mx.cpu())
    end
    local sym_file = path .. '-symbol.json'
    local params_file = ('%s-%04d.params'):format(path, epoch or 0)
    sym:save(sym_file)
    mx.nd.save(params_file, arrays, { format = 'mxnet' })
    return sym_file, params_file
  end

  M.HybridBlock = HybridBlock

  -- ---- SymbolBlock ---------------------------------------------------------
  local SymbolBlock = HybridBlock:extend('SymbolBlock')

  -- SymbolBlock(outputs, inputs, params): a block running a symbol; its
  -- arguments other than the inputs (and its auxiliary states) become
  -- parameters named as in the symbol.
  function SymbolBlock:__init(outputs, inputs, params)
    HybridBlock.__init(self, { prefix = '', params = params })
    if type(outputs) == 'table' and not is_sym(outputs) then outputs = mx.sym.Group(outputs) end
    if is_sym(inputs) then inputs = { inputs } end
    if not is_sym(outputs) then error('SymbolBlock: outputs must be a symbol or a list of them', 2) end
    local names, is_input = {}, {}
    for i, v in ipairs(inputs or {}) do
      if not is_sym(v) then error('SymbolBlock: inputs must be variables (symbols)', 2) end
      names[i] = v:list_outputs()[1]
      is_input[names[i]] = true
    end
    local args = {}
    for _, a in ipairs(outputs:list_arguments()) do args[a] = true end
    for _, n in ipairs(names) do
      if not args[n] then
        error(("SymbolBlock: input '%s' is not an argument of the symbol"):format(n), 2)
      end
    end
    for _, a in ipairs(outputs:list_arguments()) do
      if not is_input[a] then self.params:get(a, { allow_deferred_init = true }) end
    end
    for _, a in ipairs(outputs:list_auxiliary_states()) do
      self.params:get(a, { allow_deferred_init = true, grad_req = 'null' })
    end
    rawset(self, '_sym', outputs)
    rawset(self, '_input_names', names)
    rawset(self, '_active', true)
  end

  function SymbolBlock:_get_graph(args)
    local g = self._graphs[args.n]
    if g then return g end
    local k = 0
    for i = 1, args.n do if mx.nd.is_ndarray(args[i]) then k = k + 1 end end
    if k ~= #self._input_names then
      error(('SymbolBlock: called with %d arrays, the block takes %d (%s)'):format(k,
        #self._input_names, table.concat(self._input_names, ', ')), 0)
    end
    g = { names = self._input_names, sym = self._sym, n_out = #self._sym:list_outputs() }
    self._graphs[args.n] = g
    return g
  end

  function SymbolBlock:hybridize() end  -- always runs its graph

  function SymbolBlock:forward(...)
    local args = pack(...)
    if is_sym(args[1]) then
      error('SymbolBlock: calling it on symbols is not supported; use its symbol, block._sym', 2)
    end
    return call_cached(self, args)
  end

  -- SymbolBlock.imports(symbol_file, input_names, param_file, ctx).
  function SymbolBlock.imports(symbol_file, input_names, param_file, ctx)
    local sym = mx.sym.load(symbol_file)
    if type(input_names) == 'string' then input_names = { input_names } end
    local inputs = {}
    for i, n in ipairs(input_names) do inputs[i] = mx.sym.Variable(n) end
    local block = SymbolBlock(sym, inputs)
    if param_file then block.params:load(param_file, ctx, false, false) end
    return block
  end

  M.SymbolBlock = SymbolBlock

  help.doc(Block, [[
mx.gluon.Block: the base of layers and models. Assigning a Block or a
Parameter to a field registers it (self.fc = nn.Dense(10)); calling the
block calls forward(...). Methods: collect_params(pattern),
initialize(init, ctx), save_parameters(path), load_parameters(path, ctx),
hybridize(), cast(dtype), zero_grad(), reset_ctx(ctx), apply(fn),
name_scope(fn), register_child(block, name), children(),
register_forward_hook(fn), register_forward_pre_hook(fn); fields name,
prefix, params; net[i] is the i-th child.
  local Net = mx.gluon.Block:extend('Net')
  function Net:__init() mx.gluon.Block.__init(self); self.fc = mx.gluon.nn.Dense(10) end
  function Net:forward(x) return self.fc(x) end]])
  help.doc(HybridBlock, [[
mx.gluon.HybridBlock: a Block written once as hybrid_forward(F, x, ...,
params) for F = mx.nd and F = mx.sym; params holds the registered
parameters by field name (arrays, or variables when traced). Parameters of
unknown shape are inferred at the first call from the traced graph.
hybridize() makes later calls outside mx.autograd.record run the traced
graph through a bound executor (one per input shape and context); under
record the block runs op by op, recorded for backward. export(path, epoch)
writes path-symbol.json and path-EEEE.params as MXNet's export.]])
  help.doc(SymbolBlock, [[
mx.gluon.SymbolBlock(outputs, inputs, params): a block running a symbol, its
arguments besides the inputs as parameters. SymbolBlock.imports(json,
{'data'}, params_file, ctx) loads an MXNet export (HybridBlock.export or a
Module checkpoint).]])
  return M
end
