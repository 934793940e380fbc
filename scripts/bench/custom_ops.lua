-- The same op, y = a x^2 + b x + c, four ways, printed as `name: value unit`:
--   cpp:    the built-in C++ SimpleOp `quadratic`;
--   jit:    mx.operator.elementwise, a Lua function of numbers compiled by
--           LuaJIT into a loop over the raw buffer (interpreter thread);
--   ndops:  a Lua custom op (mx.operator.register) whose forward pushes
--           NDArray ops;
--   plugin: `plugin_quadratic` from the example plugin, when the path of the
--           library is given as arg[2] (scripts/ops, built by the tests).
-- Run with TESSERA_OMP_THREADS=1 so that the C++ kernels use one thread, as
-- the JIT loop does (scripts/bench/custom_ops.sh does).
--   tessera scripts/bench/custom_ops.lua [N elements] [plugin.so]
local n = tonumber(arg and arg[1]) or 1000000
local plugin = arg and arg[2]
local now = mx.mod.now
local A, B, C = 1, 2, 3

mx.operator.elementwise{name = 'bench_jit_quadratic',
  forward = function(x) return (A * x + B) * x + C end,
  backward = function(x, y, dy) return dy * (2 * A * x + B) end}

local NdOps = mx.operator.CustomOp:extend()
function NdOps:forward(_, req, in_data, out_data)
  local x = in_data[1]
  self:assign(out_data[1], req[1], (x * A + B) * x + C)
end
mx.operator.register('bench_ndops_quadratic',
  {create_operator = function() return setmetatable({}, NdOps) end})

-- Each way writes into a preallocated `out`, so the figures are of the op,
-- not of allocating (and first touching) a fresh output per call.
local ways = {
  {'cpp', function(x, out) return mx.nd.quadratic(x, {a = A, b = B, c = C, out = out}) end},
  {'jit', function(x, out) return mx.nd.bench_jit_quadratic(x, {out = out}) end},
  {'ndops', function(x, out) return mx.nd.Custom(x, {op_type = 'bench_ndops_quadratic', out = out}) end},
}
if plugin then
  mx.operator.load(plugin)
  table.insert(ways, {'plugin', function(x, out)
    return mx.nd.plugin_quadratic(x, {a = A, b = B, c = C, out = out}) end})
end

-- Seconds per call: `reps` calls in a row, then a wait for the last.
local function time(fn, x, reps)
  local out = mx.nd.zeros(x.shape)
  -- Warm up as deep as the timed run: calls run ahead of the engine, so the
  -- pool must already hold a block for every output in flight (fresh blocks
  -- would time page faults); and the JIT, the loops.
  for _ = 1, reps do fn(x, out) end
  mx.nd.waitall()
  collectgarbage()
  local t0 = now()
  for _ = 1, reps do fn(x, out) end
  out:wait_to_read()
  mx.nd.waitall()
  return (now() - t0) / reps
end

local x = mx.nd.random.uniform(-1, 1, {n})
local reps = math.max(5, math.floor(2e7 / n))
local t = {}
for _, w in ipairs(ways) do
  t[w[1]] = time(w[2], x, reps)
  print(('custom_quadratic_%s_%dk: %.3f ms'):format(w[1], math.floor(n / 1000), t[w[1]] * 1e3))
end
for _, w in ipairs(ways) do
  if w[1] ~= 'cpp' then
    print(('custom_quadratic_%s_vs_cpp: %.2f x'):format(w[1], t[w[1]] / t.cpp))
  end
end

-- Per-call cost on one element: what each way adds around the loop.
local one = mx.nd.array({0.5})
for _, w in ipairs(ways) do
  print(('custom_quadratic_%s_1elem: %.1f us/op'):format(w[1], time(w[2], one, 2000) * 1e6))
end

-- Forward and backward under autograd, cpp against jit: the gradient buffer
-- is attached once, each call records the op and runs its backward.
local function fwd_bwd(fn)
  return function(v)
    local y = mx.autograd.record(function() return fn(v) end)
    y:backward()
    return v.grad
  end
end
local xg = mx.nd.random.uniform(-1, 1, {n})
xg:attach_grad()
local function time_grad(fn)
  for _ = 1, reps do fn(xg) end  -- as deep as the timed run (see time)
  mx.nd.waitall()
  collectgarbage()
  local t0 = now()
  for _ = 1, reps do fn(xg) end
  mx.nd.waitall()
  return (now() - t0) / reps
end
local tb = {}
for _, w in ipairs({ways[1], ways[2]}) do
  tb[w[1]] = time_grad(fwd_bwd(w[2]))
  print(('custom_quadratic_fwd_bwd_%s_%dk: %.3f ms'):format(w[1], math.floor(n / 1000), tb[w[1]] * 1e3))
end
print(('custom_quadratic_fwd_bwd_jit_vs_cpp: %.2f x'):format(tb.jit / tb.cpp))
