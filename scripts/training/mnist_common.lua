-- What the MNIST training scripts share: command-line options, the data
-- iterators, the MLP, training and the final report. Loaded with dofile by
-- mnist_mlp.lua, lenet.lua and scripts/ops/custom_softmax.lua.
local M = {}

-- --key value pairs over `defaults` (numbers stay numbers).
function M.parse(args, defaults, usage)
  local opts = {}
  for k, v in pairs(defaults) do opts[k] = v end
  local i = 1
  while i <= #args do
    local key = args[i]:match('^%-%-([%w%-]+)$')
    if not key or args[i + 1] == nil then error(usage .. ' (got ' .. args[i] .. ')', 0) end
    key = key:gsub('%-', '_')
    if defaults[key] == nil then error('unknown option --' .. key:gsub('_', '-') .. '; ' .. usage, 0) end
    opts[key] = type(defaults[key]) == 'number' and tonumber(args[i + 1]) or args[i + 1]
    i = i + 2
  end
  return opts
end

-- Train and test iterators over PNG records (o.rec: PREFIX_train.rec/.idx
-- and PREFIX_test.rec/.idx, as scripts/tools/mnist_to_rec.lua writes them),
-- pixels scaled to [0, 1] as MNISTIter does; decoded on two threads ahead
-- of training (mx.io.ImageRecordIter).
local function record_iterators(o, flat, kv)
  local function iter(part, shuffle, parts, index)
    return mx.io.ImageRecordIter{batch_size = o.batch_size, data_shape = {1, 28, 28},
      path_imgrec = o.rec .. '_' .. part .. '.rec', path_imgidx = o.rec .. '_' .. part .. '.idx',
      shuffle = shuffle, seed = o.seed, scale = 1 / 255, preprocess_threads = 2,
      num_parts = parts, part_index = index}
  end
  if flat then error('--rec: the records hold 28x28 images; flat data is not made from them', 0) end
  return iter('train', true, kv and kv.num_workers or 1, kv and kv.rank or 0),
    iter('test', false, 1, 0)
end

-- --kv-store TYPE: the store Module:fit reduces gradients through ('' for
-- none). With a store across processes (dist_sync, under mpirun or
-- tessera --launch N), each worker trains on its share of the training set
-- and only rank 0 reports and writes the checkpoint.
function M.kvstore(o)
  if not o.kv_store or o.kv_store == '' then return nil end
  return mx.kv.create(o.kv_store)
end

local function rank0(kv) return not kv or kv.rank == 0 end

-- Train and test iterators over the four files in o.data (or the records
-- in o.rec); with a store, the training set's share of this worker.
function M.iterators(o, flat, kv)
  if o.rec and o.rec ~= '' then return record_iterators(o, flat, kv) end
  local function file(name) return o.data .. '/' .. name end
  local n = o.num_examples > 0 and o.num_examples or nil
  local train = mx.io.MNISTIter{image = file('train-images-idx3-ubyte.gz'),
    label = file('train-labels-idx1-ubyte.gz'), batch_size = o.batch_size, flat = flat,
    shuffle = true, seed = o.seed, num_examples = n,
    num_parts = kv and kv.num_workers or 1, part_index = kv and kv.rank or 0}
  train = mx.io.PrefetchingIter(train)  -- batches made on a background thread
  local test = mx.io.MNISTIter{image = file('t10k-images-idx3-ubyte.gz'),
    label = file('t10k-labels-idx1-ubyte.gz'), batch_size = o.batch_size, flat = flat,
    num_examples = n}
  return train, test
end

-- The 784-128-64-10 multilayer perceptron (relu) up to its last layer's
-- scores, 'fc3'; the scripts put their loss on top.
function M.mlp()
  local net = mx.sym.Variable('data')
  net = mx.sym.FullyConnected{data = net, num_hidden = 128, name = 'fc1'}
  net = mx.sym.Activation{data = net, act_type = 'relu', name = 'relu1'}
  net = mx.sym.FullyConnected{data = net, num_hidden = 64, name = 'fc2'}
  net = mx.sym.Activation{data = net, act_type = 'relu', name = 'relu2'}
  return mx.sym.FullyConnected{data = net, num_hidden = 10, name = 'fc3'}
end

-- Trains `net` with SGD and momentum, checkpoints the last epoch, prints
-- the test accuracy and returns it.
function M.train(net, o, train, test, kv)
  local mod = mx.mod.Module(net)
  local lead = rank0(kv)
  mod:fit(train, {eval_data = test, num_epoch = o.epochs, optimizer = 'sgd',
    optimizer_params = {learning_rate = o.lr, momentum = o.momentum},
    initializer = mx.init.Xavier(), eval_metric = 'acc', kvstore = kv or 'local',
    progress = lead,
    epoch_end_callback = lead and mx.callback.do_checkpoint(o.checkpoint, o.epochs) or nil})
  local acc = mod:score(test, 'acc')[1][2]
  if lead then
    print(('test accuracy: %.4f%s'):format(acc,
      kv and (' (%d workers, %s)'):format(kv.num_workers, kv.type) or ''))
    print(('checkpoint: %s-symbol.json, %s-%04d.params'):format(o.checkpoint, o.checkpoint, o.epochs))
  end
  return acc, mod
end

return M
