-- A 784-128-64-10 multilayer perceptron on MNIST (relu, SGD with momentum).
--   tessera scripts/training/mnist_mlp.lua --data DIR [--epochs 10]
--     [--batch-size 100] [--lr 0.1] [--momentum 0.9] [--seed 1]
--     [--checkpoint PREFIX] [--num-examples N] [--kv-store TYPE]
-- DIR holds the four MNIST files (train-images-idx3-ubyte.gz, ...).
local here = (arg and arg[0] or ''):match('^(.*)/') or '.'
local common = dofile(here .. '/mnist_common.lua')

local o = common.parse(arg or {}, {data = 'data/mnist', epochs = 10, batch_size = 100, lr = 0.1,
  momentum = 0.9, seed = 1, checkpoint = 'mnist_mlp', num_examples = 0, kv_store = ''},
  'usage: mnist_mlp.lua --data DIR [--epochs N] [--batch-size N] [--lr X] [--seed N]')
mx.random.seed(o.seed)
local kv = common.kvstore(o)
local train, test = common.iterators(o, true, kv)

local net = mx.sym.SoftmaxOutput{data = common.mlp(), name = 'softmax'}

if not kv or kv.rank == 0 then mx.viz.print_summary(net, {data = {o.batch_size, 784}}) end
return common.train(net, o, train, test, kv)
