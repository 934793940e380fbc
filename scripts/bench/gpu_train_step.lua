-- Training steps on gpu(0) through mx.mod.Module: LeNet (MNIST shapes,
-- batch 64) and ResNet-18 v1 (224x224, batch 32; the model zoo's network
-- traced into a symbol), forward, backward and an SGD-momentum update, on
-- random data already on the GPU; float32 (exact: no TF32). Printed as
-- `name: value unit` lines, with the host synchronisations inside the timed
-- steps (mx.profiler.host_syncs(): ops that waited for their stream; none
-- is the goal); without a GPU it says so. With `profile` as the
-- third argument, the ResNet-18 steps are then run again under the
-- profiler and its table (time per op name) printed.
--   tessera scripts/bench/gpu_train_step.lua [steps] [resnet_steps] [profile]
local steps = tonumber(arg and arg[1]) or 50
local resnet_steps = tonumber(arg and arg[2]) or 20
local profile = arg and arg[3] == 'profile'
if mx.context.num_gpus() == 0 then
  print('tessera_gpu_lenet_step_b64: unavailable (no GPU)')
  print('tessera_gpu_resnet18_step_b32: unavailable (no GPU)')
  return
end
local ctx = mx.gpu(0)
local gluon, nn = mx.gluon, mx.gluon.nn

local function lenet()
  local net = nn.HybridSequential()
  net:add(nn.Conv2D(20, 5, {activation = 'tanh'}), nn.MaxPool2D(2, {strides = 2}),
    nn.Conv2D(50, 5, {activation = 'tanh'}), nn.MaxPool2D(2, {strides = 2}),
    nn.Flatten(), nn.Dense(500, {activation = 'tanh'}), nn.Dense(10))
  return net
end

local function module_step(make, shape, classes, n, profiled)
  mx.random.seed(1)
  local sym = mx.sym.SoftmaxOutput(make()(mx.sym.Variable('data')),
    mx.sym.Variable('softmax_label'), {name = 'softmax'})
  local mod = mx.mod.Module(sym, {context = ctx})
  mod:bind{data_shapes = {{name = 'data', shape = shape}},
    label_shapes = {{name = 'softmax_label', shape = {shape[1]}}}}
  mod:init_params{initializer = mx.init.Xavier()}
  mod:init_optimizer{optimizer = 'sgd', optimizer_params = {learning_rate = 0.01, momentum = 0.9}}
  local b = {data = {mx.nd.random.uniform(0, 1, shape):as_in_context(ctx)},
    label = {mx.nd.random.randint(0, classes, {shape[1]}):astype('float32'):as_in_context(ctx)}}
  local function step()
    mod:forward(b, true)
    mod:backward()
    mod:update()
  end
  for _ = 1, 5 do step() end
  mx.nd.waitall()
  local syncs = mx.profiler.host_syncs()
  local t0 = mx.mod.now()
  for _ = 1, n do step() end
  mx.nd.waitall()
  local ms = (mx.mod.now() - t0) / n * 1e3
  syncs = (mx.profiler.host_syncs() - syncs) / n
  if profiled then
    mx.profiler.set_state('run')
    for _ = 1, n do step() end
    mx.nd.waitall()
    mx.profiler.set_state('stop')
    print(mx.profiler.dumps{sort_by = 'total', reset = true})
  end
  return ms, syncs
end

local lenet_ms, lenet_syncs = module_step(lenet, {64, 1, 28, 28}, 10, steps)
print(('tessera_gpu_lenet_step_b64: %.3f ms/step'):format(lenet_ms))
print(('gpu_lenet_step_b64_host_syncs: %g per step'):format(lenet_syncs))
local resnet_ms, resnet_syncs = module_step(gluon.model_zoo.vision.resnet18_v1,
  {32, 3, 224, 224}, 1000, resnet_steps, profile)
print(('tessera_gpu_resnet18_step_b32: %.3f ms/step'):format(resnet_ms))
print(('gpu_resnet18_step_b32_host_syncs: %g per step'):format(resnet_syncs))
