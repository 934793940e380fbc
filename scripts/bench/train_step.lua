-- One training step (forward, backward, SGD-momentum update) of the MNIST
-- MLP (784-128-64-10, batch 100) and of LeNet (batch 64), through
-- mx.mod.Module on random data, printed as `name: value unit` lines.
--   tessera scripts/bench/train_step.lua [steps]
local steps = tonumber(arg and arg[1]) or 50

local function mlp()
  local net = mx.sym.FullyConnected{data = mx.sym.Variable('data'), num_hidden = 128, name = 'fc1'}
  net = mx.sym.Activation{data = net, act_type = 'relu'}
  net = mx.sym.FullyConnected{data = net, num_hidden = 64, name = 'fc2'}
  net = mx.sym.Activation{data = net, act_type = 'relu'}
  net = mx.sym.FullyConnected{data = net, num_hidden = 10, name = 'fc3'}
  return mx.sym.SoftmaxOutput{data = net, name = 'softmax'}
end

local function lenet()
  local net = mx.sym.Convolution{data = mx.sym.Variable('data'), kernel = {5, 5}, num_filter = 20}
  net = mx.sym.Activation{data = net, act_type = 'tanh'}
  net = mx.sym.Pooling{data = net, pool_type = 'max', kernel = {2, 2}, stride = {2, 2}}
  net = mx.sym.Convolution{data = net, kernel = {5, 5}, num_filter = 50}
  net = mx.sym.Activation{data = net, act_type = 'tanh'}
  net = mx.sym.Pooling{data = net, pool_type = 'max', kernel = {2, 2}, stride = {2, 2}}
  net = mx.sym.Flatten{data = net}
  net = mx.sym.FullyConnected{data = net, num_hidden = 500}
  net = mx.sym.Activation{data = net, act_type = 'tanh'}
  net = mx.sym.FullyConnected{data = net, num_hidden = 10}
  return mx.sym.SoftmaxOutput{data = net, name = 'softmax'}
end

local function time_steps(name, net, data_shape)
  local batch = data_shape[1]
  local mod = mx.mod.Module(net)
  mod:bind{data_shapes = {{name = 'data', shape = data_shape}},
    label_shapes = {{name = 'softmax_label', shape = {batch}}}}
  mod:init_params{initializer = mx.init.Xavier()}
  mod:init_optimizer{optimizer = 'sgd', optimizer_params = {learning_rate = 0.01, momentum = 0.9}}
  local b = {data = {mx.nd.random.uniform(0, 1, data_shape)},
    label = {mx.nd.random.randint(0, 10, {batch}):astype('float32')}}
  local function step()
    mod:forward(b, true)
    mod:backward()
    mod:update()
  end
  for _ = 1, 5 do step() end
  mx.nd.waitall()
  local t0 = mx.mod.now()
  for _ = 1, steps do step() end
  mx.nd.waitall()
  print(('%s: %.3f ms/step'):format(name, (mx.mod.now() - t0) / steps * 1e3))
end

time_steps('tessera_mlp_step_b100', mlp(), {100, 784})
if mx.nd.Convolution and mx.nd.Pooling then
  time_steps('tessera_lenet_step_b64', lenet(), {64, 1, 28, 28})
else
  print('tessera_lenet_step_b64: unavailable')
end
