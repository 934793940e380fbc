-- The run-ahead loop: a fresh array per iteration, never waited for, then one
-- wait at the end. Prints the loop's time; run it under `/usr/bin/time -v`
-- (scripts/bench/runahead.sh) for the process's peak memory.
--   tessera scripts/bench/runahead.lua [MB per array] [iterations] [wait]
-- `wait` = 1 waits for each array before making the next (the reference).
local mb = tonumber(arg[1]) or 10
local iters = tonumber(arg[2]) or 100
local wait_each = arg[3] == '1'
local n = math.floor(mb * 1024 * 1024 / 4)
local t0 = os.clock()
local ffi = require 'ffi'
ffi.cdef [[
struct runahead_timespec { long tv_sec; long tv_nsec; };
int clock_gettime(int clk, struct runahead_timespec *ts);
]]
local ts = ffi.new('struct runahead_timespec')
local function now()
  ffi.C.clock_gettime(1, ts)
  return tonumber(ts.tv_sec) + tonumber(ts.tv_nsec) * 1e-9
end
t0 = now()
for _ = 1, iters do
  local x = mx.nd.random.uniform(0, 1, {n})
  if wait_each then x:wait_to_read() end
end
mx.waitall()
print(('runahead_%dMB_x%d%s: %.3f s'):format(mb, iters, wait_each and '_waiting' or '', now() - t0))
