-- NDArray loops from Lua, printed as `name: value unit` lines:
--   nd_add_1elem: `c = a + b` on 1-element float32 arrays, N times, then a
--     wait on the last c: the per-op cost of the binding, the op invocation
--     (parameter parsing, shape/type inference, allocation) and the engine
--     push and completion;
--   nd_add_scalar_1elem: the same for `c = a + 1` (a scalar op);
--   nd_add_64k_wait: `c = a + b` on 65536-element arrays (an op the engine's
--     workers run, not the caller) and `c:wait_to_read()` after each: the
--     round trip from Lua to a worker and back, plus the few microseconds
--     of the add itself (nd_add_64k: the same without the waits);
--   nd_ffi_sum_10M: a Lua loop summing 10M float32 through a:data_ptr().
--   tessera scripts/bench/ndarray_loop.lua [N [ROUNDS]]
-- Loop figures are the best of ROUNDS (default 5) runs of N ops.
local ffi = require 'ffi'
ffi.cdef [[
struct nd_bench_timespec { long tv_sec; long tv_nsec; };
int clock_gettime(int clk, struct nd_bench_timespec *ts);
]]
local ts = ffi.new('struct nd_bench_timespec')
local function now()
  ffi.C.clock_gettime(1, ts)  -- CLOCK_MONOTONIC
  return tonumber(ts.tv_sec) + tonumber(ts.tv_nsec) * 1e-9
end

local n = tonumber(arg and arg[1]) or 20000
local rounds = tonumber(arg and arg[2]) or 5

-- The best of `rounds` timed runs of fn(n), in µs per op: on a shared
-- machine the best run is the one least disturbed by other work.
local function best_per_op(fn)
  fn(1000)  -- warm up the pool, the engine threads and the JIT
  local best = math.huge
  for _ = 1, rounds do
    local t0 = now()
    fn(n)
    best = math.min(best, now() - t0)
  end
  return best / n * 1e6
end

-- `c = x + y` inline in a loop, then a wait on the last c.
local function add_loop_of(x, y)
  return function(iters)
    local c
    for _ = 1, iters do c = x + y end
    c:wait_to_read()
  end
end

local a = mx.nd.array({1})
local b = mx.nd.array({2})
print(string.format('nd_add_1elem: %.3f us/op', best_per_op(add_loop_of(a, b))))

local function add_scalar_loop(iters)
  local c
  for _ = 1, iters do c = a + 1 end
  c:wait_to_read()
end
print(string.format('nd_add_scalar_1elem: %.3f us/op', best_per_op(add_scalar_loop)))

local a64 = mx.nd.ones({65536})
local b64 = mx.nd.ones({65536})
local function add64_wait_loop(iters)
  for _ = 1, iters do (a64 + b64):wait_to_read() end
end
local n_wait = n
n = math.max(1, math.floor(n_wait / 10))
print(string.format('nd_add_64k: %.3f us/op', best_per_op(add_loop_of(a64, b64))))
print(string.format('nd_add_64k_wait: %.3f us/op', best_per_op(add64_wait_loop)))
n = n_wait

local m = 10 * 1000 * 1000
local x = mx.nd.ones({m})
local function ffi_sum(arr)
  local p = arr:data_ptr()
  local s = 0
  for i = 0, m - 1 do s = s + p[i] end
  return s
end
ffi_sum(x)
local best = math.huge
local s
for _ = 1, 5 do
  t0 = now()
  s = ffi_sum(x)
  best = math.min(best, now() - t0)
end
assert(s == m, s)
print(string.format('nd_ffi_sum_10M: %.2f ms', best * 1e3))
