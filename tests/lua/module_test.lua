-- mx.mod.Module end to end on data made here: fit lowers the loss and
-- raises accuracy, checkpoints reload bit-exact (MXNet's file names and
-- arg:/aux: keys), predict and score agree; and the MNIST scripts train on a
-- small synthetic MNIST written as IDX files.

local idx_fixture = dofile((debug.getinfo(1, 'S').source:match('^@(.*)/lua/[^/]*$') or 'tests')
  .. '/data/lua/idx_fixture.lua')

local here = debug.getinfo(1, 'S').source:match('^@(.*)/') or '.'
local N, D, C = 120, 10, 3

local seed = 99
local function rand()
  seed = (seed * 1103515245 + 12345) % 2147483648
  return seed / 2147483648 * 2 - 1
end

local function teacher_data()
  local x, y = {}, {}
  local w = {}
  for i = 1, D * C do w[i] = rand() end
  for i = 0, N - 1 do
    local best, arg = -math.huge, 0
    for d = 1, D do x[i * D + d] = rand() end
    for c = 0, C - 1 do
      local s = 0
      for d = 1, D do s = s + x[i * D + d] * w[(d - 1) * C + c + 1] end
      if s > best then best, arg = s, c end
    end
    y[i + 1] = arg
  end
  return mx.nd.array(x):reshape({N, D}), mx.nd.array(y)
end

local function mlp()
  local net = mx.sym.FullyConnected{data = mx.sym.Variable('data'), num_hidden = 16, name = 'fc1'}
  net = mx.sym.Activation{data = net, act_type = 'relu', name = 'relu1'}
  net = mx.sym.FullyConnected{data = net, num_hidden = C, name = 'fc2'}
  return mx.sym.SoftmaxOutput{data = net, name = 'softmax'}
end

