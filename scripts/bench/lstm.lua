-- Tessera's side of lstm_vs_torch.sh: the fused RNN op, an LSTM of 2 layers
-- of 512 units over a sequence of 35 and a batch of 32 (input 512, float32),
-- forward and backward (gradients of data, parameters and both states)
-- under autograd, as PyTorch's nn.LSTM in lstm_torch.py. Prints medians of
-- `reps` iterations after a warm-up.
-- A second argument picks another mode ('gru', 'rnn_tanh', 'rnn_relu'),
-- printed under its name; a third, 'gpu', runs it on gpu(0) (names
-- prefixed gpu_, plus the whole step as tessera_gpu_<mode>..._step for
-- gpu_lstm_vs_torch.sh).
--   tessera scripts/bench/lstm.lua [reps] [mode] [cpu|gpu]
local reps = tonumber(arg[1]) or 10
local mode = arg[2] or 'lstm'
local on_gpu = arg[3] == 'gpu'
local prefix = on_gpu and 'gpu_' or ''
if on_gpu and mx.context.num_gpus() == 0 then
  print(('tessera_gpu_%s2x512_t35_b32_step: unavailable (no GPU)'):format(mode))
  return
end
local ctx = on_gpu and mx.gpu(0) or mx.cpu()
local G = ({lstm = 4, gru = 3, rnn_tanh = 1, rnn_relu = 1})[mode]
if not G then error('lstm.lua: unknown mode ' .. tostring(mode)) end
local T, N, I, H, L = 35, 32, 512, 512, 2
local P = G * H * (I + H) + G * H * (H + H) + 2 * L * G * H
mx.random.seed(0)
local x = mx.nd.random.uniform(-0.1, 0.1, {T, N, I}):copyto(ctx)
local w = mx.nd.random.uniform(-0.05, 0.05, {P}):copyto(ctx)
local h0, c0 = mx.nd.zeros({L, N, H}, {ctx = ctx}), mx.nd.zeros({L, N, H}, {ctx = ctx})
for _, a in ipairs({x, w, h0, c0}) do a:attach_grad() end
local dy = mx.nd.ones({T, N, H}, {ctx = ctx})
local params = {state_size = H, num_layers = L, mode = mode}
local inputs = mode == 'lstm' and {x, w, h0, c0} or {x, w, h0}  -- only the LSTM has a cell

local function forward()
  local y = mx.autograd.record(function() return mx.nd.RNN(inputs, params) end)
  y:wait_to_read()
  return y
end
local function backward(y)
  y:backward(dy)
  mx.nd.waitall()
end

local timing = dofile((arg[0]:match('^(.*/)') or './') .. 'step_timing.lua')
local f, b = timing.forward_backward(forward, backward, reps)
print(('%s%s2x512_t35_b32_forward: %.2f ms'):format(prefix, mode, f))
print(('%s%s2x512_t35_b32_backward: %.2f ms'):format(prefix, mode, b))
if on_gpu then print(('tessera_gpu_%s2x512_t35_b32_step: %.2f ms'):format(mode, f + b)) end
