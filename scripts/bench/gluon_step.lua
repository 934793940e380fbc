-- One Gluon training step (record the forward and the loss, backward,
-- Trainer step with SGD and momentum) of LeNet (MNIST shapes, batch 64) and
-- of ResNet-18 v1 at 64x64 (batch 16): imperative, hybridized, and the same
-- network traced into a symbol under mx.mod.Module; random data. With
-- `memory` as the third argument, only the memory of the ResNet-18
-- hybridized step, in this fresh process: the CPU pool's peak, and the
-- process's resident-set high-water mark grown from before the model was
-- made (what scripts/bench/gluon_step_torch.py measures for PyTorch), with a
-- wait after each step, as PyTorch's eager step ends with its work done.
-- With `memory-runahead`, the same without the waits: the Lua thread then
-- runs steps ahead of the engine, and the outputs of the steps queued add
-- up to the engine's bound on bytes in flight (TESSERA_ENGINE_MAX_INFLIGHT_BYTES,
-- 32 MiB by default; docs/engine.md).
-- Printed as `name: value unit` lines.
--   tessera scripts/bench/gluon_step.lua [steps] [resnet_steps] [memory|memory-runahead]
local steps = tonumber(arg and arg[1]) or 50
local resnet_steps = tonumber(arg and arg[2]) or 10
local memory_only = arg and (arg[3] == 'memory' or arg[3] == 'memory-runahead')
local runahead = arg and arg[3] == 'memory-runahead'
local gluon, nn = mx.gluon, mx.gluon.nn

-- kB from /proc/self/status ('VmRSS', 'VmHWM').
local function status_kb(field)
  local f = io.open('/proc/self/status')
  if not f then return 0 end
  local text = f:read('*a')
  f:close()
  return tonumber(text:match(field .. ':%s*(%d+)')) or 0
end

local function lenet()
  local net = nn.HybridSequential()
  net:add(nn.Conv2D(20, 5, {activation = 'tanh'}), nn.MaxPool2D(2, {strides = 2}),
    nn.Conv2D(50, 5, {activation = 'tanh'}), nn.MaxPool2D(2, {strides = 2}),
    nn.Flatten(), nn.Dense(500, {activation = 'tanh'}), nn.Dense(10))
  return net
end

local function resnet18()
  return gluon.model_zoo.vision.resnet18_v1()
end

local function data(shape, classes)
  return mx.nd.random.uniform(0, 1, shape),
    mx.nd.random.randint(0, classes, {shape[1]}):astype('float32')
end

local function time_loop(n, step)
  for _ = 1, 3 do step() end
  mx.nd.waitall()
  local t0 = mx.mod.now()
  for _ = 1, n do step() end
  mx.nd.waitall()
  return (mx.mod.now() - t0) / n * 1e3
end

local function gluon_step(make, shape, classes, hybrid, n, wait_each)
  mx.random.seed(1)
  local net = make()
  net:initialize(mx.init.Xavier())
  if hybrid then net:hybridize() end
  local trainer = gluon.Trainer(net:collect_params(), 'sgd', {learning_rate = 0.01, momentum = 0.9})
  local loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
  local x, y = data(shape, classes)
  return time_loop(n, function()
    local loss = mx.autograd.record(function() return loss_fn(net(x), y) end)
    loss:backward()
    trainer:step(shape[1])
    if wait_each then mx.nd.waitall() end
  end)
end

-- The same network traced into a symbol, with SoftmaxOutput, under Module.
local function module_step(make, shape, classes, n)
  mx.random.seed(1)
  local net = make()
  local sym = mx.sym.SoftmaxOutput(net(mx.sym.Variable('data')), mx.sym.Variable('softmax_label'),
    {name = 'softmax'})
  local mod = mx.mod.Module(sym)
  mod:bind{data_shapes = {{name = 'data', shape = shape}},
    label_shapes = {{name = 'softmax_label', shape = {shape[1]}}}}
  mod:init_params{initializer = mx.init.Xavier()}
  mod:init_optimizer{optimizer = 'sgd', optimizer_params = {learning_rate = 0.01, momentum = 0.9}}
  local x, y = data(shape, classes)
  local b = {data = {x}, label = {y}}
  return time_loop(n, function()
    mod:forward(b, true)
    mod:backward()
    mod:update()
  end)
end

local function report(name, ms) print(('%s: %.3f ms/step'):format(name, ms)) end

if not memory_only then
  report('tessera_gluon_lenet_imperative_b64', gluon_step(lenet, {64, 1, 28, 28}, 10, false, steps))
  report('tessera_gluon_lenet_hybrid_b64', gluon_step(lenet, {64, 1, 28, 28}, 10, true, steps))
  report('tessera_module_lenet_b64', module_step(lenet, {64, 1, 28, 28}, 10, steps))
  report('tessera_gluon_resnet18_imperative_b16', gluon_step(resnet18, {16, 3, 64, 64}, 1000,
    false, resnet_steps))
  report('tessera_gluon_resnet18_hybrid_b16', gluon_step(resnet18, {16, 3, 64, 64}, 1000, true,
    resnet_steps))
  report('tessera_module_resnet18_b16', module_step(resnet18, {16, 3, 64, 64}, 1000, resnet_steps))
  return
end
local _ = gluon.model_zoo.vision  -- loaded before the baseline
local rss0 = status_kb('VmRSS')
gluon_step(resnet18, {16, 3, 64, 64}, 1000, true, resnet_steps, not runahead)
local suffix = runahead and '_runahead' or ''
print(('tessera_gluon_resnet18_hybrid_pool_peak%s: %.1f MB'):format(suffix,
  mx.context.memory_stats(mx.cpu()).peak / 2 ^ 20))
print(('tessera_gluon_resnet18_hybrid_rss_growth%s: %.1f MB'):format(suffix,
  (status_kb('VmHWM') - rss0) / 1024))
