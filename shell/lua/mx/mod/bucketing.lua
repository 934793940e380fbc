-- mx.mod.BucketingModule: one network at several input lengths (buckets),
-- as MXNet's. sym_gen(key) returns the symbol for a bucket (and its data
-- and label names); each bucket gets a Module bound with the default
-- bucket's as shared_module: the same parameter, gradient and auxiliary
-- arrays, and internal storage taken from the default bucket's executor
-- where big enough. Make the default bucket the largest, so the others fit
-- in its memory (MXNet's advice; see memory_report).
local help = require 'tessera.help'

return function(mx, M)
  local Module = M.Module
  local BM = {}
  BM.__index = BM

  local function key_text(k) return tostring(k) end

  function BM.new(sym_gen, opts)
    if type(sym_gen) == 'table' and opts == nil then sym_gen, opts = sym_gen.sym_gen, sym_gen end
    opts = opts or {}
    if type(sym_gen) ~= 'function' then
      error('BucketingModule: sym_gen must be a function (bucket key -> symbol, data names, '
        .. 'label names)', 2)
    end
    if opts.default_bucket_key == nil then error('BucketingModule: default_bucket_key is required', 2) end
    local self = setmetatable({}, BM)
    self._sym_gen, self._default_key, self._opts = sym_gen, opts.default_bucket_key, opts
    self._buckets, self._order = {}, {}
    self.binded, self.params_initialized, self.optimizer_initialized = false, false, false
    self.symbol, self.data_names, self.label_names = self:_gen(self._default_key)
    return self
  end
  setmetatable(BM, { __call = function(_, ...) return BM.new(...) end })

  function BM:_gen(key)
    local sym, data_names, label_names = self._sym_gen(key)
    if not mx.sym.is_symbol(sym) then
      error(('BucketingModule: sym_gen(%s) did not return a Symbol'):format(key_text(key)), 3)
    end
    return sym, data_names or { 'data' }, label_names or { 'softmax_label' }
  end

  function BM:_module(key)
    local sym, dn, ln = self:_gen(key)
    local o = self._opts
    return Module(sym, { data_names = dn, label_names = ln, context = o.context,
      work_load_list = o.work_load_list, fixed_param_names = o.fixed_param_names })
  end

  function BM:bind(opts)
    opts = opts or {}
    if self.binded and not opts.force_rebind then return end
    local m = self:_module(self._default_key)
    m:bind(opts)
    self._buckets, self._order = { [self._default_key] = m }, { self._default_key }
    self._default, self._curr, self._curr_key = m, m, self._default_key
    self._bind_opts = opts
    self.binded, self.for_training = true, m.for_training
    self.param_names, self.aux_names = m.param_names, m.aux_names
    self.data_shapes, self.label_shapes = m.data_shapes, m.label_shapes
    self.execs, self.exec, self.contexts = m.execs, m.exec, m.contexts
  end

  -- Makes `key` the current bucket, binding its module on first use.
  function BM:switch_bucket(key, data_shapes, label_shapes)
    if not self.binded then error('switch_bucket: call bind first', 2) end
    local m = self._buckets[key]
    if not m then
      m = self:_module(key)
      local d = self._default
      -- The default bucket's parameters in its order, so the optimizer's
      -- indices and states mean the same parameters in every bucket.
      local mine = {}
      for _, n in ipairs(m.param_names) do mine[n] = true end
      for _, n in ipairs(d.param_names) do
        if not mine[n] then
          error(("BucketingModule: bucket %s's network lacks parameter '%s' of the default "
            .. 'bucket'):format(key_text(key), n), 2)
        end
        mine[n] = nil
      end
      local extra = next(mine)
      if extra then
        error(("BucketingModule: bucket %s's network has parameter '%s', which the default "
          .. 'bucket lacks'):format(key_text(key), extra), 2)
      end
      m.param_names = d.param_names
      local b = self._bind_opts
      m:bind { data_shapes = data_shapes, label_shapes = label_shapes,
        for_training = b.for_training, inputs_need_grad = b.inputs_need_grad,
        grad_req = b.grad_req, shared_module = d }
      if self.optimizer_initialized then self:_borrow_optimizer(m) end
      self._buckets[key] = m
      self._order[#self._order + 1] = key
    end
    self._curr, self._curr_key = m, key
    self.exec, self.execs = m.exec, m.execs
  end

  function BM:_borrow_optimizer(m)
    local d = self._default
    m.optimizer, m.opt_states, m.kvstore = d.optimizer, d.opt_states, d.kvstore
    m._kv_keys, m._update_on_kv = d._kv_keys, d._update_on_kv
    m.optimizer_initialized = true
  end

  function BM:init_params(opts)
    if not self.binded then error('init_params: call bind first', 2) end
    self._default:init_params(opts)
    for _, m in pairs(self._buckets) do m.params_initialized = true end
    self.params_initialized = true
  end

  function BM:init_optimizer(opts)
    if not self.params_initialized then error('init_optimizer: call init_params first', 2) end
    self._default:init_optimizer(opts)
    for _, m in pairs(self._buckets) do
      if m ~= self._default then self:_borrow_optimizer(m) end
    end
    self.optimizer, self.kvstore = self._default.optimizer, self._default.kvstore
    self.optimizer_initialized = true
  end

  -- The batch's bucket_key chooses the bucket (the default without one).
  function BM:forward(batch, is_train)
    local key = batch.bucket_key
    if key == nil then key = self._default_key end
    self:switch_bucket(key, batch.provide_data, batch.provide_label)
    return self._curr:forward(batch, is_train)
  end
  function BM:backward(out_grads) return self._curr:backward(out_grads) end
  function BM:update() return self._curr:update() end
  function BM:get_outputs() return self._curr:get_outputs() end
  function BM:update_metric(...) return self._curr:update_metric(...) end
  function BM:get_params() return self._default:get_params() end
  function BM:set_params(...) return self._default:set_params(...) end
  function BM:_next_batch(data) return self._default:_next_batch(data) end
  function BM:install_monitor(mon)
    for _, key in ipairs(self._order) do self._buckets[key]:install_monitor(mon) end
  end
  -- The default bucket's symbol and the shared parameters.
  function BM:save_checkpoint(prefix, epoch) return self._default:save_checkpoint(prefix, epoch) end
  BM.fit, BM.score, BM.predict = Module.fit, Module.score, Module.predict

  function BM:bucket_keys()
    local keys = {}
    for i, k in ipairs(self._order) do keys[i] = k end
    return keys
  end

  -- Per bucket (in the order they were bound): the internal storage its
  -- executors plan (what a module of its own would allocate), and how much
  -- the bucket added to the default bucket's (memory not taken from it).
  -- Returns the rows and the total the buckets hold together.
  function BM:memory_report()
    local rows, total = {}, 0
    for _, key in ipairs(self._order) do
      local m = self._buckets[key]
      local planned, added = 0, 0
      for i, exe in ipairs(m.execs) do
        local _, own = exe._handle:storage_bytes(m ~= self._default and
          self._default.execs[i]._handle or nil)
        planned, added = planned + exe:memory_bytes(), added + own
      end
      rows[#rows + 1] = { key = key, planned = planned, added = added }
      total = total + added
    end
    return rows, total
  end

  help.doc(BM, [[
mx.mod.BucketingModule(sym_gen, {default_bucket_key =, context =,
  work_load_list =, fixed_param_names =}) or BucketingModule{sym_gen =, ...}:
sym_gen(key) -> symbol, data_names, label_names. One Module per bucket,
bound on first use (a batch's bucket_key chooses it) with the default
bucket's parameters and its executor's memory where big enough: make the
default bucket the largest. The Module methods (bind, init_params,
init_optimizer, forward, backward, update, update_metric, get_outputs,
fit, score, predict, get_params, set_params, save_checkpoint) act on the
current bucket or the shared parameters; switch_bucket(key, data_shapes,
label_shapes); bucket_keys(); memory_report() -> {{key =, planned =, added =}},
the bytes the buckets hold together (the default bucket's included).]])
  return BM
end
