-- mx.gluon.Trainer: applies an optimizer to a set of Parameters (MXNet's
-- gluon/trainer.py in Lua).
--
-- step(batch_size) = allreduce_grads() + update(batch_size): gradients are
-- scaled by 1/batch_size (the summed loss's gradient becomes the mean's),
-- summed over the parameter's contexts, and the update runs once, on the
-- first context, whose values are then copied to the others (MXNet's
-- update on a 'device' store). Weight decay applies to every parameter,
-- times its wd_mult (unlike Module's *_weight/*_gamma rule); lr_mult too.
local class = require 'tessera.class'
local help = require 'tessera.help'

return function(mx, G)
  local Trainer = class.root('Trainer')
  -- trainer.learning_rate reads the optimizer's current rate.
  Trainer.__index = function(self, k)
    if k == 'learning_rate' then
      local o = rawget(self, '_optimizer')
      return o.lr_scheduler and o.lr_scheduler(o.num_update) or o.lr
    end
    if k == 'optimizer' then return rawget(self, '_optimizer') end
    return Trainer[k]
  end

  local function param_list(params)
    if class.isinstance(params, G.ParameterDict) then return params:values() end
    if type(params) ~= 'table' then
      error('Trainer: params must be a ParameterDict or a list of Parameters', 3)
    end
    local list = {}
    if #params > 0 then
      for i, p in ipairs(params) do list[i] = p end
    else
      local names = {}
      for k in pairs(params) do names[#names + 1] = k end
      table.sort(names)
      for i, k in ipairs(names) do list[i] = params[k] end
    end
    for i, p in ipairs(list) do
      if not class.isinstance(p, G.Parameter) then
        error(('Trainer: params[%d] is not a Parameter'):format(i), 3)
      end
    end
    return list
  end

  function Trainer:__init(params, optimizer, optimizer_params, opts)
    opts = opts or {}
    -- The store that sums gradients over a parameter's contexts: one given,
    -- or made from its type ('device' by default, as MXNet's).
    local kv = opts.kvstore
    if kv == nil then kv = 'device' end
    if type(kv) == 'string' then kv = mx.kv.create(kv) end
    if kv ~= false and not class.isinstance(kv, mx.kv.KVStore) then
      error('Trainer: kvstore must be a type name, a KVStore or false', 2)
    end
    rawset(self, '_kv', kv or nil)
    rawset(self, '_kv_ready', {})
    rawset(self, '_params', param_list(params))
    local seen = {}
    for _, p in ipairs(self._params) do
      if seen[p] then error(("Trainer: parameter '%s' is given twice"):format(p.name), 2) end
      seen[p] = true
    end
    local oparams = {}
    for k, v in pairs(optimizer_params or {}) do oparams[k] = v end
    rawset(self, '_scale', oparams.rescale_grad or 1)
    rawset(self, '_optimizer', mx.optimizer.create(optimizer, oparams))
    rawset(self, '_states', {})
    -- Parameters already initialized start equal on every process now;
    -- deferred ones at the first step (their first forward used each
    -- process's own draw: seed mx.random alike, as with MXNet).
    if self._kv and tostring(self._kv.type):match('^dist') then self:_share_params() end
  end

  -- The optimizer's per-index multipliers from the parameters (read at
  -- each update: a script may change p.lr_mult).
  local function set_mults(self)
    local o = self._optimizer
    for i, p in ipairs(self._params) do
      o.lr_mult[i], o.wd_mult[i] = p.lr_mult, p.wd_mult
    end
  end

  function Trainer:set_learning_rate(lr) self._optimizer:set_learning_rate(lr) end

  -- Every process starts from rank 0's values (MXNet's kvstore.init + pull).
  function Trainer:_share_params()
    for i, p in ipairs(self._params) do
      if p:_is_ready() and not self._kv_ready[i] then
        local data = p:list_data()
        self._kv:init(i, data[1])
        self._kv:pull(i, { out = data })
        self._kv_ready[i] = true
      end
    end
  end

  -- Sums each parameter's gradients over its contexts (and, with a dist
  -- store, over the processes) into every copy: through the store, in one
  -- pushpull, the last parameter's first (backward computes it first), or
  -- directly without one. A parameter on one context in one process has
  -- nothing to sum.
  function Trainer:allreduce_grads()
    local dist = self._kv and tostring(self._kv.type):match('^dist') ~= nil
    if dist then self:_share_params() end
    local keys, grads = {}, {}
    for i = #self._params, 1, -1 do
      local p = self._params[i]
      if p.grad_req ~= 'null' and p:_is_ready() then
        local g = p:list_grad()
        if (#g > 1 or dist) and self._kv then
          if not self._kv_ready[i] then
            self._kv:init(i, g[1])
            self._kv_ready[i] = true
          end
          keys[#keys + 1], grads[#grads + 1] = i, g
        elseif #g > 1 then
          local sum = g[1]:copy()
          for j = 2, #g do sum = sum + g[j]:as_in_context(sum.ctx) end
          for j = 1, #g do sum:copyto(g[j]) end
        end
      end
    end
    if #keys > 0 then self._kv:pushpull(keys, grads, { priority = -1 }) end
  end

  function Trainer:update(batch_size, ignore_stale_grad)
    batch_size = batch_size or 1
    local o = self._optimizer
    o.rescale_grad = self._scale / batch_size
    set_mults(self)
    for i, p in ipairs(self._params) do
      if p.grad_req ~= 'null' then
        if not p:_is_ready() then
          if ignore_stale_grad then goto continue end
          error(("Trainer: parameter '%s' has not been initialized (or its deferred "
            .. 'initialisation waits for a forward)'):format(p.name), 2)
        end
        local data, grads = p:list_data(), p:list_grad()
        local st = self._states[i]
        if st == nil then
          st = o:create_state(i, data[1]) or false
          self._states[i] = st
        end
        o:update(i, data[1], grads[1], st or nil)
        for j = 2, #data do data[1]:copyto(data[j]) end
      end
      ::continue::
    end
  end

  function Trainer:step(batch_size, ignore_stale_grad)
    if type(batch_size) ~= 'number' or batch_size <= 0 then
      error('Trainer:step: batch_size must be a positive number', 2)
    end
    self:allreduce_grads()
    self:update(batch_size, ignore_stale_grad)
  end

  -- The optimizer's states and update counts, in one .params file.
  function Trainer:save_states(path)
    local out = {}
    for i, st in pairs(self._states) do
      if st then
        if mx.nd.is_ndarray(st) then
          out[('state:%d'):format(i)] = st
        else
          for k, a in ipairs(st) do out[('state:%d:%d'):format(i, k)] = a end
        end
      end
    end
    local counts = {}
    for i = 1, #self._params do counts[i] = self._optimizer.counts[i] or 0 end
    if #counts > 0 then out['counts'] = mx.nd.array(counts, { dtype = 'float64' }) end
    out['num_update'] = mx.nd.array({ self._optimizer.num_update }, { dtype = 'float64' })
    mx.nd.save(path, out)
  end

  function Trainer:load_states(path)
    local loaded = mx.nd.load(path)
    if #loaded > 0 or not loaded.num_update then
      error(("Trainer:load_states: '%s' was not written by save_states"):format(path), 2)
    end
    local o = self._optimizer
    local states = {}
    for k, a in pairs(loaded) do
      local i, j = k:match('^state:(%d+):(%d+)$')
      if i then
        i, j = tonumber(i), tonumber(j)
        states[i] = states[i] or {}
        states[i][j] = a
      else
        i = k:match('^state:(%d+)$')
        if i then states[tonumber(i)] = a end
      end
    end
    for i, st in pairs(states) do
      local p = self._params[i]
      if not p then
        error(("Trainer:load_states: '%s' holds a state for parameter %d, the trainer has %d"):format(
          path, i, #self._params), 2)
      end
      local ctx = p:_is_ready() and p:data().ctx or mx.cpu()
      if mx.nd.is_ndarray(st) then
        st = st:as_in_context(ctx)
      else
        for k, a in ipairs(st) do st[k] = a:as_in_context(ctx) end
      end
      self._states[i] = st
    end
    o.num_update = loaded.num_update:totable()[1]
    if loaded.counts then
      for i, c in ipairs(loaded.counts:totable()) do o.counts[i] = c end
    end
  end

  help.doc(Trainer, [[
mx.gluon.Trainer(params, optimizer, optimizer_params, {kvstore =}): applies an
optimizer ('sgd', 'adam', ... or an mx.optimizer object) to the parameters
(a ParameterDict, a list or a table of Parameters). trainer:step(batch_size)
scales the gradients by 1/batch_size, sums them over each parameter's
contexts and updates (allreduce_grads() and update(batch_size) apart);
trainer.learning_rate, trainer:set_learning_rate(lr),
trainer:save_states(path), trainer:load_states(path). Weight decay applies
to every parameter times its wd_mult, and lr_mult scales its rate (MXNet's
Trainer). With a dist store (dist_sync), every process starts from rank 0's
values and gradients are summed over the processes too: pass step the
global batch size (every worker's). kvstore: 'device' (the default), 'local', a store from mx.kv.create,
or false (summed directly): the gradients of a parameter on several contexts
are summed through it.]])
  return Trainer
end
