-- LeNet on MNIST: Convolution 20 5x5, tanh, max-pool; Convolution 50 5x5,
-- tanh, max-pool; FullyConnected 500, tanh; FullyConnected 10; SoftmaxOutput.
--   tessera scripts/training/lenet.lua --data DIR [--epochs 10]
--     [--batch-size 64] [--lr 0.05] [--momentum 0.9] [--seed 1]
--     [--checkpoint PREFIX] [--num-examples N] [--kv-store TYPE] [--rec PREFIX]
-- --rec reads PNG records (scripts/tools/mnist_to_rec.lua) instead of the
-- IDX files.
local here = (arg and arg[0] or ''):match('^(.*)/') or '.'
local common = dofile(here .. '/mnist_common.lua')

local o = common.parse(arg or {}, {data = 'data/mnist', epochs = 10, batch_size = 64, lr = 0.05,
  momentum = 0.9, seed = 1, checkpoint = 'lenet', num_examples = 0, rec = '', kv_store = ''},
  'usage: lenet.lua --data DIR [--epochs N] [--batch-size N] [--lr X] [--seed N]')
mx.random.seed(o.seed)
local kv = common.kvstore(o)
local train, test = common.iterators(o, false, kv)

local net = mx.sym.Variable('data')
net = mx.sym.Convolution{data = net, kernel = {5, 5}, num_filter = 20, name = 'conv1'}
net = mx.sym.Activation{data = net, act_type = 'tanh', name = 'tanh1'}
net = mx.sym.Pooling{data = net, pool_type = 'max', kernel = {2, 2}, stride = {2, 2}, name = 'pool1'}
net = mx.sym.Convolution{data = net, kernel = {5, 5}, num_filter = 50, name = 'conv2'}
net = mx.sym.Activation{data = net, act_type = 'tanh', name = 'tanh2'}
net = mx.sym.Pooling{data = net, pool_type = 'max', kernel = {2, 2}, stride = {2, 2}, name = 'pool2'}
net = mx.sym.Flatten{data = net, name = 'flatten'}
net = mx.sym.FullyConnected{data = net, num_hidden = 500, name = 'fc1'}
net = mx.sym.Activation{data = net, act_type = 'tanh', name = 'tanh3'}
net = mx.sym.FullyConnected{data = net, num_hidden = 10, name = 'fc2'}
net = mx.sym.SoftmaxOutput{data = net, name = 'softmax'}

if not kv or kv.rank == 0 then mx.viz.print_summary(net, {data = {o.batch_size, 1, 28, 28}}) end
return common.train(net, o, train, test, kv)
