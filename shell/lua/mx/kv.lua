-- mx.kv: key-value stores for parameters (MXNet's KVStore), in this process:
-- 'local' (values merged on the CPU) and 'device' (merged on the device of
-- the first value given). A push sums the values given for a key (one per
-- device), a pull copies the stored value out (broadcast to every array
-- given). With an optimizer (set_optimizer), a push updates the stored value
-- with the pushed sum as its gradient; without one, the sum replaces it.
-- Every step is NDArray operations, so pushes and pulls are engine ops
-- ordered by the arrays' variables, as any other.
--
-- 'dist_sync' and 'dist_device_sync' span the processes of an MPI job
-- (mpirun, or tessera --launch N): every process keeps a replica of each
-- value; init takes rank 0's value; a push sums the values given locally,
-- then sums those over the processes with one all-reduce (engine ops on the
-- communication lane, engine/kvstore/collectives.h), and every replica
-- applies the same update to the same sum, so replicas stay equal without
-- a server. The keys of one push travel in buckets of up to
-- TESSERA_KV_FUSION_BYTES (4 MiB by default) per all-reduce, in the order
-- given. 'dist_async' keeps each key's master on one process (below). NCCL
-- is not built yet.
local class = require 'tessera.class'
local help = require 'tessera.help'

return function(mx)
  local M = {}
  local KVStore = class.root('KVStore')

  local kinds = { ['local'] = true, device = true }
  local dist_kinds = { dist_sync = true, dist_device_sync = true, dist = true }
  local async_kinds = { dist_async = true, dist_device_async = true }

  function KVStore:__init(kind)
    self.type = kind
    self.rank, self.num_workers = 0, 1
    self._store, self._shapes, self._states, self._residual = {}, {}, {}, {}
  end

  function KVStore:__tostring() return ('KVStore(%s)'):format(self.type) end

  local function key_text(k) return type(k) == 'string' and ("'" .. k .. "'") or tostring(k) end

  local function check_key(k, who)
    if type(k) ~= 'number' and type(k) ~= 'string' then
      error(('%s: keys are integers or strings, got %s'):format(who, type(k)), 4)
    end
    if type(k) == 'number' and k % 1 ~= 0 then
      error(('%s: integer keys must be whole numbers, got %s'):format(who, tostring(k)), 4)
    end
  end

  -- (key, value) or ({keys}, {values}) as lists of keys and of value lists
  -- (a value is one array or a list of them, one per device).
  local function pairs_of(keys, values, who)
    local ks, vs = keys, values
    if type(keys) ~= 'table' then ks, vs = { keys }, { values } end
    if #ks ~= #vs then
      error(('%s: %d keys but %d values'):format(who, #ks, #vs), 3)
    end
    local out = {}
    for i, k in ipairs(ks) do
      check_key(k, who)
      local v = vs[i]
      if mx.nd.is_ndarray(v) then v = { v } end
      if type(v) ~= 'table' or #v == 0 then
        error(('%s: the value of key %s must be an NDArray or a list of them'):format(who,
          key_text(k)), 3)
      end
      for j, a in ipairs(v) do
        if not mx.nd.is_ndarray(a) then
          error(('%s: value %d of key %s is not an NDArray'):format(who, j, key_text(k)), 3)
        end
      end
      out[i] = { k, v }
    end
    return out
  end

  local function same_shape(a, b) return table.concat(a, ',') == table.concat(b, ',') end

  local function shape_text(s) return '(' .. table.concat(s, ',') .. ')' end

  -- Where the store keeps a key's value.
  function KVStore:_ctx(v) return self.type == 'local' and mx.cpu() or v[1].ctx end

  function KVStore:init(keys, values)
    for _, kv in ipairs(pairs_of(keys, values, 'kv:init')) do
      local k, v = kv[1], kv[2]
      if self._store[k] then
        error(('kv:init: key %s is already initialized'):format(key_text(k)), 2)
      end
      self._store[k] = v[1]:copyto(self:_ctx(v))
      self._shapes[k] = v[1].shape
    end
  end

  -- MXNet's 2-bit compression: with the key's residual r (per device), v =
  -- g + r is sent as +threshold where v >= threshold, -threshold where v <=
  -- -threshold and 0 elsewhere, and r keeps what was not sent.
  function KVStore:_compress(k, j, g)
    local t = self._compression.threshold
    local rk = self._residual[k] or {}
    self._residual[k] = rk
    local r = rk[j] or mx.nd.zeros(g.shape, { dtype = g.dtype, ctx = g.ctx })
    local v = g + r
    local q = (mx.nd._greater_equal_scalar(v, { scalar = t })
      - mx.nd._lesser_equal_scalar(v, { scalar = -t })) * t
    rk[j] = v - q
    return q
  end

  -- The sum of the values pushed for k, on the store's context.
  function KVStore:_merge(k, v, no_compress)
    local ctx = self._store[k].ctx
    local sum
    for j, a in ipairs(v) do
      if not same_shape(a.shape, self._shapes[k]) then
        error(('kv:push: key %s was initialized with shape %s, value %d has shape %s'):format(
          key_text(k), shape_text(self._shapes[k]), j, shape_text(a.shape)), 4)
      end
      if self._compression and not no_compress then a = self:_compress(k, j, a) end
      a = a:as_in_context(ctx)
      sum = sum and sum + a or a:copy()
    end
    return sum
  end

  -- The stored value of k after a push whose (reduced) sum is `merged`.
  function KVStore:_apply(k, merged)
    if self._updater then
      self._updater(k, merged, self._store[k])
    else
      merged:copyto(self._store[k])
    end
  end

  function KVStore:_check_init(items, who)
    for _, kv in ipairs(items) do
      if not self._store[kv[1]] then
        error(('%s: key %s was never initialized (kv:init first)'):format(who, key_text(kv[1])), 3)
      end
    end
  end

  function KVStore:push(keys, values, opts)
    local items = pairs_of(keys, values, 'kv:push')
    self:_check_init(items, 'kv:push')
    for _, kv in ipairs(items) do self:_apply(kv[1], self:_merge(kv[1], kv[2])) end
  end

  -- kv:pull(keys, {out = arrays}): the stored values into out (one array or
  -- a list per key, every array of a list getting the value).
  function KVStore:pull(keys, opts)
    opts = opts or {}
    local out = opts.out
    if out == nil then error('kv:pull: out = array(s) is required', 2) end
    for _, kv in ipairs(pairs_of(keys, out, 'kv:pull')) do
      local k, v = kv[1], kv[2]
      local stored = self._store[k]
      if not stored then
        error(('kv:pull: key %s was never initialized (kv:init first)'):format(key_text(k)), 2)
      end
      for j, a in ipairs(v) do
        if not same_shape(a.shape, stored.shape) then
          error(('kv:pull: key %s holds shape %s, out %d has shape %s'):format(key_text(k),
            shape_text(stored.shape), j, shape_text(a.shape)), 2)
        end
        stored:copyto(a)
      end
    end
  end

  function KVStore:pushpull(keys, values, opts)
    self:push(keys, values, opts)
    self:pull(keys, { out = (opts and opts.out) or values })
  end

  -- The value of the first array given, stored and copied to out.
  function KVStore:broadcast(keys, values, opts)
    self:init(keys, values)
    self:pull(keys, opts)
  end

  function KVStore:set_optimizer(opt)
    opt = mx.optimizer.create(opt)
    self._optimizer = opt
    self._updater = function(k, grad, weight)
      local st = self._states[k]
      if st == nil then
        st = opt:create_state(k, weight) or false
        self._states[k] = st
      end
      opt:update(k, weight, grad, st or nil)
    end
  end

  function KVStore:set_updater(fn)
    if type(fn) ~= 'function' then error('kv:set_updater: expected a function(key, grad, stored)', 2) end
    self._updater = fn
  end

  function KVStore:set_gradient_compression(opts)
    opts = opts or {}
    if opts.type ~= '2bit' then
      error("kv:set_gradient_compression: type must be '2bit', got " .. tostring(opts.type), 2)
    end
    local t = opts.threshold or 0.5
    if type(t) ~= 'number' or t <= 0 then
      error('kv:set_gradient_compression: threshold must be a positive number', 2)
    end
    self._compression = { type = '2bit', threshold = t }
  end

  local function state_name(k, j)
    return (type(k) == 'string' and 's:' .. k or 'i:' .. k) .. (j and (':' .. j) or '')
  end

  function KVStore:save_optimizer_states(path)
    if not self._optimizer then error('kv:save_optimizer_states: no optimizer is set', 2) end
    local out = { ['meta:num_update'] = mx.nd.array({ self._optimizer.num_update }, { dtype = 'float64' }) }
    for k, st in pairs(self._states) do
      if mx.nd.is_ndarray(st) then
        out[state_name(k)] = st
      elseif st then
        for j, a in ipairs(st) do out[state_name(k, j)] = a end
      end
      out['count:' .. state_name(k)] = mx.nd.array({ self._optimizer.counts[k] or 0 },
        { dtype = 'float64' })
    end
    mx.nd.save(path, out)
  end

  function KVStore:load_optimizer_states(path)
    if not self._optimizer then error('kv:load_optimizer_states: no optimizer is set', 2) end
    local loaded = mx.nd.load(path)
    if #loaded > 0 or not loaded['meta:num_update'] then
      error(("kv:load_optimizer_states: '%s' was not written by save_optimizer_states"):format(path), 2)
    end
    local function key_of(text)
      local kind, rest = text:match('^([is]):(.*)$')
      if kind == 'i' then return tonumber(rest) end
      return rest
    end
    local states = {}
    for name, a in pairs(loaded) do
      local kt, j = name:match('^([is]:.-):(%d+)$')
      if kt and not name:match('^count:') then
        local k = key_of(kt)
        states[k] = type(states[k]) == 'table' and states[k] or {}
        states[k][tonumber(j)] = a
      elseif name:match('^[is]:') then
        states[key_of(name)] = a
      end
    end
    for k, st in pairs(states) do
      local stored = self._store[k]
      local ctx = stored and stored.ctx or mx.cpu()
      if mx.nd.is_ndarray(st) then st = st:as_in_context(ctx)
      else for j, a in ipairs(st) do st[j] = a:as_in_context(ctx) end end
      self._states[k] = st
    end
    for name, a in pairs(loaded) do
      local kt = name:match('^count:(.*)$')
      if kt then self._optimizer.counts[key_of(kt)] = a:totable()[1] end
    end
    self._optimizer.num_update = loaded['meta:num_update']:totable()[1]
  end

  -- One process: nothing to wait for but the work pushed.
  function KVStore:barrier() mx.nd.waitall() end

  -- ---- across processes ----------------------------------------------------

  local DistStore = KVStore:extend('DistKVStore')

  local fusion_default = 4 * 1024 * 1024

  function DistStore:__init(kind)
    KVStore.__init(self, kind)
    local c = mx._collectives
    self.rank, self.num_workers, self.timeout = c.start()
    local env = os.getenv('TESSERA_KV_FUSION_BYTES')
    self._fusion = env and tonumber(env) or fusion_default
    if not self._fusion or self._fusion < 0 then
      error('mx.kv.create: TESSERA_KV_FUSION_BYTES must be a number of bytes (0: no fusion)', 3)
    end
  end

  -- The replicas live on the CPU, where the collectives read them.
  function DistStore:_ctx() return mx.cpu() end

  local dtype_bytes = { float64 = 8, int64 = 8, float32 = 4, int32 = 4, float16 = 2,
    bfloat16 = 2, uint8 = 1, int8 = 1, bool = 1 }

  local function bytes_of(a) return a.size * (dtype_bytes[a.dtype] or 4) end

  -- Arrays in buckets of up to self._fusion bytes (one dtype each), in
  -- order; fn(arrays, what) for each.
  function DistStore:_buckets(keys, arrays, fn)
    local bucket, bkeys, size = {}, {}, 0
    local function flush()
      if #bucket == 0 then return end
      local what = #bkeys == 1 and 'key ' .. key_text(bkeys[1])
        or ('keys %s..%s'):format(key_text(bkeys[1]), key_text(bkeys[#bkeys]))
      fn(bucket, what)
      bucket, bkeys, size = {}, {}, 0
    end
    for i, a in ipairs(arrays) do
      local b = bytes_of(a)
      if #bucket > 0 and (size + b > self._fusion or a.dtype ~= bucket[1].dtype) then flush() end
      bucket[#bucket + 1], bkeys[#bkeys + 1] = a, keys[i]
      size = size + b
    end
    flush()
  end

  -- MXNet's dist init: every process takes rank 0's value.
  function DistStore:init(keys, values)
    KVStore.init(self, keys, values)
    local ks, stored = {}, {}
    for i, kv in ipairs(pairs_of(keys, values, 'kv:init')) do
      ks[i], stored[i] = kv[1], self._store[kv[1]]
    end
    self:_buckets(ks, stored, function(arrays, what)
      mx._collectives.broadcast(arrays, 0, 0, 'init of ' .. what)
    end)
  end

  -- The local sum of each key, compressed when asked (MXNet compresses what
  -- a worker sends), summed over the processes, then applied on every replica.
  function DistStore:push(keys, values, opts)
    local items = pairs_of(keys, values, 'kv:push')
    self:_check_init(items, 'kv:push')
    local ks, sums = {}, {}
    for i, kv in ipairs(items) do
      local k = kv[1]
      local m = self:_merge(k, kv[2], true)
      if self._compression then m = self:_compress(k, 1, m) end
      ks[i], sums[i] = k, m
    end
    local priority = opts and opts.priority or 0
    self:_buckets(ks, sums, function(arrays, what)
      mx._collectives.allreduce(arrays, 'sum', priority, 'push of ' .. what)
    end)
    for i, k in ipairs(ks) do self:_apply(k, sums[i]) end
  end

  -- Without an updater the reduced sum becomes the stored value as it is:
  -- _merge made it, nobody else holds it.
  function DistStore:_apply(k, merged)
    if self._updater then return KVStore._apply(self, k, merged) end
    self._store[k] = merged
  end

  -- kv:pushpull(keys, values) with no out, no updater and no compression:
  -- each value is summed in place (one all-reduce per bucket, no copy on
  -- the way), and the lane copies the sums into the store, which keeps its
  -- own value, in the same op.
  function DistStore:pushpull(keys, values, opts)
    local out = opts and opts.out
    if out or self._updater or self._compression then
      return KVStore.pushpull(self, keys, values, opts)
    end
    local items = pairs_of(keys, values, 'kv:pushpull')
    self:_check_init(items, 'kv:pushpull')
    local ks, arrays = {}, {}
    for i, kv in ipairs(items) do
      local k, v = kv[1], kv[2]
      if #v ~= 1 or v[1].ctx ~= mx.cpu() then return KVStore.pushpull(self, keys, values, opts) end
      if not same_shape(v[1].shape, self._shapes[k]) then
        error(('kv:pushpull: key %s was initialized with shape %s, value 1 has shape %s'):format(
          key_text(k), shape_text(self._shapes[k]), shape_text(v[1].shape)), 2)
      end
      ks[i], arrays[i] = k, v[1]
    end
    local priority = opts and opts.priority or 0
    local stored = {}
    for i, k in ipairs(ks) do stored[arrays[i]] = self._store[k] end
    self:_buckets(ks, arrays, function(bucket, what)
      local copies = {}
      for j, a in ipairs(bucket) do copies[j] = stored[a] end
      mx._collectives.allreduce(bucket, 'sum', priority, 'pushpull of ' .. what, copies)
    end)
  end

  -- Waits for the collectives pushed before and for every process to reach it.
  function DistStore:barrier()
    local a = mx.nd.zeros({ 1 })
    mx._collectives.allreduce(a, 'sum', 0, 'barrier')
    a:wait_to_read()
  end

  -- The smallest x among the processes (waits): how they agree.
  function DistStore:_all_min(x)
    local a = mx.nd.array({ x }, { dtype = 'float64' })
    mx._collectives.allreduce(a, 'min', 0, 'agreement')
    return a:totable()[1]
  end

  function KVStore:_all_min(x) return x end

  -- ---- asynchronous: dist_async ------------------------------------------------

  -- Each key's master value lives on one process (its owner: keys spread
  -- over the processes, as ps-lite spreads them over servers), in an MPI
  -- window the others reach without the owner taking part. A push changes
  -- the master at once, with no global step: without an optimizer the
  -- pushed sum replaces it; with one, the worker reads the master, runs the
  -- optimizer on a copy (with this worker's optimizer state) and adds the
  -- change to the master. A pull reads the master as it is. Accesses are
  -- atomic per element, not per array: a pull can see another worker's
  -- push half applied (Hogwild-style consistency).
  local AsyncStore = DistStore:extend('DistAsyncKVStore')

  local function owner_of(k, n)
    if type(k) == 'number' then return k % n end
    local h = 0
    for i = 1, #k do h = (h * 31 + k:byte(i)) % 2147483647 end
    return h % n
  end

  function AsyncStore:__init(kind)
    DistStore.__init(self, kind)
    self._windows = {}
  end

  function AsyncStore:init(keys, values)
    DistStore.init(self, keys, values)  -- rank 0's values on every process
    for _, kv in ipairs(pairs_of(keys, values, 'kv:init')) do
      local k = kv[1]
      self._windows[k] = mx._collectives.window(self._store[k], owner_of(k, self.num_workers),
        'key ' .. key_text(k))
    end
  end

  function AsyncStore:push(keys, values, opts)
    local items = pairs_of(keys, values, 'kv:push')
    self:_check_init(items, 'kv:push')
    local priority = opts and opts.priority or 0
    for _, kv in ipairs(items) do
      local k = kv[1]
      local g = self:_merge(k, kv[2], true)
      if self._compression then g = self:_compress(k, 1, g) end
      local win, what = self._windows[k], 'push of key ' .. key_text(k)
      if self._updater then
        local before = self._store[k]
        mx._collectives.access(win, 'read', before, priority, what)
        local after = before:copy()
        self._updater(k, g, after)
        mx._collectives.access(win, 'add', after - before, priority, what)
      else
        mx._collectives.access(win, 'replace', g, priority, what)
      end
    end
  end

  function AsyncStore:pull(keys, opts)
    local out = opts and opts.out
    if out == nil then error('kv:pull: out = array(s) is required', 2) end
    for _, kv in ipairs(pairs_of(keys, out, 'kv:pull')) do
      local k = kv[1]
      if not self._store[k] then
        error(('kv:pull: key %s was never initialized (kv:init first)'):format(key_text(k)), 2)
      end
      mx._collectives.access(self._windows[k], 'read', self._store[k], opts.priority or 0,
        'pull of key ' .. key_text(k))
    end
    return KVStore.pull(self, keys, opts)
  end

  AsyncStore.pushpull = KVStore.pushpull

  function M.create(kind)
    kind = kind or 'local'
    if kinds[kind] then return KVStore(kind) end
    if dist_kinds[kind] then return DistStore(kind == 'dist' and 'dist_sync' or kind) end
    if async_kinds[kind] then return AsyncStore(kind) end
    if kind == 'nccl' or kind == 'horovod' then
      error(("mx.kv.create: '%s' is not built yet; 'local', 'device' (one process) and "
        .. "'dist_sync', 'dist_device_sync', 'dist_async' (processes of an MPI job) are"):format(
        kind), 2)
    end
    error(("mx.kv.create: unknown type '%s' (local, device, dist_sync, dist_device_sync, "
      .. "dist_async)"):format(tostring(kind)), 2)
  end
  M.KVStore = KVStore
  M.DistKVStore = DistStore
  M.DistAsyncKVStore = AsyncStore

  help.doc(M.create, [[
mx.kv.create(type = 'local') -> a KVStore: 'local' (values merged on the CPU)
or 'device' (on the first value's device), in this process. kv:init(key(s),
value(s)); kv:push(key(s), value(s)) sums the values given for a key (a list
per key: one per device) and, with an optimizer, updates the stored value
with the sum as gradient, else stores the sum; kv:pull(key(s), {out =
array(s)}) copies the stored value into every array given; kv:pushpull;
kv:broadcast(key, value, {out =}); kv:set_optimizer(opt);
kv:set_updater(fn(key, grad, stored)); kv:set_gradient_compression{type =
'2bit', threshold = 0.5}; kv:save_optimizer_states(path) /
load_optimizer_states(path); kv.rank (0), kv.num_workers (1), kv.type;
kv:barrier(). Keys are integers or strings.
'dist_sync' / 'dist_device_sync': the processes of an MPI job (mpirun -np N
tessera script.lua, or tessera --launch N script.lua): kv.rank and
kv.num_workers come from MPI; init takes rank 0's value everywhere; a push
sums over the devices given and then over the processes (all-reduce,
TESSERA_KV_FUSION_BYTES per bucket), and every process applies the same
update to its replica; barrier() waits for every process. A process that
waits longer than TESSERA_KV_TIMEOUT seconds (120) for the others fails
with an error naming its rank. 'dist_async': each key's master lives on one
process and every push changes it at once, with no global step (with an
optimizer, the worker computes the change from the master it reads and adds
it; atomic per element, not per array). 'nccl' is not built yet.]])
  help.doc(M, [[
mx.kv: key-value stores for parameters (MXNet's KVStore): create('local' |
'device') in this process, create('dist_sync') across the processes of an
MPI job. See help(mx.kv.create).]])
  return M
end
