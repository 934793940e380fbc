-- LeNet on MNIST with mx.gluon: a HybridSequential (hybridized), the
-- Trainer, a DataLoader over vision.MNIST with the ToTensor transform.
--   tessera scripts/training/gluon_mnist.lua --data DIR [--epochs 10]
--     [--batch-size 64] [--lr 0.05] [--momentum 0.9] [--seed 1]
--     [--hybridize 1] [--num-examples N] [--save PREFIX]
local here = (arg and arg[0] or ''):match('^(.*)/') or '.'
local common = dofile(here .. '/mnist_common.lua')

local o = common.parse(arg or {}, {data = 'data/mnist', epochs = 10, batch_size = 64, lr = 0.05,
  momentum = 0.9, seed = 1, hybridize = 1, num_examples = 0, save = ''},
  'usage: gluon_mnist.lua --data DIR [--epochs N] [--batch-size N] [--lr X] [--seed N] '
  .. '[--hybridize 0|1]')
mx.random.seed(o.seed)

local gluon = mx.gluon
local nn = gluon.nn
local T = gluon.data.vision.transforms

-- The data: uint8 images, made float32 CHW in [0, 1] a batch at a time.
local function dataset(train)
  local ds = gluon.data.vision.MNIST(o.data, {train = train})
  if o.num_examples > 0 then ds = ds:take(o.num_examples) end
  return ds:transform_first(T.ToTensor())
end
local train_loader = gluon.data.DataLoader(dataset(true), {batch_size = o.batch_size,
  shuffle = true, last_batch = 'keep'})
local test_loader = gluon.data.DataLoader(dataset(false), {batch_size = 256})

local net = nn.HybridSequential()
net:name_scope(function()
  net:add(nn.Conv2D(20, 5, {activation = 'tanh'}), nn.MaxPool2D(2, {strides = 2}),
    nn.Conv2D(50, 5, {activation = 'tanh'}), nn.MaxPool2D(2, {strides = 2}),
    nn.Flatten(), nn.Dense(500, {activation = 'tanh'}), nn.Dense(10))
end)
net:initialize(mx.init.Xavier())
if o.hybridize ~= 0 then net:hybridize() end
print(net)

local trainer = gluon.Trainer(net:collect_params(), 'sgd',
  {learning_rate = o.lr, momentum = o.momentum})
local loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()

local function accuracy(loader)
  local metric = mx.metric.create('acc')
  for x, y in loader:iter() do metric:update({y}, {net(x)}) end
  return metric:get_name_value()[1][2]
end

for epoch = 0, o.epochs - 1 do
  local metric = mx.metric.create('acc')
  local bar = mx.callback.ProgressBar(train_loader:len(), {label = ('Epoch %d '):format(epoch)})
  local loss_sum, n = 0, 0
  for x, y in train_loader:iter() do
    local out
    local loss = mx.autograd.record(function()
      out = net(x)
      return loss_fn(out, y)
    end)
    loss:backward()
    trainer:step(x.shape[1])
    metric:update({y}, {out})
    if n % 50 == 0 then loss_sum = loss:mean():totable()[1] end
    n = n + 1
    bar:update(x.shape[1], ('acc=%.4f loss=%.4f'):format(metric:get_name_value()[1][2], loss_sum))
  end
  local test_acc = accuracy(test_loader)
  local dt, speed = bar:elapsed()
  bar:finish(('Epoch %d: train acc=%.4f, test acc=%.4f, %.1fs (%.0f samples/s)'):format(epoch,
    metric:get_name_value()[1][2], test_acc, dt, speed))
end

local acc = accuracy(test_loader)
print(('test accuracy: %.4f'):format(acc))
if o.save ~= '' then
  net:save_parameters(o.save .. '.params')
  print('parameters: ' .. o.save .. '.params')
end
return acc
