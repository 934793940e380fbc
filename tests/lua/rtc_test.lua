-- mx.rtc: CUDA C compiled by NVRTC at run time. Compiling needs only the
-- CUDA toolkit (NVRTC); the launches need a GPU. Without NVRTC or a GPU the
-- tests that need them say so and pass.
local src = [[
extern "C" __global__ void axpy(const float* x, float* y, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] += a * x[i];
}
template <typename T> __global__ void scale(T* y, T a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] *= a;
}
]]

local function module_or_skip()
  local ok, mod = pcall(mx.rtc.CudaModule, src, {exports = {'scale<float>'}})
  if not ok and tostring(mod):find('cannot open NVRTC') then
    print('  skipped: ' .. tostring(mod):match('[^\n]*'))
    return nil
  end
  assert(ok, mod)
  return mod
end

test('a module compiles to PTX; kernels are found by name or export', function()
  local mod = module_or_skip()
  if not mod then return end
  assert(mod:ptx():find('.entry axpy(', 1, true), 'the PTX has the extern "C" kernel')
  assert_eq(mod:get_kernel('axpy', 'const float* x, float* y, float a, int n'):name(), 'axpy')
  assert_eq(mod:get_kernel('scale<float>', 'float* y, float a, int n'):name(), 'scale<float>')
  assert_error(function() mod:get_kernel('nope', 'int n') end, "no kernel 'nope'")
  assert_error(function() mod:get_kernel('axpy', 'const float** x') end, "more than one '%*'")
end)

test('a source NVRTC rejects is an error carrying its log', function()
  if not module_or_skip() then return end
  assert_error(function() mx.rtc.CudaModule('this is not cuda') end, 'expected a declaration')
  assert_error(function() mx.rtc.CudaModule(src, {options = {'--no-such-option'}}) end,
    'NVRTC could not compile')
  assert_error(function() mx.rtc.CudaModule(src, {options = 'fast'}) end, 'table expected')
end)

test('a launch checks its arguments against the signature before pushing', function()
  local mod = module_or_skip()
  if not mod then return end
  local k = mod:get_kernel('axpy', 'const float* x, float* y, float a, int n')
  local x = mx.nd.ones({4})
  assert_error(function() k:launch({x, x, 2, 4}, mx.cpu(), {1}, {4}) end, 'run on a GPU context')
  assert_error(function() k:launch({x, x, 2}, mx.gpu(0), {1}, {4}) end, '3 arguments for 4')
  assert_error(function() k:launch({x, x, 2, 4}, mx.gpu(0), {1}, {4}) end,
    'argument 1 %(x%) is on cpu%(0%)')
  assert_error(function() k:launch({x, 'y', 2, 4}, mx.gpu(0), {1}, {4}) end, 'argument 2 is a string')
  assert_error(function() k:launch({2, x, 2, 4}, mx.gpu(0), {1}, {4}) end, 'must be an array')
  assert_error(function() k:launch({x, x, 2, 4}, mx.gpu(0), {0}, {4}) end, 'whole numbers >= 1')
  -- numbers a scalar parameter cannot hold are errors, never a wrapped value
  local s = mod:get_kernel('axpy', 'int n, int8_t small')
  assert_error(function() s:launch({4.5, 1}, mx.gpu(0), 1, 1) end,
    'argument 1 %(n%) is 4.5; the kernel takes a whole number')
  assert_error(function() s:launch({1e20, 1}, mx.gpu(0), 1, 1) end, 'argument 1 %(n%)')
  assert_error(function() s:launch({0 / 0, 1}, mx.gpu(0), 1, 1) end, 'argument 1 %(n%)')
  assert_error(function() s:launch({1, 200}, mx.gpu(0), 1, 1) end, 'argument 2 %(small%) is 200')
end)

