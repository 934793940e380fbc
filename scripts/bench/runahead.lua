-- The run-ahead loop: a fresh array per iteration, never waited for, then one
-- wait at the end; or, with `wait` = 1, a wait for each array before the
-- next (the reference). scripts/bench/runahead.sh times it and reads the
-- process's peak memory.
--   tessera scripts/bench/runahead.lua [MB per array] [iterations] [wait]
local mb = tonumber(arg[1]) or 10
local iters = tonumber(arg[2]) or 100
local wait_each = arg[3] == '1'
local n = math.floor(mb * 1024 * 1024 / 4)
for _ = 1, iters do
  local x = mx.nd.random.uniform(0, 1, {n})
  if wait_each then x:wait_to_read() end
end
mx.waitall()
