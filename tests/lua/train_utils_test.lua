-- mx.init, mx.metric, mx.optimizer schedules, mx.viz.

local close = mx.test_utils.assert_almost_equal

test('initializers follow the name rules', function()
  local w = mx.nd.zeros({64, 32})
  mx.init.Xavier()('fc1_weight', w)
  local v = w:reshape({64 * 32}):totable()
  local biggest, mean = 0, 0
  for _, x in ipairs(v) do biggest = math.max(biggest, math.abs(x)); mean = mean + x / #v end
  assert(biggest <= math.sqrt(3 / 48) and biggest > 0.2, 'xavier bound ' .. biggest)
  assert(math.abs(mean) < 0.02, 'xavier mean ' .. mean)
  local b = mx.nd.ones({4})
  mx.init.Xavier()('fc1_bias', b)
  assert_eq(b:totable(), {0, 0, 0, 0})
  local g = mx.nd.zeros({2})
  mx.init.Normal()('bn_gamma', g)
  assert_eq(g:totable(), {1, 1})
  mx.init.Constant{value = 3}('c_weight', g)
  assert_eq(g:totable(), {3, 3})
  assert_error(function() mx.init.Uniform()('foo', g) end, "no rule for parameter 'foo'")
  assert_error(function() mx.init.Xavier()('v_weight', mx.nd.zeros({3})) end, 'at least 2')
end)

test('metrics', function()
  local m = mx.metric.Accuracy()
  m:update({mx.nd.array({0, 1, 2})}, {mx.nd.array({{0.9, 0.1, 0}, {0.2, 0.7, 0.1}, {0.5, 0.4, 0.1}})})
  local name, value = m:get()
  assert_eq(name, 'accuracy')
  assert_near(value, 2 / 3)
  m:reset()
  assert(m:get() == 'accuracy')
  local ce = mx.metric.create('ce')
  ce:update(mx.nd.array({0, 1}), mx.nd.array({{0.5, 0.5}, {0.25, 0.75}}))
  assert_near(select(2, ce:get()), (-math.log(0.5) - math.log(0.75)) / 2)
  local mse = mx.metric.MSE()
  mse:update(mx.nd.array({1, 2}), mx.nd.array({1.5, 2}))
  assert_near(select(2, mse:get()), 0.125)
  local f1 = mx.metric.F1()
  f1:update(mx.nd.array({1, 0, 1, 1}), mx.nd.array({1, 1, 0, 1}))
  assert_near(select(2, f1:get()), 2 / 3)
  local top = mx.metric.TopKAccuracy{top_k = 2}
  top:update(mx.nd.array({2, 0}), mx.nd.array({{0.1, 0.5, 0.4}, {0.1, 0.5, 0.4}}))
  assert_near(select(2, top:get()), 0.5)
  local c = mx.metric.create({'acc', 'mse'})
  assert_eq(#c:get_name_value(), 2)
  assert_error(function() mx.metric.create('nope') end, "unknown metric 'nope'")
  assert_error(function() m:update({mx.nd.array({1})}, {}) end, '1 labels for 0')
end)

test('learning-rate schedules and optimizer errors', function()
  local f = mx.optimizer.FactorScheduler{step = 10, factor = 0.5}
  f.base_lr = 1
  assert_eq({f(0), f(10), f(25)}, {1, 0.5, 0.25})
  local m = mx.lr_scheduler.MultiFactorScheduler{step = {5, 8}, factor = 0.1}
  m.base_lr = 1
  assert_near(m(5), 1)
  assert_near(m(6), 0.1)
  assert_near(m(9), 0.01)
  assert_error(function() mx.optimizer.create('nope') end, "unknown optimizer 'nope'")
  local opt = mx.optimizer.create('sgd', {learning_rate = 0.1, param_idx2name = {'fc_weight', 'fc_bias'}})
  assert_eq(opt.wd_mult.fc_bias, 0)
  assert_eq(opt.wd_mult.fc_weight, nil)
end)
