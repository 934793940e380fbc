-- exe:set_monitor_callback and mx.monitor.Monitor (MXNet's), and
-- Module:install_monitor: names, order, statistics against values computed
-- directly.

local function assert_true(cond, msg) assert_eq(not not cond, true, msg) end

local function close(a, b, tol)
  mx.test_utils.assert_almost_equal(a, b, { rtol = tol or 1e-5, atol = tol or 1e-5 })
end

local function chain()
  local x = mx.sym.Variable('data')
  local a = mx.sym._mul_scalar { data = x, scalar = 2, name = 'n1' }
  local b = mx.sym._plus_scalar { data = a, scalar = 1, name = 'n2' }
  return mx.sym.relu { data = b, name = 'n3' }
end

test('set_monitor_callback: every node output by name, in order; inputs with monitor_all', function()
  local exe = chain():simple_bind { ctx = mx.cpu(), data = { 2, 2 }, grad_req = 'null' }
  local seen, values = {}, {}
  exe:set_monitor_callback(function(name, a)
    seen[#seen + 1] = name
    values[name] = a:copy()  -- pushed after the node: holds its value
  end)
  exe:forward { is_train = false, data = mx.nd.array({ { 1, -2 }, { 3, -4 } }) }
  assert_eq(seen, { 'n1_output', 'n2_output', 'n3_output' })
  close(values.n1_output, mx.nd.array({ { 2, -4 }, { 6, -8 } }))
  close(values.n2_output, mx.nd.array({ { 3, -3 }, { 7, -7 } }))
  close(values.n3_output, exe.outputs[1])
  seen = {}
  exe:set_monitor_callback(function(name) seen[#seen + 1] = name end, { monitor_all = true })
  exe:forward(false)
  assert_eq(seen, { 'n1_data', 'n1_output', 'n2_data', 'n2_output', 'n3_data', 'n3_output' })
  exe:set_monitor_callback(nil)
  seen = {}
  exe:forward(false)
  assert_eq(#seen, 0)
end)

test('backward nodes are monitored too; an error in the callback names it', function()
  local x = mx.sym.Variable('x')
  local y = mx.sym.FullyConnected { data = x, num_hidden = 3, name = 'fc' }
  y = mx.sym.MakeLoss { data = mx.sym.sum { data = y, name = 's' }, name = 'loss' }
  local exe = y:simple_bind { ctx = mx.cpu(), x = { 2, 4 } }
  local names = {}
  exe:set_monitor_callback(function(name) names[#names + 1] = name end)
  exe:forward { is_train = true, x = mx.nd.ones({ 2, 4 }) }
  exe:backward()
  local joined = table.concat(names, ' ')
  assert_true(joined:find('fc_output', 1, true) ~= nil, joined)
  assert_true(joined:find('fc_backward', 1, true) ~= nil, joined)
  exe:set_monitor_callback(function() error('stat failed') end)
  assert_error(function() exe:forward(true) end, "monitor callback on 'fc_output': .*stat failed")
  exe:set_monitor_callback(nil)
  exe:forward(true)
  exe.outputs[1]:wait_to_read()
end)

test('Monitor: default statistic norm/sqrt(size), every interval batches, pattern, sort', function()
  local x = mx.sym.Variable('data')
  local net = mx.sym.FullyConnected { data = x, num_hidden = 3, name = 'fc1' }
  net = mx.sym.Activation { data = net, act_type = 'tanh', name = 'act' }
  local exe = net:simple_bind { ctx = mx.cpu(), data = { 4, 5 }, grad_req = 'null' }
  mx.nd.random.uniform(-1, 1, { 3, 5 }):copyto(exe.arg_dict.fc1_weight)
  mx.nd.array({ 0.1, -0.2, 0.3 }):copyto(exe.arg_dict.fc1_bias)
  local data = mx.nd.random.uniform(-1, 1, { 4, 5 })
  local mon = mx.monitor.Monitor(2, nil, '^fc1', true)
  mon:install(exe)
  local function batch()
    mon:tic()
    exe:forward { is_train = false, data = data }
    return mon:toc()
  end
  local res = batch()  -- step 0: watched
  local by = {}
  for _, r in ipairs(res) do
    assert_eq(r[1], 1)
    by[r[2]] = r[3]
  end
  local names = {}
  for _, r in ipairs(res) do names[#names + 1] = r[2] end
  assert_eq(names, { 'fc1_bias', 'fc1_output', 'fc1_weight' })  -- sorted; 'act' filtered out
  local fc = mx.nd.FullyConnected(data, exe.arg_dict.fc1_weight, exe.arg_dict.fc1_bias,
    { num_hidden = 3 })
  local expect = mx.nd.norm(fc):totable()[1] / math.sqrt(12)
  assert_near(by.fc1_output, expect, 1e-5)
  assert_near(by.fc1_bias, math.sqrt(0.01 + 0.04 + 0.09) / math.sqrt(3), 1e-6)
  assert_eq(#batch(), 0)  -- step 1: not watched
  assert_eq(#batch(), 3)  -- step 2: watched again
  -- a statistic of several values
  local mon2 = mx.monitor.Monitor { interval = 1, pattern = 'act_output',
    stat_func = function(a) return mx.nd.max(a, { axis = 1 }) end }
  mon2:install(exe)
  mon2:tic()
  exe:forward { is_train = false, data = data }
  local r = mon2:toc()
  assert_eq(#r, 1)
  close(mx.nd.array(r[1][3]), mx.nd.max(exe.outputs[1], { axis = 1 }))
  assert_error(function() mx.monitor.Monitor(0) end, 'interval must be a whole number')
end)

test('Module:install_monitor and fit{monitor =}', function()
  local net = mx.sym.SoftmaxOutput { data = mx.sym.FullyConnected { data = mx.sym.Variable('data'),
    num_hidden = 2, name = 'fc' }, name = 'softmax' }
  local mod = mx.mod.Module(net)
  local Counting = mx.monitor.Monitor:extend('Counting')
  function Counting:toc_print() self.printed = (self.printed or 0) + #self:toc() end
  local mon = Counting(1, nil, 'fc_output')
  mod:fit(mx.io.NDArrayIter { data = mx.nd.ones({ 8, 3 }), label = mx.nd.zeros({ 8 }),
    batch_size = 4 }, { num_epoch = 1, progress = false, monitor = mon })
  assert_eq(mon.printed, 2)  -- one fc_output per batch, two batches
end)
