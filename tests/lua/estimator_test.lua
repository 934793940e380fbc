-- mx.gluon.contrib.estimator.Estimator: the layer API's training loop keeps
-- the metrics per batch and per epoch, evaluates, runs event handlers and
-- writes the curves.

local gluon = mx.gluon

local function data(n)
  mx.random.seed(3)
  local x = mx.nd.random.uniform(-1, 1, { n, 4 })
  local t = x:totable()
  local y = {}
  for i = 1, n do y[i] = (t[i][1] + t[i][2] > 0) and 1 or 0 end
  return gluon.data.DataLoader(gluon.data.ArrayDataset(x, mx.nd.array(y)), { batch_size = 8 })
end

local function estimator()
  mx.random.seed(1)
  local net = gluon.nn.HybridSequential()
  net:add(gluon.nn.Dense(16, { activation = 'relu' }), gluon.nn.Dense(2))
  net:initialize(mx.init.Xavier())
  local trainer = gluon.Trainer(net:collect_params(), 'sgd', { learning_rate = 0.5 })
  return gluon.contrib.estimator.Estimator { net = net, loss = gluon.loss.SoftmaxCrossEntropyLoss(),
    trainer = trainer, train_metrics = 'acc' }
end

test('fit learns, keeps per-batch and per-epoch metrics, evaluates, plots', function()
  local est = estimator()
  local train, val = data(64), data(32)
  local png = os.tmpname() .. '.png'
  local history = est:fit(train, { val_data = val, epochs = 6, progress = false, plot = png })
  assert_eq(#history, 6)
  assert_eq(#history[1].batches, 8)
  assert_eq(history[6].train[1], 'accuracy')
  assert_eq(history[6].validation[1][1], 'accuracy')
  assert_eq(history[6].train[2] > 0.85, true, 'train accuracy ' .. history[6].train[2])
  assert_eq(history[6].loss < history[1].loss, true)
  local acc = est:evaluate(val)[1][2]
  assert_near(acc, history[6].validation[1][2], 1e-6)
  local f = assert(io.open(png, 'rb'))
  assert_eq(f:read(4):sub(2, 4), 'PNG')
  f:close()
  os.remove(png)
  os.remove(png .. '.dat')
end)

test('event handlers see every event; batch_end returning true stops', function()
  local est = estimator()
  local seen = {}
  local handler = {}
  for _, e in ipairs({ 'train_begin', 'epoch_begin', 'batch_begin', 'batch_end', 'epoch_end',
    'train_end' }) do
    handler[e] = function(_, _, info)
      seen[e] = (seen[e] or 0) + 1
      if e == 'batch_end' and info.epoch == 1 and info.nbatch == 3 then return true end
    end
  end
  local history = est:fit(data(64), { epochs = 5, progress = false, event_handlers = { handler } })
  assert_eq(#history, 2)  -- stopped in the second epoch
  assert_eq(seen.train_begin, 1)
  assert_eq(seen.train_end, 1)
  assert_eq(seen.batch_end, 8 + 3)
  assert_eq(#history[2].batches, 3)
  assert_error(function() gluon.contrib.estimator.Estimator { net = 3, loss = 1 } end,
    'net must be a gluon Block')
end)
