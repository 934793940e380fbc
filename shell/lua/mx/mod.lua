-- mx.mod.Module: a symbol, an executor, parameters and an optimizer, with
-- MXNet's training loop (fit), evaluation (score, predict) and checkpoints
-- in MXNet's files (PREFIX-symbol.json, PREFIX-%04d.params with arg:/aux:
-- names, both written atomically).
--
-- With several contexts (context = {mx.cpu(0), mx.cpu(1)}, or GPUs) the
-- Module is data parallel, as MXNet's DataParallelExecutorGroup: one
-- executor per context bound to its slice of the batch (work_load_list
-- weighs the slices), the gradients summed over the contexts (through a
-- KVStore, mx.kv), one update, the new values copied to every context.
-- self.exec is the first context's executor.
local help = require 'tessera.help'

return function(mx)
  local M = {}
  local Module = {}
  Module.__index = Module
  M.Module = Module

  local function set_of(list)
    local s = {}
    for _, v in ipairs(list or {}) do s[v] = true end
    return s
  end

  function Module.new(symbol, opts)
    opts = opts or {}
    if not mx.sym.is_symbol(symbol) then error('Module: the first argument must be a Symbol', 2) end
    local self = setmetatable({}, Module)
    self.symbol = symbol
    self.data_names = opts.data_names or { 'data' }
    self.label_names = opts.label_names or { 'softmax_label' }
    local ctx = opts.context or mx.cpu()
    if mx.context.is_context(ctx) then ctx = { ctx } end
    if type(ctx) ~= 'table' or #ctx == 0 then
      error('Module: context must be a context or a non-empty list of them', 2)
    end
    self.contexts, self.context = ctx, ctx[1]
    local wl = opts.work_load_list or {}
    if #wl == 0 then for i = 1, #ctx do wl[i] = 1 end end
    if #wl ~= #ctx then
      error(('Module: work_load_list has %d entries for %d contexts'):format(#wl, #ctx), 2)
    end
    self.work_load_list = wl
    self.fixed = set_of(opts.fixed_param_names)
    local args = symbol:list_arguments()
    local inputs = set_of(self.data_names)
    for _, n in ipairs(self.label_names) do inputs[n] = true end
    local known = set_of(args)
    for _, n in ipairs(self.data_names) do
      if not known[n] then
        error(("Module: data name '%s' is not an argument of the symbol (arguments: %s)"):format(
          n, table.concat(args, ', ')), 2)
      end
    end
    -- A label the symbol does not use is dropped (as MXNet warns and does).
    local labels = {}
    for _, n in ipairs(self.label_names) do if known[n] then labels[#labels + 1] = n end end
    self.label_names = labels
    self.param_names = {}
    for _, n in ipairs(args) do
      if not inputs[n] then self.param_names[#self.param_names + 1] = n end
    end
    self.aux_names = symbol:list_auxiliary_states()
    self.binded, self.params_initialized, self.optimizer_initialized = false, false, false
    return self
  end
  setmetatable(Module, { __call = function(_, ...) return Module.new(...) end })

  local function shapes_of(descs)
    local t = {}
    for _, d in ipairs(descs or {}) do
      if d.name then t[d.name] = d.shape else t[d[1]] = d[2] end
    end
    return t
  end

  function Module:bind(opts)
    opts = opts or {}
    if self.binded and not opts.force_rebind then return end
    local shapes = shapes_of(opts.data_shapes)
    -- Labels the symbol does not use (a network without a loss layer) are
    -- ignored, as the Module dropped them from label_names.
    local labels = shapes_of(opts.label_shapes)
    for _, n in ipairs(self.label_names) do shapes[n] = labels[n] end
    for _, n in ipairs(self.data_names) do
      if not shapes[n] then error("bind: data_shapes has no shape for '" .. n .. "'", 2) end
    end
    self.for_training = opts.for_training ~= false
    local reqs = {}
    local req = opts.grad_req or 'write'
    for _, n in ipairs(self.param_names) do
      reqs[n] = (self.for_training and not self.fixed[n]) and req or 'null'
    end
    if opts.inputs_need_grad then
      for _, n in ipairs(self.data_names) do reqs[n] = req end
    end
    local batch = shapes[self.data_names[1]][1]
    self.slices = self:_slices(batch)
    local old = self.exec
    local shared = opts.shared_module
    if shared and #shared.execs ~= #self.contexts then
      error(('bind: shared_module runs on %d contexts, this module on %d'):format(#shared.execs,
        #self.contexts), 2)
    end
    self.execs = {}
    for i, ctx in ipairs(self.contexts) do
      local args = { ctx = ctx, grad_req = reqs }
      local rows = self.slices[i][2] - self.slices[i][1] + 1
      for k, v in pairs(shapes) do
        local sh = {}
        for j, d in ipairs(v) do sh[j] = d end
        sh[1] = rows
        args[k] = sh
      end
      if shared then
        self.execs[i] = self:_bind_shared(args, shared.execs[i])
      else
        self.execs[i] = self.symbol:simple_bind(args)
      end
    end
    if shared then self.params_initialized = shared.params_initialized end
    self.exec = self.execs[1]
    self.data_shapes, self.label_shapes = opts.data_shapes, opts.label_shapes
    self.binded = true
    if old and self.params_initialized then
      local a, x = self:_param_arrays(old)
      for _, e in ipairs(self.execs) do e:copy_params_from(a, x) end
    end
  end

  -- An executor whose parameters, their gradients and auxiliary states are
  -- the arrays of `other` (another module's executor for the same network
  -- at other input shapes: MXNet's shared_module) and whose internal
  -- storage comes from other's where big enough. The inputs get arrays of
  -- their own. `args`: simple_bind's table (ctx, grad_req, input shapes).
  function Module:_bind_shared(args, other)
    local shapes = {}
    for k, v in pairs(args) do
      if k ~= 'ctx' and k ~= 'grad_req' then shapes[k] = v end
    end
    local arg_shapes = self.symbol:infer_shape(shapes)
    if not arg_shapes then error('bind: the input shapes do not determine every argument', 3) end
    local names = self.symbol:list_arguments()
    local arrays, grads, reqs = {}, {}, {}
    for i, n in ipairs(names) do
      local mine = other.arg_dict[n]
      if shapes[n] == nil and mine then
        if table.concat(mine.shape, ',') ~= table.concat(arg_shapes[i], ',') then
          error(("bind: parameter '%s' has shape (%s) here but (%s) in shared_module"):format(n,
            table.concat(arg_shapes[i], ','), table.concat(mine.shape, ',')), 3)
        end
        arrays[i], grads[i] = mine, other.grad_dict[n] or false
      elseif shapes[n] == nil then
        error(("bind: parameter '%s' is not in shared_module's network"):format(n), 3)
      else
        arrays[i] = mx.nd.zeros(arg_shapes[i], { ctx = args.ctx })
        grads[i] = args.grad_req[n] ~= 'null' and args.grad_req[n] ~= nil
          and mx.nd.zeros(arg_shapes[i], { ctx = args.ctx }) or false
      end
      reqs[n] = grads[i] and (args.grad_req[n] or 'write') or 'null'
    end
    local aux = {}
    for i, n in ipairs(self.symbol:list_auxiliary_states()) do
      aux[i] = other.aux_dict[n] or error(("bind: auxiliary state '%s' is not in shared_module"):format(n), 3)
    end
    return self.symbol:bind { ctx = args.ctx, args = arrays, args_grad = grads, grad_req = reqs,
      aux_states = aux, shared_exec = other }
  end

  -- The rows {first, last} (1-based) of a batch each context takes, by
  -- work_load_list: MXNet's _split_input_slice.
  function Module:_slices(batch)
    local total = 0
    for _, w in ipairs(self.work_load_list) do total = total + w end
    local counts, sum = {}, 0
    for i, w in ipairs(self.work_load_list) do
      counts[i] = math.floor(w * batch / total + 0.5)
      sum = sum + counts[i]
    end
    if sum < batch then counts[#counts] = counts[#counts] + batch - sum end
    local slices, last = {}, 0
    for i, c in ipairs(counts) do
      local first = math.min(last, batch) + 1
      last = math.min(first - 1 + c, batch)
      if first > last then
        error(('bind: a batch of %d cannot be split over %d contexts (some slices would be '
          .. 'empty)'):format(batch, #self.contexts), 3)
      end
      slices[i] = { first, last }
    end
    return slices
  end

  function Module:_param_arrays(exe)
    exe = exe or self.exec
    local args, aux = {}, {}
    for _, n in ipairs(self.param_names) do args[n] = exe.arg_dict[n] end
    for _, n in ipairs(self.aux_names) do aux[n] = exe.aux_dict[n] end
    return args, aux
  end

  function Module:init_params(opts)
    opts = opts or {}
    if not self.binded then error('init_params: call bind first', 2) end
    if self.params_initialized and not opts.force_init then return end
    local init = opts.initializer or mx.init.Uniform { scale = 0.01 }
    local arg_params, aux_params = opts.arg_params or {}, opts.aux_params or {}
    local attrs = self.symbol:attr_dict()
    local function set(name, dst, given)
      local src = given[name]
      if src then
        if src.dtype ~= dst.dtype then src = src:astype(dst.dtype) end
        src:copyto(dst)
      elseif next(given) ~= nil and not opts.allow_missing then
        error("init_params: '" .. name .. "' is missing from the parameters given "
          .. '(allow_missing = true initializes it)', 3)
      else
        local a = attrs[name]
        if a and a.__init__ then
          mx.init._from_attr(a.__init__, init)(name .. '_weight', dst)
        else
          init(name, dst)
        end
      end
    end
    for _, n in ipairs(self.param_names) do set(n, self.exec.arg_dict[n], arg_params) end
    for _, n in ipairs(self.aux_names) do set(n, self.exec.aux_dict[n], aux_params) end
    local a, x = self:_param_arrays()
    for i = 2, #self.execs do self.execs[i]:copy_params_from(a, x) end
    self.params_initialized = true
  end

  -- The parameters on the CPU; auxiliary states (BatchNorm's running
  -- statistics, each context's from its own slices) averaged over the
  -- contexts, as MXNet's.
  function Module:get_params()
    local args, aux = {}, {}
    for n, a in pairs(self:_param_arrays()) do args[n] = a:copyto(mx.cpu()) end
    for _, n in ipairs(self.aux_names) do
      local sum = self.execs[1].aux_dict[n]:copyto(mx.cpu())
      for i = 2, #self.execs do sum = sum + self.execs[i].aux_dict[n]:copyto(mx.cpu()) end
      aux[n] = #self.execs > 1 and sum / #self.execs or sum
    end
    return args, aux
  end

  function Module:set_params(arg_params, aux_params, opts)
    opts = opts or {}
    self:init_params { arg_params = arg_params, aux_params = aux_params or {}, force_init = true,
      allow_missing = opts.allow_missing, initializer = opts.initializer }
  end

  function Module:init_optimizer(opts)
    opts = opts or {}
    if not self.params_initialized then error('init_optimizer: call init_params first', 2) end
    local params = {}
    for k, v in pairs(opts.optimizer_params or {}) do params[k] = v end
    local kv = opts.kvstore
    if kv == nil then kv = 'local' end
    if type(kv) == 'string' then kv = mx.kv.create(kv) end
    local dist = kv and tostring(kv.type):match('^dist') ~= nil
    local async = dist and tostring(kv.type):match('async') ~= nil
    -- rescale_grad follows the global batch in a synchronous job: every
    -- worker's (MXNet's rule); an asynchronous one updates per push.
    local batch = self.data_shapes and (self.data_shapes[1].shape or self.data_shapes[1][2])[1] or 1
    if dist and not async then batch = batch * kv.num_workers end
    if params.rescale_grad == nil then params.rescale_grad = 1 / batch end
    params.param_idx2name = {}
    for i, n in ipairs(self.param_names) do params.param_idx2name[i] = n end
    params.sym = self.symbol
    self.optimizer = type(opts.optimizer) == 'table' and opts.optimizer
      or mx.optimizer.create(opts.optimizer or 'sgd', params)
    self.opt_states = {}
    -- Several contexts, or processes, sum their gradients through a store
    -- ('local' by default; false sums contexts directly).
    self.kvstore = ((#self.execs > 1 or dist) and kv) or nil
    self._kv_keys = {}
    if dist then self:_share_params() end
    -- dist_async updates the store's masters as pushes arrive (MXNet's
    -- update_on_kvstore): the optimizer runs in the store.
    self._update_on_kv = async
    if async then kv:set_optimizer(self.optimizer) end
    self.optimizer_initialized = true
  end

  -- Every process starts from rank 0's parameters and auxiliary states
  -- (MXNet's kvstore.init + pull), so the replicas stay equal.
  function Module:_share_params()
    local kv = self.kvstore
    local function share(key, dict_name, n)
      local arrays = {}
      for k, exe in ipairs(self.execs) do arrays[k] = exe[dict_name][n] end
      kv:init(key, arrays[1])
      kv:pull(key, { out = arrays })
    end
    for i, n in ipairs(self.param_names) do
      share(i, 'arg_dict', n)
      self._kv_keys[i] = true
    end
    for _, n in ipairs(self.aux_names or {}) do
      if self.exec.aux_dict[n] then share('aux:' .. n, 'aux_dict', n) end
    end
  end

  function Module:forward(batch, is_train)
    if not self.binded then error('forward: call bind first', 2) end
    if is_train == nil then is_train = self.for_training end
    local multi = #self.execs > 1
    for k, exe in ipairs(self.execs) do
      local first, last = self.slices[k][1], self.slices[k][2]
      local function part(a) return multi and a[{ first, last }] or a end
      local feed = { is_train = is_train }
      for i, n in ipairs(self.data_names) do feed[n] = part(batch.data[i]) end
      if batch.label then
        for i, n in ipairs(self.label_names) do feed[n] = part(batch.label[i]) end
      end
      exe:forward(feed)
    end
  end

  function Module:backward(out_grads)
    if #self.execs == 1 then return self.exec:backward(out_grads) end
    for k, exe in ipairs(self.execs) do
      local og
      if out_grads then
        og = {}
        for i, g in ipairs(out_grads) do og[i] = g[{ self.slices[k][1], self.slices[k][2] }] end
      end
      exe:backward(og)
    end
  end

  -- Each parameter's gradient summed over the contexts (and processes) into
  -- the first context's. Through a store, one push for every key, the last
  -- layer's first: backward computes it first, so its reduction starts
  -- while the layers below still compute.
  function Module:_reduce_grads()
    local keys, grads, outs = {}, {}, {}
    for i = #self.param_names, 1, -1 do
      local n = self.param_names[i]
      local g = {}
      for k, exe in ipairs(self.execs) do g[k] = exe.grad_dict[n] end
      if g[1] then
        if self.kvstore then
          if not self._kv_keys[i] then
            self.kvstore:init(i, g[1])
            self._kv_keys[i] = true
          end
          keys[#keys + 1], grads[#grads + 1], outs[#outs + 1] = i, g, g[1]
        elseif #g > 1 then
          local sum = g[1]
          for k = 2, #g do sum = sum + g[k]:as_in_context(g[1].ctx) end
          sum:copyto(g[1])
        end
      end
    end
    if #keys == 0 then return end
    if #self.execs == 1 then  -- in place (a dist store sums it without a copy)
      self.kvstore:pushpull(keys, grads, { priority = -1 })
    else
      self.kvstore:push(keys, grads, { priority = -1 })
      self.kvstore:pull(keys, { out = outs })
    end
  end

  -- dist_async: each gradient pushed to the store, whose optimizer changes
  -- the master at once; the new values pulled back into every context.
  function Module:_update_on_kvstore()
    for i = #self.param_names, 1, -1 do
      local n = self.param_names[i]
      local g, w = {}, {}
      for k, exe in ipairs(self.execs) do g[k], w[k] = exe.grad_dict[n], exe.arg_dict[n] end
      if g[1] then
        self.kvstore:push(i, g, { priority = -i })
        self.kvstore:pull(i, { out = w, priority = -i })
      end
    end
  end

  function Module:update()
    if not self.optimizer_initialized then error('update: call init_optimizer first', 2) end
    if self._update_on_kv then return self:_update_on_kvstore() end
    if #self.execs > 1 or self.kvstore then self:_reduce_grads() end
    local opt = self.optimizer
    for i, n in ipairs(self.param_names) do
      local g = self.exec.grad_dict[n]
      if g then
        if self.opt_states[i] == nil then
          self.opt_states[i] = opt:create_state(i, self.exec.arg_dict[n]) or false
        end
        opt:update(i, self.exec.arg_dict[n], g, self.opt_states[i] or nil)
        for k = 2, #self.execs do self.exec.arg_dict[n]:copyto(self.execs[k].arg_dict[n]) end
      end
    end
  end

  -- The outputs; with several contexts, each output's slices joined along
  -- the batch axis on the first context.
  function Module:get_outputs()
    if #self.execs == 1 then return self.exec.outputs end
    local outs = {}
    for i = 1, #self.exec.outputs do
      local parts = {}
      for k, exe in ipairs(self.execs) do parts[k] = exe.outputs[i]:as_in_context(self.context) end
      outs[i] = mx.nd.concat(parts, { dim = 1 })
    end
    return outs
  end

  function Module:update_metric(metric, labels, pad)
    local outs = self:get_outputs()
    if pad and pad > 0 then
      local keep = outs[1].shape[1] - pad
      local o, l = {}, {}
      for i, x in ipairs(outs) do o[i] = x:slice(1, keep) end
      for i, x in ipairs(labels) do l[i] = x:slice(1, keep) end
      outs, labels = o, l
    end
    local n = math.min(#labels, #outs)
    local ls, os = {}, {}
    for i = 1, n do ls[i], os[i] = labels[i], outs[i] end
    metric:update(ls, os)
  end

  local ffi = require 'ffi'
  local clock = os.clock
  do
    pcall(ffi.cdef, [[
      struct mod_timespec { long tv_sec; long tv_nsec; };
      int clock_gettime(int clk, struct mod_timespec *ts);
    ]])
    local ts = ffi.new('struct mod_timespec')
    clock = function()
      ffi.C.clock_gettime(1, ts)
      return tonumber(ts.tv_sec) + tonumber(ts.tv_nsec) * 1e-9
    end
  end
  M.now = help.doc(clock, [[
mx.mod.now() -> seconds on the system's monotonic clock, for timing: its
zero is arbitrary, so only the difference between two calls means anything
(the wall time elapsed between them).

Module:fit's progress and mx.callback.Speedometer measure with it.]])

  local function metric_text(metric)
    local parts = {}
    for _, nv in ipairs(metric:get_name_value()) do
      parts[#parts + 1] = ('%s=%.4f'):format(nv[1], nv[2])
    end
    return table.concat(parts, ' ')
  end

  -- The next training batch. The processes of a job step together: an epoch
  -- ends on every worker when one of them has no batch left (their shares
  -- can differ by a batch), by one agreement per step.
  function Module:_next_batch(data)
    local batch = data:next()
    local kv = self.kvstore
    if kv and kv.num_workers > 1 and not self._update_on_kv
      and kv:_all_min(batch and 1 or 0) == 0 then
      return nil
    end
    return batch
  end

  -- The first value a metric reports (what the curves follow).
  local function first_value(metric)
    local _, values = metric:get()
    if type(values) == 'table' then return values[1] end
    return values
  end

  function Module:fit(train_data, opts)
    opts = opts or {}
    local num_epoch = opts.num_epoch or error('fit: num_epoch is required', 2)
    self:bind { data_shapes = train_data.provide_data, label_shapes = train_data.provide_label,
      for_training = true }
    self:init_params { initializer = opts.initializer, arg_params = opts.arg_params,
      aux_params = opts.aux_params, allow_missing = opts.allow_missing,
      force_init = opts.force_init }
    self:init_optimizer { optimizer = opts.optimizer or 'sgd', kvstore = opts.kvstore,
      optimizer_params = opts.optimizer_params or { learning_rate = 0.01 } }
    local metric = mx.metric.create(opts.eval_metric or 'acc')
    local begin = opts.begin_epoch or 0
    -- The per-batch metric drawn under the live bar where the terminal
    -- allows it (chart = true: also after each epoch's line otherwise).
    local chart = opts.chart
    if chart == nil then chart = opts.progress ~= false and mx.callback.terminal_allows_chart() end
    local history = {}
    for epoch = begin, num_epoch - 1 do
      metric:reset()
      train_data:reset()
      local total = train_data.num_data and math.ceil(train_data.num_data / train_data.batch_size)
      local nbatch, batch_values = 0, {}
      local bar = mx.callback.ProgressBar(total, { label = ('Epoch %d '):format(epoch),
        quiet = opts.progress == false, chart = chart and batch_values or nil })
      if opts.progress == false then bar.live = false end
      if opts.monitor and epoch == begin then self:install_monitor(opts.monitor) end
      for batch in function() return self:_next_batch(train_data) end do
        if opts.monitor then opts.monitor:tic() end
        self:forward(batch, true)
        self:backward()
        self:update()
        if opts.monitor then opts.monitor:toc_print() end
        self:update_metric(metric, batch.label, batch.pad)
        nbatch = nbatch + 1
        if opts.batch_end_callback then
          local cbs = opts.batch_end_callback
          if type(cbs) == 'function' then cbs = { cbs } end
          for _, cb in ipairs(cbs) do
            cb { epoch = epoch, nbatch = nbatch, eval_metric = metric, module = self }
          end
        end
        bar:update(batch.data[1].shape[1] - (batch.pad or 0), metric_text(metric))
        if opts.plot or chart then batch_values[nbatch] = first_value(metric) end
      end
      local line = ('Epoch %d: train %s'):format(epoch, metric_text(metric))
      local record = { epoch = epoch, train = { metric:get() }, batches = batch_values }
      if opts.eval_data then
        local res = self:score(opts.eval_data, opts.eval_metric or 'acc')
        local parts = {}
        for _, nv in ipairs(res) do parts[#parts + 1] = ('%s=%.4f'):format(nv[1], nv[2]) end
        line = line .. ', validation ' .. table.concat(parts, ' ')
        record.validation = res
      end
      local dt, speed = bar:elapsed()
      bar:finish(line .. (', %.1fs (%.0f samples/s)'):format(dt, speed))
      history[#history + 1] = record
      if chart and not bar.live and #batch_values > 1 and opts.progress ~= false then
        print(mx.plot.chart(batch_values, { height = 4 }))
      end
      if opts.plot then mx.plot.training_curves(opts.plot, history) end
      if opts.epoch_end_callback then
        local cbs = opts.epoch_end_callback
        if type(cbs) == 'function' then cbs = { cbs } end
        local args, aux = self:get_params()
        for _, cb in ipairs(cbs) do cb(epoch, self.symbol, args, aux, self) end
      end
    end
    return history
  end

  -- MXNet's install_monitor: mon watches every executor of the module.
  function Module:install_monitor(mon)
    if not self.binded then error('install_monitor: call bind first', 2) end
    for _, exe in ipairs(self.execs) do mon:install(exe) end
  end

  function Module:score(eval_data, eval_metric)
    local metric = mx.metric.create(eval_metric or 'acc')
    metric:reset()
    eval_data:reset()
    for batch in function() return eval_data:next() end do
      self:forward(batch, false)
      self:update_metric(metric, batch.label, batch.pad)
    end
    return metric:get_name_value()
  end

  function Module:predict(eval_data)
    eval_data:reset()
    local parts = {}
    for batch in function() return eval_data:next() end do
      self:forward(batch, false)
      local out = self:get_outputs()[1]
      local keep = out.shape[1] - (batch.pad or 0)
      parts[#parts + 1] = out:slice(1, keep):copy()
    end
    if #parts == 0 then return nil end
    if #parts == 1 then return parts[1] end
    return mx.nd.concat(parts, { dim = 1 })
  end

  -- ---- Checkpoints in MXNet's files.
  function M.save_checkpoint(prefix, epoch, symbol, arg_params, aux_params)
    symbol:save(prefix .. '-symbol.json')
    local named = {}
    for n, a in pairs(arg_params or {}) do named['arg:' .. n] = a end
    for n, a in pairs(aux_params or {}) do named['aux:' .. n] = a end
    mx.nd.save(('%s-%04d.params'):format(prefix, epoch), named, { format = 'mxnet' })
  end

  function M.load_checkpoint(prefix, epoch)
    local symbol = mx.sym.load(prefix .. '-symbol.json')
    local saved = mx.nd.load(('%s-%04d.params'):format(prefix, epoch))
    local args, aux = {}, {}
    for k, v in pairs(saved) do
      local kind, name = tostring(k):match('^(%a+):(.+)$')
      if kind == 'arg' then args[name] = v elseif kind == 'aux' then aux[name] = v end
    end
    return symbol, args, aux
  end

  function Module:save_checkpoint(prefix, epoch)
    local args, aux = self:get_params()
    M.save_checkpoint(prefix, epoch, self.symbol, args, aux)
  end

  function Module.load(prefix, epoch, opts)
    local symbol, args, aux = M.load_checkpoint(prefix, epoch)
    local mod = Module.new(symbol, opts)
    mod._preloaded = { args, aux }
    local bind = mod.bind
    mod.bind = function(self, o)
      bind(self, o)
      if self._preloaded then
        self:init_params { arg_params = self._preloaded[1], aux_params = self._preloaded[2] }
        self._preloaded = nil
      end
    end
    return mod
  end

  -- Keyword tables beside positional arguments (tessera.kwargs), with
  -- MXNet's parameter names: Module{symbol = net, context = ctx},
  -- mod:fit{train_data = it, num_epoch = 2}, mod:score{eval_data = it}.
  local kw = require 'tessera.kwargs'
  Module.new = kw.wrap(Module.new, 'Module', { 'symbol' }, 2)
  Module.load = kw.wrap(Module.load, 'Module.load', { 'prefix', 'epoch' }, 3)
  for name, spec in pairs({
    fit = { { 'train_data' }, 2 },
    score = { { 'eval_data', 'eval_metric' } },
    predict = { { 'eval_data' } },
    forward = { { 'data_batch', 'is_train' } },
    backward = { { 'out_grads' } },
    update_metric = { { 'eval_metric', 'labels', 'pad' } },
    set_params = { { 'arg_params', 'aux_params' }, 3 },
    save_checkpoint = { { 'prefix', 'epoch' } },
  }) do
    Module[name] = kw.wrap(Module[name], name, spec[1], spec[2], true)
  end
  M.save_checkpoint = kw.wrap(M.save_checkpoint, 'save_checkpoint',
    { 'prefix', 'epoch', 'symbol', 'arg_params', 'aux_params' })
  M.load_checkpoint = kw.wrap(M.load_checkpoint, 'load_checkpoint', { 'prefix', 'epoch' })
  help.doc(M.save_checkpoint, [[
mx.mod.save_checkpoint(prefix, epoch, symbol, arg_params, aux_params) writes
a checkpoint in MXNet's files: PREFIX-symbol.json and PREFIX-%04d.params
(the epoch zero-padded to 4 digits).

The parameters are tables of NDArrays by name, saved as 'arg:name' and
'aux:name' in MXNet's .params format; either may be nil. Also
save_checkpoint{prefix =, epoch =, symbol =, arg_params =, aux_params =}.
mx.callback.do_checkpoint makes an epoch_end_callback calling it.]])
  help.doc(M.load_checkpoint, [[
mx.mod.load_checkpoint(prefix, epoch) -> symbol, arg_params, aux_params:
reads what save_checkpoint wrote (PREFIX-symbol.json, PREFIX-%04d.params).

arg_params and aux_params are tables of NDArrays by name, with the 'arg:'
and 'aux:' prefixes of the file taken off. Also load_checkpoint{prefix =,
epoch =}; mx.mod.Module.load(prefix, epoch) makes a Module from one.]])

  help.doc(Module, [[
mx.mod.Module(symbol, {data_names = {'data'}, label_names = {'softmax_label'},
  context = mx.cpu() | {ctx, ...}, work_load_list = {1, ...}, fixed_param_names = {}})
With several contexts the Module is data parallel: each batch split over
them (weighted by work_load_list), gradients summed through a KVStore
(init_optimizer{kvstore = 'local'}; false sums directly), one update,
the outputs joined.
mod:fit(train_iter, {eval_data =, num_epoch =, optimizer = 'sgd', kvstore = 'local', optimizer_params =
  {learning_rate =, momentum =, wd =}, eval_metric = 'acc', initializer =,
  batch_end_callback =, epoch_end_callback =, begin_epoch = 0})
mod:bind{data_shapes, label_shapes, for_training}, init_params{initializer},
init_optimizer{optimizer, optimizer_params, kvstore}, forward(batch, is_train),
backward(), update(), update_metric(m, labels), get_outputs(),
score(iter, metric), predict(iter), get_params(), set_params(args, aux),
save_checkpoint(prefix, epoch); mx.mod.Module.load(prefix, epoch).
Each also takes one keyword table with MXNet's parameter names:
mx.mod.Module{symbol = net, context = mx.cpu()}, mod:fit{train_data = it,
eval_data = val, num_epoch = 2}, mod:score{eval_data = it, eval_metric = 'acc'}.]])
  M.BucketingModule = require('tessera.mx.mod.bucketing')(mx, M)
  help.doc(M, 'mx.mod: Module, BucketingModule, save_checkpoint(prefix, epoch, sym, args, aux), '
    .. 'load_checkpoint(prefix, epoch)')
  return M
end