test('fit lowers the loss; checkpoints reload bit-exact', function()
  if not mx.nd.FullyConnected or not mx.nd.SoftmaxOutput then
    print('  skipped: FullyConnected / SoftmaxOutput not registered')
    return
  end
  mx.random.seed(1)
  local x, y = teacher_data()
  local train = mx.io.NDArrayIter{data = x, label = y, batch_size = 20, shuffle = true}
  local mod = mx.mod.Module(mlp())
  local hist = mod:fit(train, {num_epoch = 15, optimizer = 'sgd', progress = false,
    optimizer_params = {learning_rate = 0.5, momentum = 0.9}, initializer = mx.init.Xavier(),
    eval_metric = {'acc', 'ce'}})
  local first, last = hist[1].train, hist[#hist].train
  assert(last[2][2] < first[2][2] * 0.7, ('cross-entropy %f -> %f'):format(first[2][2], last[2][2]))
  local acc = mod:score(train, 'acc')[1][2]
  assert(acc > 0.85, 'accuracy ' .. acc)

  local prefix = os.tmpname()
  mod:save_checkpoint(prefix, 3)
  local loaded = mx.mod.Module.load(prefix, 3)
  loaded:bind{data_shapes = train.provide_data, label_shapes = train.provide_label,
    for_training = false}
  local a1 = mod:get_params()
  local a2 = loaded:get_params()
  for name, arr in pairs(a1) do
    assert_eq(a2[name]:totable(), arr:totable(), name)
  end
  local ordered = mx.io.NDArrayIter{data = x, label = y, batch_size = 20}
  local p1, p2 = mod:predict(ordered), loaded:predict(ordered)
  assert_eq(p1:totable(), p2:totable())
  assert_eq(p1.shape, {N, C})
  local saved = mx.nd.load(prefix .. '-0003.params')
  assert(saved['arg:fc1_weight'] and saved['arg:fc2_bias'], 'arg: keys')
  os.remove(prefix .. '-symbol.json')
  os.remove(prefix .. '-0003.params')
  os.remove(prefix)
end)

-- Ten "digits": class k lights rows 2k+1..2k+3 of a 28x28 image, plus noise.
local function write_mnist(dir, n)
  local function write(name, magic, dims, bytes)
    idx_fixture.write(dir .. '/' .. name, magic, dims, bytes)
  end
  for _, split in ipairs({{'train', n}, {'t10k', n}}) do
    local pixels, labels = {}, {}
    for i = 1, split[2] do
      local k = (i - 1) % 10
      labels[i] = string.char(k)
      local img = {}
      for r = 0, 27 do
        for c = 0, 27 do
          local on = r >= 2 * k + 1 and r <= 2 * k + 3
          local v = on and 200 or 0
          v = math.max(0, math.min(255, v + math.floor(rand() * 40)))
          img[#img + 1] = string.char(v)
        end
      end
      pixels[i] = table.concat(img)
    end
    -- IDX files need not be compressed: zlib reads plain files too.
    write(split[1] .. '-images-idx3-ubyte.gz', 2051, {split[2], 28, 28}, pixels)
    write(split[1] .. '-labels-idx1-ubyte.gz', 2049, {split[2]}, labels)
  end
end

test('the MNIST MLP script trains on a small synthetic MNIST', function()
  if not mx.nd.FullyConnected or not mx.nd.SoftmaxOutput or not mx.nd.sgd_mom_update then
    print('  skipped: the MLP operators are not registered')
    return
  end
  local dir = os.tmpname()
  os.remove(dir)
  assert(os.execute('mkdir -p ' .. dir) == 0 or true)
  write_mnist(dir, 200)
  local prefix = dir .. '/mlp'
  local out = {}
  local script = here .. '/../../scripts/training/mnist_mlp.lua'
  local chunk = assert(loadfile(script))
  -- The script's own globals: its arguments, and a print that records.
  setfenv(chunk, setmetatable({
    arg = {[0] = script, '--data', dir, '--epochs', '3', '--batch-size', '20',
      '--checkpoint', prefix},
    print = function(...) out[#out + 1] = table.concat({...}, '\t') end,  -- keep the log quiet
  }, {__index = _G}))
  local ok, acc = pcall(chunk)  -- the script returns the test accuracy
  assert(ok, acc)
  assert(acc and acc > 0.9, 'accuracy ' .. tostring(acc))
  local sym, args = mx.mod.load_checkpoint(prefix, 3)
  assert_eq(sym:list_outputs(), {'softmax_output'})
  assert(args.fc1_weight, 'fc1_weight in the checkpoint')
  os.execute('rm -rf ' .. dir)
end)

test('a network without a loss layer binds with label shapes given (they are ignored)', function()
  if not mx.nd.FullyConnected then return end
  local net = mx.sym.FullyConnected{data = mx.sym.Variable('data'), num_hidden = 2, name = 'fc'}
  local mod = mx.mod.Module(net)
  assert_eq(mod.label_names, {})
  mod:bind{data_shapes = {{name = 'data', shape = {4, 3}}},
    label_shapes = {{name = 'softmax_label', shape = {4}}}, for_training = false}
  mod:init_params{initializer = mx.init.One()}
  mod:forward({data = {mx.nd.ones({4, 3})}}, false)
  mx.test_utils.assert_almost_equal(mod:get_outputs()[1], {{3, 3}, {3, 3}, {3, 3}, {3, 3}})
end)

test("keyword tables with MXNet's names beside positional arguments", function()
  local x, y = teacher_data()
  local it = mx.io.NDArrayIter{data = x, label = y, batch_size = 20}
  mx.random.seed(3)
  local mod = mx.mod.Module{symbol = mlp(), context = mx.cpu()}
  assert_eq(mod.context, mx.cpu())
  local history = mod:fit{train_data = it, eval_data = it, num_epoch = 2, progress = false,
                          optimizer_params = {learning_rate = 0.5}}
  assert_eq(#history, 2)
  local kw = mod:score{eval_data = it, eval_metric = 'acc'}
  local pos = mod:score(it, 'acc')
  assert_eq(kw, pos)
  assert_eq(kw[1][1], 'accuracy')
  local out = mod:predict{eval_data = it}
  assert_eq(out.shape, {N, C})
  assert_error(function() mod:score{eval_data = it, nope = 1} end, "score: unknown keyword 'nope'")
  -- the positional forms are unchanged
  local same = mx.mod.Module(mlp(), {context = mx.cpu()})
  assert_eq(same.context, mx.cpu())
  -- optimizer.create and metric.create too
  local opt = mx.optimizer.create{name = 'sgd', learning_rate = 0.25}
  assert_eq(opt.lr or opt.learning_rate, 0.25)
  assert_eq(mx.metric.create{metric = 'acc'}:get(), mx.metric.create('acc'):get())
  local dir = os.tmpname()
  os.remove(dir)
  mod:save_checkpoint{prefix = dir, epoch = 3}
  local sym, args = mx.mod.load_checkpoint{prefix = dir, epoch = 3}
  assert_eq(sym:list_outputs(), {'softmax_output'})
  assert(args.fc1_weight ~= nil)
  os.remove(dir .. '-symbol.json')
  os.remove(dir .. '-0003.params')
end)

test('data parallel Module on two contexts: the same weights as on one', function()
  -- BatchNorm would see each context's slice only (not synchronised, as in
  -- MXNet): the equivalence holds for layers without batch statistics.
  local function net(bn)
    local d = mx.sym.Variable('data')
    local h = mx.sym.FullyConnected{data = d, num_hidden = 6, name = 'fc1'}
    if bn then h = mx.sym.BatchNorm{data = h, name = 'bn'} end
    h = mx.sym.Activation{data = h, act_type = 'tanh'}
    h = mx.sym.FullyConnected{data = h, num_hidden = 3, name = 'fc2'}
    return mx.sym.SoftmaxOutput{data = h, name = 'softmax'}
  end
  local x = mx.nd.random.uniform(-1, 1, {8, 5})
  local y = mx.nd.array({0, 1, 2, 0, 1, 2, 0, 1})
  local function run(ctx, opts)
    opts = opts or {}
    local mod = mx.mod.Module(net(opts.bn), {context = ctx, work_load_list = opts.work_load_list})
    mod:bind{data_shapes = {{name = 'data', shape = {8, 5}}},
      label_shapes = {{name = 'softmax_label', shape = {8}}}}
    mx.random.seed(5)
    mod:init_params{initializer = mx.init.Xavier()}
    mod:init_optimizer{optimizer = 'sgd', kvstore = opts.kvstore,
      optimizer_params = {learning_rate = 0.5, momentum = 0.9}}
    for _ = 1, 4 do
      mod:forward({data = {x}, label = {y}}, true)
      mod:backward()
      mod:update()
    end
    mod:forward({data = {x}}, false)
    local a, aux = mod:get_params()
    return mod, a, aux
  end
  local one, args1 = run(mx.cpu(0))
  local two, args2 = run({mx.cpu(0), mx.cpu(1)})
  for n, a in pairs(args1) do
    mx.test_utils.assert_almost_equal(args2[n], a, {rtol = 1e-4, atol = 1e-5, names = {n, n}})
  end
  -- The outputs are joined along the batch.
  assert_eq(two:get_outputs()[1].shape, {8, 3})
  mx.test_utils.assert_almost_equal(two:get_outputs()[1], one:get_outputs()[1], {rtol = 1e-4, atol = 1e-5})
  -- Uneven slices and the store left out give the same.
  local _, args3 = run({mx.cpu(0), mx.cpu(1)}, {work_load_list = {3, 1}, kvstore = false})
  mx.test_utils.assert_almost_equal(args3.fc1_weight, args1.fc1_weight, {rtol = 1e-4, atol = 1e-5})
  assert_eq(two.slices, {{1, 4}, {5, 8}})
  -- Auxiliary states: each context's running statistics, averaged.
  local bn, bn_args, bn_aux = run({mx.cpu(0), mx.cpu(1)}, {bn = true})
  local mean = (bn.execs[1].aux_dict.bn_moving_mean:copyto(mx.cpu())
    + bn.execs[2].aux_dict.bn_moving_mean:copyto(mx.cpu())) / 2
  mx.test_utils.assert_almost_equal(bn_aux.bn_moving_mean, mean)
  assert_eq(bn_args.bn_gamma.shape, {6})
  assert_error(function()
    local m = mx.mod.Module(net(), {context = {mx.cpu(0), mx.cpu(1), mx.cpu(2)}})
    m:bind{data_shapes = {{name = 'data', shape = {2, 5}}}, label_shapes = {{name = 'softmax_label', shape = {2}}}}
  end, 'cannot be split over 3 contexts')
  assert_error(function() mx.mod.Module(net(), {context = {mx.cpu(0)}, work_load_list = {1, 2}}) end,
    'work_load_list has 2 entries for 1 contexts')
end)
