-- One LeNet training step (Module: forward, backward, update; MNIST-shaped
-- random data) timed per step, in one of these set-ups:
--   dist B      a worker of a dist_sync job, batch B per worker
--   single B    one process, no store, batch B
--   contexts B  one process, two CPU contexts and a 'local' store, batch B split over them
-- Prints `dist_step_<mode>_b<B>_np<N>: <ms> ms` (rank 0 only), the median of
-- 5 rounds of `steps` steps after 3 warm-up steps.
--   tessera --launch 2 scripts/bench/dist_step.lua dist 64 20
local mode, batch, steps = arg[1], tonumber(arg[2] or 64), tonumber(arg[3] or 20)

local function lenet()
  local net = mx.sym.Variable('data')
  net = mx.sym.Convolution { data = net, kernel = { 5, 5 }, num_filter = 20, name = 'conv1' }
  net = mx.sym.Activation { data = net, act_type = 'tanh' }
  net = mx.sym.Pooling { data = net, pool_type = 'max', kernel = { 2, 2 }, stride = { 2, 2 } }
  net = mx.sym.Convolution { data = net, kernel = { 5, 5 }, num_filter = 50, name = 'conv2' }
  net = mx.sym.Activation { data = net, act_type = 'tanh' }
  net = mx.sym.Pooling { data = net, pool_type = 'max', kernel = { 2, 2 }, stride = { 2, 2 } }
  net = mx.sym.Flatten { data = net }
  net = mx.sym.FullyConnected { data = net, num_hidden = 500, name = 'fc1' }
  net = mx.sym.Activation { data = net, act_type = 'tanh' }
  net = mx.sym.FullyConnected { data = net, num_hidden = 10, name = 'fc2' }
  return mx.sym.SoftmaxOutput { data = net, name = 'softmax' }
end

local kv, context = nil, mx.cpu()
if mode == 'dist' then kv = mx.kv.create('dist_sync')
elseif mode == 'contexts' then kv, context = 'local', { mx.cpu(0), mx.cpu(1) }
elseif mode ~= 'single' then error('mode: dist, single or contexts') end

mx.random.seed(1)
local data = mx.nd.random.uniform(0, 1, { batch, 1, 28, 28 })
local label = mx.nd.array((function()
  local t = {}
  for i = 1, batch do t[i] = i % 10 end
  return t
end)())
local mod = mx.mod.Module(lenet(), { context = context })
mod:bind { data_shapes = { { 'data', { batch, 1, 28, 28 } } },
  label_shapes = { { 'softmax_label', { batch } } } }
mod:init_params { initializer = mx.init.Xavier() }
mod:init_optimizer { optimizer = 'sgd', kvstore = kv or false,
  optimizer_params = { learning_rate = 0.01, momentum = 0.9 } }
local b = { data = { data }, label = { label } }
local function step()
  mod:forward(b, true)
  mod:backward()
  mod:update()
end
local function settle()
  mx.nd.waitall()
  if type(kv) == 'table' then kv:barrier() end
end
for _ = 1, 3 do step() end
settle()
local rounds = {}
for k = 1, 5 do
  local t0 = mx.mod.now()
  for _ = 1, steps do step() end
  settle()
  rounds[k] = (mx.mod.now() - t0) / steps * 1000
end
table.sort(rounds)
local np = type(kv) == 'table' and kv.num_workers or 1
if type(kv) ~= 'table' or kv.rank == 0 then
  print(('dist_step_%s_b%d_np%d: %.2f ms'):format(mode, batch, np, rounds[3]))
end
