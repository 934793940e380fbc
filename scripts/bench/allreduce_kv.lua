-- Sums of float32 arrays over the workers of a job through mx.kv
-- 'dist_sync' (kv:pushpull, in place, and the store's copy of the result),
-- and through the communication lane alone (mx._collectives.allreduce, no
-- store), in allreduce_mpi.c's loop: a warm-up, a barrier, `iters` sums,
-- the time of the slowest rank. Rank 0 prints.
--   tessera --launch 2 scripts/bench/allreduce_kv.lua 1 16 64
local kv = mx.kv.create('dist_sync')
local function iters_for(mb) return mb <= 1 and 200 or mb <= 16 and 20 or 6 end
local function measure(name, mb, sum_once)
  local a = mx.nd.ones({ math.floor(mb * 1024 * 1024 / 4) }) / 3
  sum_once(a)  -- warm-up
  a:wait_to_read()
  kv:barrier()
  local iters = iters_for(mb)
  local t0 = mx.mod.now()
  for _ = 1, iters do sum_once(a) end
  a:wait_to_read()
  local dt = mx.nd.array({ mx.mod.now() - t0 }, { dtype = 'float64' })
  mx._collectives.allreduce(dt, 'max')
  local slowest = dt:totable()[1]
  if kv.rank == 0 then
    print(('%s_%gMB_np%d: %.3f GB/s'):format(name, mb, kv.num_workers, mb * iters / 1024 / slowest))
  end
end

for i, s in ipairs(arg) do
  local mb = tonumber(s)
  kv:init(i, mx.nd.zeros({ math.floor(mb * 1024 * 1024 / 4) }))
  measure('kv_allreduce', mb, function(a) kv:pushpull(i, a) end)
  measure('lane_allreduce', mb, function(a) mx._collectives.allreduce(a) end)
end
