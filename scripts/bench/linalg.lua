-- Tessera's side of linalg_vs_torch.sh: linalg.potrf and linalg.trsm (lower,
-- left, no transpose) on 64 matrices of 256 x 256, float32, from Lua as a
-- script runs them (each call waited for), as PyTorch's
-- torch.linalg.cholesky and torch.linalg.solve_triangular in linalg_torch.py.
-- Prints medians of `reps` calls after a warm-up.
--   tessera scripts/bench/linalg.lua [reps]
local reps = tonumber(arg[1]) or 20
local B, N = 64, 256
mx.random.seed(0)
local x = mx.nd.random.uniform(-1, 1, {B, N, N})
local eye = mx.nd.eye(N):reshape({1, N, N})
local a = mx.nd.broadcast_add(mx.nd.linalg.syrk(x, {alpha = 1 / N}), eye)
local rhs = mx.nd.random.uniform(-1, 1, {B, N, N})
local l = mx.nd.linalg.potrf(a)

local function median_ms(fn)
  fn():wait_to_read()
  local t = {}
  for i = 1, reps do
    local t0 = mx.mod.now()
    fn():wait_to_read()
    t[i] = mx.mod.now() - t0
  end
  table.sort(t)
  return t[math.floor((#t + 1) / 2)] * 1e3
end

print(('linalg_potrf_64x256: %.3f ms'):format(median_ms(function()
  return mx.nd.linalg.potrf(a) end)))
print(('linalg_trsm_64x256: %.3f ms'):format(median_ms(function()
  return mx.nd.linalg.trsm(l, rhs) end)))