test('kernels run on the GPU in order with the arrays\' other ops', function()
  local mod = module_or_skip()
  if not mod then return end
  if mx.num_gpus() == 0 then
    print('  skipped: no GPU')
    return
  end
  local n = 1000
  local ctx = mx.gpu(0)
  local x = mx.nd.arange(0, n, {ctx = ctx})
  local y = mx.nd.ones({n}, {ctx = ctx})
  local k = mod:get_kernel('axpy', 'const float* x, float* y, float a, int n')
  k:launch({x, y, 2, n}, ctx, {math.ceil(n / 256)}, {256})
  y = y * 3  -- ordered after the launch by y's variable
  local s = mod:get_kernel('scale<float>', 'float* y, float a, int n')
  s:launch({y, 0.5, n}, ctx, math.ceil(n / 128), 128)
  local want = {}
  for i = 0, n - 1 do want[i + 1] = (1 + 2 * i) * 3 * 0.5 end
  assert_eq(y:totable(), want)
  local xi = mx.nd.ones({4}, {ctx = ctx, dtype = 'int32'})
  assert_error(function() k:launch({xi, y, 2, 4}, ctx, 1, 4) end, 'is int32, the kernel takes float32')
end)

-- mx.operator.elementwise on GPU arrays: its kernels (the Lua functions
-- translated to C, called per element) compile with NVRTC, and on a GPU give
-- what the CPU loop gives.
mx.operator.elementwise{name = 't_rtc_softplus',
  forward = function(x) return math.log(1 + math.exp(x)) end,
  backward = function(x, y, dy) return dy / (1 + math.exp(-x)) end}
mx.operator.elementwise{name = 't_rtc_mix', forward = function(a, b) return a > b and a - b or 0.5 * b end}

test('elementwise kernels compile for each pass, request and dtype', function()
  if not module_or_skip() then return end
  local eg = require 'tessera.elementwise_gpu'
  local fwd = function(a, b) return a > b and a - b or 0.5 * b end
  for _, dtype in ipairs({'float32', 'float64'}) do
    for _, req in ipairs({'write', 'add'}) do
      local src, sig = eg.kernel_source(fwd, 2, 1, {req}, dtype, 'test')
      local k = mx.rtc.CudaModule(src):get_kernel('ts_elementwise', sig)
      assert_eq(k:name(), 'ts_elementwise')
      local T = dtype == 'float32' and 'float' or 'double'
      assert_eq(sig, ('const %s* x1, const %s* x2, %s* o1, long long n'):format(T, T, T))
      assert(src:find(req == 'add' and '+ v1' or '= %(' .. T .. '%)v1'), src)
    end
  end
  local bwd = function(x, y, dy) return dy / (1 + math.exp(-x)) end
  local src, sig = eg.kernel_source(bwd, 3, 1, {'write'}, 'float32', 'test')
  mx.rtc.CudaModule(src):get_kernel('ts_elementwise', sig)
  assert_error(function() eg.kernel_source(bwd, 3, 1, {'write'}, 'int32', 'op x') end,
    'op x: int32 arrays; only float32 and float64')
end)

test('elementwise ops on a GPU give the CPU loop\'s values and gradients', function()
  if not module_or_skip() then return end
  if mx.num_gpus() == 0 then
    print('  skipped: no GPU')
    return
  end
  local x = mx.nd.array({-3, -0.5, 0, 0.5, 3, 20})
  local g = x:as_in_context(mx.gpu(0))
  mx.test_utils.assert_almost_equal(mx.nd.t_rtc_softplus(g):as_in_context(mx.cpu()),
    mx.nd.t_rtc_softplus(x), {rtol = 1e-6, atol = 1e-7})
  local y = mx.nd.array({1, 1, 1, 1, 1, 1})
  mx.test_utils.assert_almost_equal(
    mx.nd.t_rtc_mix(g, y:as_in_context(mx.gpu(0))):as_in_context(mx.cpu()),
    mx.nd.t_rtc_mix(x, y), {rtol = 1e-6, atol = 1e-7})
  local function grad(a)
    a:attach_grad()
    mx.autograd.record(function() return mx.nd.t_rtc_softplus(a) end):backward()
    return a.grad:as_in_context(mx.cpu())
  end
  mx.test_utils.assert_almost_equal(grad(g:copy()), grad(x:copy()), {rtol = 1e-6, atol = 1e-7})
end)
