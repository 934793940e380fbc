-- Tessera's side of gpu_conv_vs_torch.sh: the convolution of conv_bench
-- (3x3, 64 -> 64 channels, batch 32, 56x56, pad 1, float32, with bias) on
-- gpu(0) from a script, as a user writes it: mx.nd.Convolution under
-- autograd, then backward (gradients of data, weight and bias), a wait after
-- each, as conv_torch.py does with F.conv2d. Prints medians of `reps`
-- iterations after a warm-up (cuDNN's algorithm search).
--   tessera scripts/bench/gpu_conv.lua [reps]
local reps = tonumber(arg[1]) or 20
if mx.context.num_gpus() == 0 then
  print('tessera_gpu_conv3x3_64_b32_56_step: unavailable (no GPU)')
  return
end
local ctx = mx.gpu(0)
mx.random.seed(0)
local x = mx.nd.random.uniform(0, 1, {32, 64, 56, 56}):copyto(ctx)
local w = mx.nd.random.uniform(-0.05, 0.05, {64, 64, 3, 3}):copyto(ctx)
local b = mx.nd.zeros({64}, {ctx = ctx})
for _, a in ipairs({x, w, b}) do a:attach_grad() end
local dy = mx.nd.ones({32, 64, 56, 56}, {ctx = ctx})
local params = {kernel = {3, 3}, pad = {1, 1}, num_filter = 64}

local function forward()
  local y = mx.autograd.record(function() return mx.nd.Convolution({x, w, b}, params) end)
  y:wait_to_read()
  return y
end
local function backward(y)
  y:backward(dy)
  mx.nd.waitall()
end

local timing = dofile((arg[0]:match('^(.*/)') or './') .. 'step_timing.lua')
local f, bk = timing.forward_backward(forward, backward, reps)
print(('gpu_conv3x3_64_b32_56_forward: %.3f ms'):format(f))
print(('gpu_conv3x3_64_b32_56_backward: %.3f ms'):format(bk))
print(('tessera_gpu_conv3x3_64_b32_56_step: %.3f ms'):format(f + bk))
