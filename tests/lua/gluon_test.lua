-- mx.gluon: classes, Parameters, Blocks (imperative, hybridized, exported),
-- layers against their operators and finite differences, losses against
-- MXNet's formulas, Trainer, DataLoader.

local gluon = mx.gluon
local nn = gluon.nn
local tu = mx.test_utils

local function close(a, b, tol)
  tu.assert_almost_equal(a, b, { rtol = tol or 1e-5, atol = tol or 1e-6 })
end

local function tmpname(suffix)
  return os.tmpname() .. suffix
end

-- ---- classes ------------------------------------------------------------------

test('mx.class: called to construct, extend, parent __init, isinstance', function()
  local Animal = mx.class('Animal')
  function Animal:__init(name) self.name = name end
  function Animal:speak() return self.name .. ' makes a sound' end
  local Dog = Animal:extend('Dog')
  function Dog:__init(name)
    Animal.__init(self, name)
    self.legs = 4
  end
  function Dog:speak() return Animal.speak(self) .. ': woof' end
  local d = Dog('rex')
  assert_eq(d.name, 'rex')
  assert_eq(d.legs, 4)
  assert_eq(d:speak(), 'rex makes a sound: woof')
  assert_eq(mx.class.isinstance(d, Animal), true)
  assert_eq(mx.class.isinstance(Animal('x'), Dog), false)
  assert_eq(Dog.super, Animal)
  local Cat = mx.class('Cat', Animal)
  assert_eq(Cat('tom'):speak(), 'tom makes a sound')
  assert_error(function() mx.class(3) end, 'name must be a string')
end)

test('metamethods are inherited by subclasses', function()
  local A = mx.class('A')
  A.__tostring = function(self) return 'A:' .. self.v end
  A.__call = function(self, x) return self.v + x end
  function A:__init(v) self.v = v end
  local B = A:extend('B')
  local b = B(2)
  assert_eq(tostring(b), 'A:2')
  assert_eq(b(3), 5)
end)

test("the reference's CustomOp example: Softmax() from a CustomOp subclass", function()
  local Softmax = mx.operator.CustomOp:extend('Softmax')
  function Softmax:forward(_, req, in_data, out_data)
    local x = in_data[1]
    local y = mx.nd.exp(x - mx.nd.max(x, { axis = 2, keepdims = true }))
    y = mx.nd.broadcast_div(y, mx.nd.sum(y, { axis = 2, keepdims = true }))
    self:assign(out_data[1], req[1], y)
  end
  function Softmax:backward(req, out_grad, in_data, out_data, in_grad)
    local l = in_data[2]:astype('int32')
    local y = out_data[1]:copy()
    local oh = mx.nd.one_hot(l, { depth = y.shape[2] })
    self:assign(in_grad[1], req[1], y - oh)
  end
  local SoftmaxProp = mx.operator.CustomOpProp:extend('SoftmaxProp')
  function SoftmaxProp:__init() SoftmaxProp.super.__init(self, { need_top_grad = false }) end
  function SoftmaxProp:list_arguments() return { 'data', 'label' } end
  function SoftmaxProp:infer_shape(s) return s, { s[1] }, {} end
  function SoftmaxProp:create_operator() return Softmax() end
  mx.operator.register('gluon_test_softmax', SoftmaxProp)
  assert_eq(SoftmaxProp().need_top_grad, false)
  local x = mx.nd.array({ { 1, 2, 3 }, { 0, 0, 0 } })
  local y = mx.nd.Custom(x, mx.nd.array({ 2, 0 }), { op_type = 'gluon_test_softmax' })
  close(y, mx.nd.softmax(x))
end)

-- ---- Parameter and ParameterDict -------------------------------------------

test('Parameter: initialize, data, grad, set_data, grad_req, errors', function()
  local p = gluon.Parameter('w', { shape = { 2, 3 }, init = mx.init.One() })
  assert_error(function() p:data() end, "Parameter 'w' has not been initialized")
  p:initialize()
  close(p:data(), { { 1, 1, 1 }, { 1, 1, 1 } })
  close(p:grad(), { { 0, 0, 0 }, { 0, 0, 0 } })
  p:set_data(mx.nd.array({ { 1, 2, 3 }, { 4, 5, 6 } }))
  close(p:data(), { { 1, 2, 3 }, { 4, 5, 6 } })
  assert_error(function() p:set_data(mx.nd.ones({ 3 })) end, 'set_data of shape %(3%)')
  p.grad_req = 'null'
  assert_eq(p.grad_req, 'null')
  assert_error(function() p:grad() end, "grad_req is 'null'")
  p.grad_req = 'add'
  assert_eq(p:grad().shape, { 2, 3 })
  assert_error(function() p.grad_req = 'sometimes' end, "grad_req must be 'write'")
  assert_error(function() p:data(mx.cpu(1)) end, 'is not on cpu%(1%)')
  local q = gluon.Parameter('q', { shape = { 0, 4 } })
  assert_error(function() q:initialize() end, 'its shape %(0, 4%) is not known')
  local r = gluon.Parameter('r', { shape = { 0, 4 }, allow_deferred_init = true })
  r:initialize()
  assert_error(function() r:data() end, 'initialization was deferred')
end)

test("a parameter's own init wins; the default follows the name's ending", function()
  local pd = gluon.ParameterDict('net_')
  local w = pd:get('weight', { shape = { 2, 2 } })
  local b = pd:get('bias', { shape = { 2 } })
  local g = pd:get('gamma', { shape = { 2 } })
  local c = pd:get('weight2', { shape = { 2 }, init = 'zeros' })
  pd:initialize(mx.init.One())
  close(w:data(), { { 1, 1 }, { 1, 1 } })
  close(b:data(), { 0, 0 })
  close(g:data(), { 1, 1 })
  close(c:data(), { 0, 0 })
  assert_eq(pd:keys(), { 'net_weight', 'net_bias', 'net_gamma', 'net_weight2' })
  assert_eq(pd['net_bias'], b)
  assert_eq(pd:select('.*weight|.*gamma'):keys(), { 'net_weight', 'net_gamma', 'net_weight2' })
  assert_eq(pd:get('weight'), w)
  assert_error(function() pd:get('weight', { shape = { 3, 2 } }) end, 'exists with shape')
end)

test('ParameterDict save and load, with bad files', function()
  local pd = gluon.ParameterDict('m_')
  pd:get('weight', { shape = { 2, 2 } })
  pd:get('bias', { shape = { 2 } })
  pd:initialize(mx.init.Uniform(1))
  local path = tmpname('.params')
  pd:save(path, 'm_')
  local pd2 = gluon.ParameterDict('m_')
  pd2:get('weight', { shape = { 2, 2 } })
  pd2:get('bias', { shape = { 2 } })
  pd2:load(path, mx.cpu(), false, false, 'm_')
  close(pd2['m_weight']:data(), pd['m_weight']:data())
  local pd3 = gluon.ParameterDict('m_')
  pd3:get('weight', { shape = { 2, 2 } })
  pd3:get('other', { shape = { 1 } })
  assert_error(function() pd3:load(path, nil, false, false, 'm_') end, "'m_other' is missing")
  assert_error(function() pd3:load(path, nil, true, false, 'm_') end, "'m_bias', which is not in")
  pd3:load(path, nil, true, true, 'm_')
  -- A truncated file and a corrupted one are errors, not crashes.
  local f = assert(io.open(path, 'rb'))
  local bytes = f:read('*a')
  f:close()
  local bad = tmpname('.params')
  f = assert(io.open(bad, 'wb'))
  f:write(bytes:sub(1, #bytes - 7))
  f:close()
  assert_error(function() pd2:load(bad, nil, false, false, 'm_') end)
  f = assert(io.open(bad, 'wb'))
  f:write(bytes:sub(1, 20) .. string.rep('\255', 16) .. bytes:sub(37))
  f:close()
  assert_error(function() pd2:load(bad, nil, false, false, 'm_') end)
  os.remove(path)
  os.remove(bad)
end)

-- ---- Blocks ------------------------------------------------------------------

test('child registration by assignment, names, collect_params, net[i]', function()
  local Net = gluon.Block:extend('Net')
  function Net:__init()
    gluon.Block.__init(self)
    self:name_scope(function()
      self.fc1 = nn.Dense(4, { in_units = 3 })
      self.fc2 = nn.Dense(2, { in_units = 4 })
    end)
    self.scale = 2
  end
  function Net:forward(x) return self.fc2(mx.nd.relu(self.fc1(x))) * self.scale end
  local net = Net()
  local pre = net.prefix
  assert_eq(pre:match('^net%d+_$') ~= nil, true)
  assert_eq(net:collect_params():keys(), { pre .. 'dense0_weight', pre .. 'dense0_bias',
    pre .. 'dense1_weight', pre .. 'dense1_bias' })
  assert_eq(#net:collect_params('.*weight'):keys(), 2)
  assert_eq(net[1], net.fc1)
  net:initialize()
  local x = mx.nd.ones({ 5, 3 })
  assert_eq(net(x).shape, { 5, 2 })
  -- Replacing a child replaces it in the registry too.
  net.fc2 = nn.Dense(3, { in_units = 4 })
  net.fc2:initialize()
  assert_eq(net(x).shape, { 5, 3 })
  assert_eq(#net:children(), 2)
end)

test("shared parameters: params = another block's", function()
  local a = nn.Dense(3, { in_units = 2 })
  local b = nn.Dense(3, { in_units = 2, params = a.params })
  assert_eq(b.weight, a.weight)
  a:initialize()
  local x = mx.nd.array({ { 1, 2 } })
  close(b(x), a(x))
  local l = mx.autograd.record(function() return (a(x) + b(x)):sum() end)
  l:backward()
  close(a.weight:grad(), { { 2, 4 }, { 2, 4 }, { 2, 4 } })
end)

test('Dense: deferred shapes, values equal FullyConnected, repr', function()
  local d = nn.Dense(3, { activation = 'relu' })
  d:initialize(mx.init.Xavier())
  assert_eq(tostring(d), 'Dense(None -> 3, Activation(relu))')
  local x = mx.nd.random.uniform(-1, 1, { 4, 2, 5 })
  local y = d(x)
  assert_eq(d.weight.shape, { 3, 10 })
  assert_eq(tostring(d), 'Dense(10 -> 3, Activation(relu))')
  close(y, mx.nd.relu(mx.nd.FullyConnected(x, d.weight:data(), d.bias:data(), { num_hidden = 3 })))
  local nf = nn.Dense(3, { flatten = false, use_bias = false, in_units = 5 })
  nf:initialize()
  assert_eq(nf(x).shape, { 4, 2, 3 })
  assert_eq(nf.bias, nil)
  assert_error(function() nn.Dense(0) end, 'units must be a positive whole number')
end)

test('forward hooks and pre-hooks, detached', function()
  local d = nn.Dense(2, { in_units = 2 })
  d:initialize()
  local seen = {}
  local h1 = d:register_forward_pre_hook(function(_, inputs) seen[#seen + 1] = inputs.n end)
  local h2 = d:register_forward_hook(function(_, _, out) seen[#seen + 1] = out[1].shape[2] end)
  d(mx.nd.ones({ 1, 2 }))
  assert_eq(seen, { 1, 2 })
  h1.detach()
  h2.detach()
  d(mx.nd.ones({ 1, 2 }))
  assert_eq(#seen, 2)
end)

-- A layer's gradient: its hybrid_forward on given parameter arrays,
-- against central differences (float64).
local function check_layer(block, x, params)
  local names = {}
  for k in pairs(params) do names[#names + 1] = k end
  table.sort(names)
  local location = { x }
  for i, k in ipairs(names) do location[i + 1] = params[k] end
  tu.check_autograd_gradient(function(xx, ...)
    local p = {}
    local args = { ... }
    for i, k in ipairs(names) do p[k] = args[i] end
    return block:hybrid_forward(mx.nd, xx, p)
  end, location, { rtol = 2e-2, atol = 1e-4 })
end

test('layer gradients against finite differences', function()
  local r = function(shape, lo, hi) return mx.nd.random.uniform(lo or -1, hi or 1, shape, { dtype = 'float64' }) end
  check_layer(nn.Dense(3, { activation = 'tanh' }), r({ 2, 4 }), { weight = r({ 3, 4 }), bias = r({ 3 }) })
  check_layer(nn.Conv2D(2, 3, { padding = 1, strides = 2 }), r({ 1, 2, 5, 5 }),
    { weight = r({ 2, 2, 3, 3 }), bias = r({ 2 }) })
  check_layer(nn.Conv1D(2, 3, { groups = 2, in_channels = 2 }), r({ 2, 2, 6 }),
    { weight = r({ 2, 1, 3 }), bias = r({ 2 }) })
  check_layer(nn.Conv2DTranspose(2, 3, { strides = 2 }), r({ 1, 3, 3, 3 }),
    { weight = r({ 3, 2, 3, 3 }), bias = r({ 2 }) })
  check_layer(nn.Conv3D(2, 2, { padding = { 1, 0, 0 } }), r({ 1, 2, 2, 3, 3 }),
    { weight = r({ 2, 2, 2, 2, 2 }), bias = r({ 2 }) })
  check_layer(nn.Conv3DTranspose(2, 2, { strides = 2 }), r({ 1, 1, 2, 2, 2 }),
    { weight = r({ 1, 2, 2, 2, 2 }), bias = r({ 2 }) })
  check_layer(nn.MaxPool3D(2), r({ 1, 2, 2, 4, 4 }), {})
  check_layer(nn.AvgPool3D(2, { strides = 1 }), r({ 1, 1, 3, 3, 3 }), {})
  check_layer(nn.GlobalAvgPool3D(), r({ 2, 2, 2, 3, 2 }), {})
  check_layer(nn.AvgPool2D(2), r({ 1, 2, 4, 4 }), {})
  check_layer(nn.GlobalMaxPool1D(), r({ 2, 3, 5 }), {})
  check_layer(nn.MaxPool1D(3, { strides = 1, padding = 1 }), r({ 1, 2, 6 }), {})
  check_layer(nn.GlobalAvgPool2D(), r({ 2, 3, 3, 3 }), {})
  check_layer(nn.LayerNorm(), r({ 3, 4 }), { gamma = r({ 4 }), beta = r({ 4 }) })
  check_layer(nn.InstanceNorm(), r({ 2, 3, 4 }), { gamma = r({ 3 }), beta = r({ 3 }) })
  check_layer(nn.GroupNorm { num_groups = 2 }, r({ 2, 4, 3 }), { gamma = r({ 4 }), beta = r({ 4 }) })
  check_layer(nn.BatchNorm(), r({ 4, 3, 2 }), { gamma = r({ 3 }), beta = r({ 3 }),
    running_mean = r({ 3 }), running_var = r({ 3 }, 0.5, 1) })
  check_layer(nn.LeakyReLU(0.1), r({ 3, 4 }), {})
  check_layer(nn.PReLU(), r({ 3, 4 }), { alpha = r({ 1 }, 0.1, 0.5) })
  check_layer(nn.ELU(0.7), r({ 3, 4 }), {})
  check_layer(nn.SELU(), r({ 3, 4 }), {})
  check_layer(nn.GELU(), r({ 3, 4 }), {})
  check_layer(nn.Swish(1.5), r({ 3, 4 }), {})
  check_layer(nn.Flatten(), r({ 2, 3, 2 }), {})
  -- Embedding: the gradient of its weight (the indices have none).
  local emb = nn.Embedding(4, 3, { dtype = 'float64' })
  local idx = mx.nd.array({ 0, 3, 3, 1 }, { dtype = 'float64' })
  tu.check_autograd_gradient(function(w) return emb:hybrid_forward(mx.nd, idx, { weight = w }) end,
    { r({ 4, 3 }) }, { rtol = 2e-2, atol = 1e-4 })
end)

test('GroupNorm: values from the definition; 1 group and one group per channel', function()
  local x = mx.nd.array({ { { 1, 2 }, { 3, 4 }, { 5, 6 }, { 7, 9 } } })  -- (1, 4, 2)
  local gamma, beta = mx.nd.array({ 1, 2, 1, 1 }), mx.nd.array({ 0, 0, 1, 0 })
  local y = mx.nd.GroupNorm(x, gamma, beta, { num_groups = 2, eps = 0 })
  -- group 1: {1, 2, 3, 4}, mean 2.5, std sqrt(1.25); group 2: {5, 6, 7, 9}, mean 6.75
  local s1 = math.sqrt(1.25)
  local v2 = ((5 - 6.75) ^ 2 + (6 - 6.75) ^ 2 + (7 - 6.75) ^ 2 + (9 - 6.75) ^ 2) / 4
  local s2 = math.sqrt(v2)
  close(y, { { { -1.5 / s1, -0.5 / s1 }, { 2 * 0.5 / s1, 2 * 1.5 / s1 },
    { (5 - 6.75) / s2 + 1, (6 - 6.75) / s2 + 1 }, { 0.25 / s2, 2.25 / s2 } } }, 1e-5)
  local ones, zeros = mx.nd.ones({ 4 }), mx.nd.zeros({ 4 })
  local z = mx.nd.random.uniform(0, 1, { 2, 4, 3 })
  close(mx.nd.GroupNorm(z, ones, zeros, { num_groups = 4 }), mx.nd.InstanceNorm(z, ones, zeros, { eps = 1e-5 }), 1e-5)
  assert_error(function() mx.nd.GroupNorm(z, ones, zeros, { num_groups = 3 }) end,
    'do not split into num_groups = 3')
  local gn = nn.GroupNorm { num_groups = 2 }
  gn:initialize()
  assert_eq(gn(z).shape, { 2, 4, 3 })
  assert_eq(gn.gamma.shape, { 4 })
end)

test('Embedding, Dropout (train and predict), Lambda, HybridLambda', function()
  local e = nn.Embedding(5, 2)
  e:initialize()
  local idx = mx.nd.array({ 0, 4, 4 })
  local out = e(idx)
  assert_eq(out.shape, { 3, 2 })
  close(out[3], e.weight:data()[5])
  local d = nn.Dropout(0.5)
  local x = mx.nd.ones({ 100, 10 })
  close(d(x), x)  -- not training: identity
  local y = mx.autograd.record(function() return d(x) end)
  local kept = y:gt(0):sum():totable()[1]
  assert_eq(kept > 300 and kept < 700, true)
  close(y:max(), { 2 })
  close(nn.Lambda('relu')(mx.nd.array({ -1, 2 })), { 0, 2 })
  local hl = nn.HybridLambda(function(F, a) return F.relu(a) * 2 end)
  close(hl(mx.nd.array({ -1, 2 })), { 0, 4 })
  hl:hybridize()
  close(hl(mx.nd.array({ -1, 3 })), { 0, 6 })
end)

local function small_convnet()
  local net = nn.HybridSequential()
  net:name_scope(function()
    net:add(nn.Conv2D(4, 3, { padding = 1 }), nn.BatchNorm(), nn.Activation('relu'),
      nn.MaxPool2D(2), nn.Dense(8, { activation = 'tanh' }), nn.Dropout(0), nn.Dense(3))
  end)
  return net
end

test('hybridize: same outputs as imperative, executors cached per shape', function()
  mx.random.seed(3)
  local net = small_convnet()
  net:initialize(mx.init.Xavier())
  local x = mx.nd.random.uniform(0, 1, { 2, 1, 6, 6 })
  local ref = net(x)
  net:hybridize()
  local h1 = net(x)
  close(h1, ref)
  local h2 = net(x * 2)
  close(h1, ref)  -- an earlier output is not overwritten by the next call
  net:hybridize(false)
  close(h2, net(x * 2))
  net:hybridize()
  local x3 = mx.nd.random.uniform(0, 1, { 3, 1, 6, 6 })
  net:hybridize(false)
  local r3 = net(x3)
  net:hybridize()
  close(net(x3), r3)
  assert_eq(net:_num_executors(), 1)
  net(x3)
  assert_eq(net:_num_executors(), 1)
  net(x)
  assert_eq(net:_num_executors(), 2)
end)

test('hybridized and imperative give the same gradients, and the same as Module', function()
  mx.random.seed(5)
  local net = small_convnet()
  net:initialize(mx.init.Xavier())
  local x = mx.nd.random.uniform(0, 1, { 2, 1, 6, 6 })
  local label = mx.nd.array({ 0, 2 })
  local loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
  local function grads()
    local l = mx.autograd.record(function() return loss_fn(net(x), label) end)
    l:backward()
    local g = {}
    for name, p in net:collect_params():items() do
      if p.grad_req ~= 'null' then g[name] = p:grad():copy() end
    end
    return g, l
  end
  local g1, l1 = grads()
  net:hybridize()
  local g2, l2 = grads()
  close(l2, l1)
  for k, v in pairs(g1) do close(g2[k], v, 1e-4) end
  -- The traced symbol bound as Module binds it: SoftmaxOutput's gradient
  -- is that of the summed cross-entropy.
  local sym = net(mx.sym.Variable('data'))
  local out = mx.sym.SoftmaxOutput(sym, mx.sym.Variable('softmax_label'))
  local exe = out:simple_bind { ctx = mx.cpu(), data = { 2, 1, 6, 6 }, softmax_label = { 2 } }
  for name, p in net:collect_params():items() do
    if exe.arg_dict[name] then p:data():copyto(exe.arg_dict[name]) end
    if exe.aux_dict[name] then p:data():copyto(exe.aux_dict[name]) end
  end
  exe:forward { is_train = true, data = x, softmax_label = label }
  exe:backward()
  for k, v in pairs(g1) do close(exe.grad_dict[k], v, 1e-4) end
end)

-- A residual block whose arrays have 16 and 32 channels: the executor keeps
-- those between convolutions, BatchNorm, relu and the sum in oneDNN's
-- blocked layout (where oneDNN is loaded); results equal op by op.
test('hybridized residual block (blocked layout between ops): same outputs and gradients', function()
  mx.random.seed(9)
  local Block = gluon.HybridBlock:extend('BlockedResidual')
  function Block:__init()
    gluon.HybridBlock.__init(self)
    self.c1 = nn.Conv2D(32, 3, { padding = 1, use_bias = false })
    self.b1 = nn.BatchNorm()
    self.c2 = nn.Conv2D(32, 3, { padding = 1, use_bias = false })
    self.b2 = nn.BatchNorm()
    self.c3 = nn.Conv2D(16, 1)
  end
  function Block:hybrid_forward(F, x)
    local r1 = F.Activation(self.b1(self.c1(x)), { act_type = 'relu' })
    local r2 = F.Activation(self.b2(self.c2(r1)) + r1, { act_type = 'relu' })
    return self.c3(r2)
  end
  local net = Block()
  net:initialize(mx.init.Xavier())
  local x = mx.nd.random.uniform(-1, 1, { 4, 16, 10, 10 })
  local head = mx.nd.random.uniform(-1, 1, { 4, 16, 10, 10 })
  local function run()
    local y = mx.autograd.record(function() return net(x) end)
    y:backward(head)
    local g = {}
    for name, p in net:collect_params():items() do
      if p.grad_req ~= 'null' then g[name] = p:grad():copy() end
    end
    return y, g
  end
  local y1, g1 = run()
  net:hybridize()
  local y2, g2 = run()
  close(y2, y1, 1e-4)
  for k, v in pairs(g1) do close(g2[k], v, 1e-4) end
  local exe = net(mx.sym.Variable('data')):simple_bind { ctx = mx.cpu(), data = { 4, 16, 10, 10 } }
  local plan = exe:debug_str()
  local algo = os.getenv('TESSERA_CONV_ALGO')
  if os.getenv('TESSERA_BLOCKED_LAYOUT') ~= '0' and (algo == nil or algo == 'auto' or algo == 'onednn') then
    assert_eq(plan:find("in oneDNN's blocked layout", 1, true) ~= nil, true, plan)
  end
end)

test('hybridized block called twice before backward (shared weights); retain_graph', function()
  mx.random.seed(9)
  local net = nn.HybridSequential()
  net:add(nn.Dense(4, { activation = 'tanh' }), nn.Dense(2))
  net:initialize(mx.init.Xavier())
  local a = mx.nd.random.uniform(-1, 1, { 3, 5 })
  local b = mx.nd.random.uniform(-1, 1, { 3, 5 })
  local w = net[1].weight
  -- Two calls share the weights, and the loss also reads one weight op by
  -- op: three contributions summed into one buffer.
  local function grad_of()
    local l = mx.autograd.record(function()
      return (net(a) * net(b)):sum() + (w:data() * w:data()):sum() * 0.5
    end)
    l:backward()
    return w:grad():copy()
  end
  local ref = grad_of()
  net:hybridize()
  close(grad_of(), ref, 1e-5)
  -- A training loop reuses its executors: they are released by backward.
  for _ = 1, 5 do grad_of() end
  assert_eq(net:_num_executors(), 2)
  -- One call, with the weight also read op by op.
  local function grad_one()
    local l = mx.autograd.record(function() return net(a):sum() + w:data():sum() end)
    l:backward()
    return w:grad():copy()
  end
  net:hybridize(false)
  local ref1 = grad_one()
  net:hybridize()
  close(grad_one(), ref1, 1e-5)
  -- grad_req 'add' accumulates through the bound graph too.
  w.grad_req = 'add'  -- a fresh zero buffer
  grad_one()
  grad_one()
  close(w:grad(), ref1 * 2, 1e-5)
  w.grad_req = 'write'
  -- One forward serves one backward through the bound graph: a second
  -- backward (retain_graph) is a clear error, never stale values.
  local y = mx.autograd.record(function() return net(a):sum() end)
  y:backward(nil, true)
  assert_error(function() y:backward() end, 'runs once per forward')
  -- ... and the graph keeps working afterwards.
  close(grad_of(), ref, 1e-5)
end)

test('export, then mx.sym.load + mx.nd.load and SymbolBlock.imports give the same outputs', function()
  local net = small_convnet()
  net:initialize(mx.init.Xavier())
  local x = mx.nd.random.uniform(0, 1, { 2, 1, 6, 6 })
  assert_error(function() net:export(os.tmpname()) end, 'call hybridize%(%) and run the block once')
  net:hybridize()
  local ref = net(x)
  local base = os.tmpname()
  local sym_file, params_file = net:export(base, 3)
  assert_eq(params_file, base .. '-0003.params')
  local sym = mx.sym.load(sym_file)
  local saved = mx.nd.load(params_file)
  local args = { data = x }
  local aux = {}
  for k, v in pairs(saved) do
    local kind, name = k:match('^(%a+):(.*)$')
    if kind == 'arg' then args[name] = v else aux[name] = v end
  end
  local exe = sym:bind { ctx = mx.cpu(), args = args, aux_states = aux }
  close(exe:forward()[1], ref)
  local sb = gluon.SymbolBlock.imports(sym_file, { 'data' }, params_file)
  close(sb(x), ref)
  -- A SymbolBlock trains: under record it runs op by op.
  local l = mx.autograd.record(function() return sb(x):sum() end)
  l:backward()
  local w = sb.params:values()[1]
  assert_eq(w:grad():abs():sum():totable()[1] > 0, true)
  os.remove(sym_file)
  os.remove(params_file)
  os.remove(base)
end)

test('save_parameters / load_parameters: structural names, missing and extra', function()
  local net = small_convnet()
  net:initialize()
  local x = mx.nd.random.uniform(0, 1, { 1, 1, 6, 6 })
  local ref = net(x)
  local path = tmpname('.params')
  net:save_parameters(path)
  local keys = {}
  for k in pairs(mx.nd.load(path)) do keys[#keys + 1] = k end
  table.sort(keys)
  assert_eq(keys[1], '0.bias')
  local net2 = small_convnet()
  net2:load_parameters(path)
  close(net2(x), ref)
  local net3 = nn.HybridSequential()
  net3:add(nn.Dense(3))
  assert_error(function() net3:load_parameters(path) end, 'which this block does not have')
  local net4 = small_convnet()
  net4:add(nn.Dense(2))
  assert_error(function() net4:load_parameters(path) end, "parameter '7%.%a+' is missing")
  os.remove(path)
end)

-- ---- losses: values from MXNet's formulas ----------------------------------

test('losses', function()
  local L = gluon.loss
  local pred = mx.nd.array({ { 1, 2, 3 }, { 1, -1, 0 } })
  local label = mx.nd.array({ 2, 0 })
  local function lse(t) local s = 0 for _, v in ipairs(t) do s = s + math.exp(v) end return math.log(s) end
  close(L.SoftmaxCrossEntropyLoss()(pred, label), { lse({ 1, 2, 3 }) - 3, lse({ 1, -1, 0 }) - 1 })
  local dense = mx.nd.array({ { 0, 0, 1 }, { 0.5, 0.5, 0 } })
  close(L.SoftmaxCrossEntropyLoss { sparse_label = false }(pred, dense),
    { lse({ 1, 2, 3 }) - 3, (lse({ 1, -1, 0 }) - 1) * 0.5 + (lse({ 1, -1, 0 }) + 1) * 0.5 })
  close(L.L2Loss()(mx.nd.array({ { 1 }, { 3 } }), mx.nd.array({ 0, 1 })), { 0.5, 2 })
  close(L.L1Loss()(mx.nd.array({ { 1, -1 } }), mx.nd.array({ { 0, 1 } })), { 1.5 })
  close(L.L1Loss { weight = 2 }(mx.nd.array({ { 1, -1 } }), mx.nd.array({ { 0, 1 } })), { 3 })
  close(L.L2Loss()(mx.nd.array({ { 1 }, { 3 } }), mx.nd.array({ 0, 1 }), mx.nd.array({ { 2 }, { 0 } })), { 1, 0 })
  local x = mx.nd.array({ { 2, -3 } })
  local z = mx.nd.array({ { 1, 0 } })
  local function bce(v, t) return math.max(v, 0) - v * t + math.log(1 + math.exp(-math.abs(v))) end
  close(L.SigmoidBinaryCrossEntropyLoss()(x, z), { (bce(2, 1) + bce(-3, 0)) / 2 })
  local s = mx.nd.array({ { 0.8, 0.1 } })
  close(L.SigmoidBCELoss { from_sigmoid = true }(s, z), { -(math.log(0.8) + math.log(0.9)) / 2 }, 1e-4)
  close(L.HuberLoss()(mx.nd.array({ { 0.5, 3 } }), mx.nd.array({ { 0, 0 } })), { (0.125 + 2.5) / 2 })
  close(L.HingeLoss()(mx.nd.array({ { 0.5, 2 } }), mx.nd.array({ { 1, -1 } })), { (0.5 + 3) / 2 })
  local p = mx.nd.array({ { 0.2, 0.8 } })
  local logp = mx.nd.log(p)
  close(L.KLDivLoss()(logp, mx.nd.array({ { 0.5, 0.5 } })),
    { (0.5 * (math.log(0.5) - math.log(0.2)) + 0.5 * (math.log(0.5) - math.log(0.8))) / 2 }, 1e-4)
  local a = mx.nd.array({ { 1, 0 }, { 1, 1 } })
  local b = mx.nd.array({ { 0, 1 }, { 1, 1 } })
  close(L.CosineEmbeddingLoss()(a, b, mx.nd.array({ 1, -1 })), { 1, 1 }, 1e-5)
  -- batch_axis: the mean over every other axis.
  local v = mx.nd.array({ { 1, 2 }, { 3, 4 } })
  close(L.L1Loss { batch_axis = 2 }(v, mx.nd.zeros({ 2, 2 })), { 2, 3 })
end)

-- ---- Trainer -------------------------------------------------------------------

test('Trainer: 1/batch_size, weight decay on every parameter, lr_mult, states', function()
  local p = gluon.Parameter('p_bias', { shape = { 2 }, init = mx.init.One() })
  p:initialize()
  local tr = gluon.Trainer({ p }, 'sgd', { learning_rate = 0.5, wd = 0.1 })
  assert_eq(tr.learning_rate, 0.5)
  mx.nd.array({ 4, 8 }):copyto(p:grad())
  tr:step(4)
  -- w - lr * (g / 4 + wd * w): a bias gets weight decay under Trainer.
  close(p:data(), { 1 - 0.5 * (1 + 0.1), 1 - 0.5 * (2 + 0.1) })
  p.lr_mult = 0
  tr:step(4)
  close(p:data(), { 1 - 0.5 * 1.1, 1 - 0.5 * 2.1 })
  tr:set_learning_rate(0.25)
  assert_eq(tr.learning_rate, 0.25)
  -- Adam's states and counts survive save_states / load_states.
  local q = gluon.Parameter('q', { shape = { 3 }, init = mx.init.One() })
  assert_error(function() gluon.Parameter('q', { shape = { 3 } }):initialize() end,
    "no rule for parameter 'q'")
  q:initialize()
  local t1 = gluon.Trainer({ q }, 'adam', { learning_rate = 0.1 })
  mx.nd.array({ 1, -1, 2 }):copyto(q:grad())
  t1:step(1)
  local path = tmpname('.states')
  t1:save_states(path)
  local q2 = gluon.Parameter('q', { shape = { 3 }, init = mx.init.Zero() })
  q2:initialize()
  q2:set_data(q:data())
  local t2 = gluon.Trainer({ q2 }, 'adam', { learning_rate = 0.1 })
  t2:load_states(path)
  mx.nd.array({ 0.5, 0.5, 0.5 }):copyto(q:grad())
  mx.nd.array({ 0.5, 0.5, 0.5 }):copyto(q2:grad())
  t1:step(1)
  t2:step(1)
  close(q2:data(), q:data())
  assert_error(function() t2:load_states(tmpname('.none')) end)
  os.remove(path)
  assert_error(function() gluon.Trainer({ q }, 'sgd', {}, { kvstore = 'nccl' }) end,
    'not built yet')
  assert_error(function() tr:step(0) end, 'batch_size must be a positive number')
end)

test('a small network learns with Trainer (imperative and hybridized)', function()
  for _, hybrid in ipairs({ false, true }) do
    mx.random.seed(1)
    local x = mx.nd.random.uniform(-1, 1, { 64, 2 })
    local y = mx.nd._greater_scalar(x[{ 1, 64 }]:sum({ axis = 2 }), { scalar = 0 })
    local net = nn.HybridSequential()
    net:add(nn.Dense(16, { activation = 'relu' }), nn.Dense(2))
    net:initialize(mx.init.Xavier())
    if hybrid then net:hybridize() end
    local tr = gluon.Trainer(net:collect_params(), 'adam', { learning_rate = 0.05 })
    local loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    for _ = 1, 60 do
      local l = mx.autograd.record(function() return loss_fn(net(x), y) end)
      l:backward()
      tr:step(64)
    end
    local acc = mx.nd.argmax(net(x), { axis = 2 }):eq(y):mean():totable()[1]
    assert_eq(acc > 0.9, true, 'accuracy ' .. acc)
  end
end)

test('data parallel on two contexts: the same weights as on one', function()
  local function run(ctx_list, hybrid, kvstore)
    mx.random.seed(3)
    local net = nn.HybridSequential()
    net:add(nn.Dense(8, { activation = 'relu' }), nn.Dense(2))
    net:initialize(mx.init.Xavier(), ctx_list)
    if hybrid then net:hybridize() end
    local tr = gluon.Trainer(net:collect_params(), 'sgd', { learning_rate = 0.1, momentum = 0.5 },
      { kvstore = kvstore })
    local loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    local x = mx.nd.random.uniform(-1, 1, { 8, 4 })
    local y = mx.nd.array({ 0, 1, 0, 1, 1, 0, 1, 0 })
    for _ = 1, 3 do
      local xs = gluon.utils.split_and_load(x, ctx_list)
      local ys = gluon.utils.split_and_load(y, ctx_list)
      local losses = {}
      mx.autograd.record(function()
        for i = 1, #xs do losses[i] = loss_fn(net(xs[i]), ys[i]) end
      end)
      mx.autograd.backward(losses)
      tr:step(8)
    end
    local w = net[1].weight
    if #ctx_list > 1 then close(w:data(ctx_list[2]), w:data(ctx_list[1])) end
    return w:data(ctx_list[1]):copyto(mx.cpu())
  end
  local one = run({ mx.cpu(0) }, false)
  close(run({ mx.cpu(0), mx.cpu(1) }, false), one, 1e-5)
  close(run({ mx.cpu(0), mx.cpu(1) }, true), one, 1e-5)
  close(run({ mx.cpu(0), mx.cpu(1) }, false, false), one, 1e-5)
  close(run({ mx.cpu(0), mx.cpu(1) }, false, 'local'), one, 1e-5)
  assert_error(function() gluon.utils.split_and_load(mx.nd.ones({ 3, 2 }), { mx.cpu(0), mx.cpu(1) }) end,
    'do not split evenly')
end)

-- ---- data ------------------------------------------------------------------------

test('ArrayDataset, samplers, DataLoader (last_batch modes, shuffle, batch path)', function()
  local x = mx.nd.arange(0, 10):reshape({ 10, 1 })
  local y = mx.nd.arange(100, 110)
  local ds = gluon.data.ArrayDataset(x, y)
  assert_eq(ds:len(), 10)
  local a, b = ds:get(3)
  close(a, { 2 })
  close(b, 102)
  assert_error(function() ds:get(11) end, 'out of range')
  local sizes = {}
  local loader = gluon.data.DataLoader(ds, { batch_size = 4 })
  for bx, by in loader:iter() do
    sizes[#sizes + 1] = bx.shape[1]
    assert_eq(by.shape, { bx.shape[1] })
  end
  assert_eq(sizes, { 4, 4, 2 })
  assert_eq(loader:len(), 3)
  local d2 = gluon.data.DataLoader { dataset = ds, batch_size = 4, last_batch = 'discard' }
  assert_eq(d2:len(), 2)
  local n = 0
  for _ in d2:iter() do n = n + 1 end
  assert_eq(n, 2)
  -- rollover: the 2 left over start the next epoch.
  local bs = gluon.data.BatchSampler(gluon.data.SequentialSampler(10), 4, 'rollover')
  local first = {}
  for b1 in bs:iter() do first[#first + 1] = b1 end
  assert_eq(#first, 2)
  local second = {}
  for b1 in bs:iter() do second[#second + 1] = b1 end
  assert_eq(second[1], { 9, 10, 1, 2 })
  -- shuffle covers every sample once per epoch.
  mx.random.seed(7)
  local seen = {}
  for _, by in gluon.data.DataLoader(ds, { batch_size = 3, shuffle = true }):iter() do
    for _, v in ipairs(by:totable()) do seen[#seen + 1] = v end
  end
  table.sort(seen)
  assert_eq(seen, { 100, 101, 102, 103, 104, 105, 106, 107, 108, 109 })
  -- A Lua transform runs per sample and gives the same batch.
  local t = ds:transform(function(u, v) return u * 2, v end)
  local bx = gluon.data.DataLoader(t, { batch_size = 10 }):iter()()
  close(bx, (x * 2))
  local simple = gluon.data.SimpleDataset({ 1, 2, 3 })
  local sb = gluon.data.DataLoader(simple, { batch_size = 2 }):iter()()
  close(sb, { 1, 2 })
  assert_error(function() gluon.data.DataLoader(ds, {}) end, 'batch_size is required')
  assert_error(function() gluon.data.ArrayDataset(x, mx.nd.ones({ 3 })) end, 'argument 2 has 3 items')
end)

test('vision transforms on samples and on batches agree', function()
  local T = gluon.data.vision.transforms
  local img = mx.nd.array({ { { 0 }, { 255 } }, { { 51 }, { 102 } } }, { dtype = 'uint8' })  -- 2x2x1
  local t = T.Compose({ T.ToTensor(), T.Normalize(0.5, 0.5) })
  local one = t(img)
  assert_eq(one.shape, { 1, 2, 2 })
  close(one, { { { -1, 1 }, { 0.2 * 2 - 1, 0.4 * 2 - 1 } } })
  local batch = mx.nd.stack({ img, img }, { axis = 1 })
  close(t(batch)[1], one)
  assert_eq(t.batchable, true)
  -- The image transforms work on HWC images.
  local big = mx.nd.random.uniform(0, 255, { 20, 30, 3 }):astype('uint8')
  local function differs(a, b)
    return (a:astype('float32') - b:astype('float32')):abs():sum():totable()[1] > 0
  end
  assert_eq(T.Resize(8)(big).shape, { 8, 8, 3 })
  assert_eq(T.Resize({ 12, 6 })(big).shape, { 6, 12, 3 })
  assert_eq(T.Resize(10, { keep_ratio = true })(big).shape, { 10, 15, 3 })
  local cc = T.CenterCrop(10)(big)
  close(cc, mx.nd.slice(big, { begin = { 5, 10, 0 }, ['end'] = { 15, 20, 3 } }))
  assert_eq(T.RandomResizedCrop(16)(big).shape, { 16, 16, 3 })
  local flips = 0
  for _ = 1, 40 do
    local f = T.RandomFlipLeftRight()(big)
    if differs(f, big) then
      flips = flips + 1
      close(f, mx.nd.flip(big, { axis = 2 }))
    end
  end
  assert_eq(flips > 5 and flips < 35, true)
  local aug = T.Compose({ T.RandomResizedCrop(8), T.RandomFlipLeftRight(), T.ToTensor() })
  assert_eq(aug.batchable, false)
  assert_eq(aug(big).shape, { 3, 8, 8 })
  assert_error(function() T.Resize('big') end, 'size must be a number')
end)

test('vision.ImageFolderDataset and ImageRecordDataset', function()
  local root = os.tmpname()
  os.remove(root)
  assert(os.execute(('mkdir -p %s/cat %s/dog %s/.hidden'):format(root, root, root)))
  local function img(v) return mx.nd.full({ 4, 6, 3 }, v, { dtype = 'uint8' }) end
  local function write(path, bytes)
    local f = assert(io.open(path, 'wb'))
    f:write(bytes)
    f:close()
  end
  write(root .. '/cat/b.png', mx.image.imencode(img(10), { img_fmt = '.png' }))
  write(root .. '/cat/a.PNG', mx.image.imencode(img(20), { img_fmt = '.png' }))
  write(root .. '/cat/notes.txt', 'not an image')
  write(root .. '/dog/x.png', mx.image.imencode(img(30), { img_fmt = '.png' }))
  local ds = gluon.data.vision.ImageFolderDataset(root)
  assert_eq(ds.synsets, { 'cat', 'dog' })
  assert_eq(ds:len(), 3)
  local x, y = ds:get(1)  -- a.PNG: names sorted in byte order
  assert_eq(x.shape, { 4, 6, 3 })
  close(x:astype('float32'):mean(), { 20 })
  assert_eq(y, 0)
  assert_eq(select(2, ds:get(3)), 1)
  local gray = gluon.data.vision.ImageFolderDataset(root, { flag = 0 })
  assert_eq(gray:get(1).shape, { 4, 6, 1 })
  local loader = gluon.data.DataLoader(ds:transform_first(gluon.data.vision.transforms.ToTensor()),
    { batch_size = 2 })
  local bx, by = loader:iter()()
  assert_eq(bx.shape, { 2, 3, 4, 6 })
  close(by, { 0, 0 })
  assert_error(function() gluon.data.vision.ImageFolderDataset(root .. '/none') end, 'is not a folder')
  -- The same images packed as an indexed record file.
  local rec = mx.recordio.MXIndexedRecordIO(root .. '/data.idx', root .. '/data.rec', 'w')
  for i, v in ipairs({ 10, 20, 30 }) do
    rec:write_idx(i - 1, mx.recordio.pack_img(mx.recordio.IRHeader(0, i % 2, i, 0), img(v),
      95, '.png'))
  end
  rec:close()
  local rds = gluon.data.vision.ImageRecordDataset(root .. '/data.rec')
  assert_eq(rds:len(), 3)
  local rx, ry = rds:get(3)
  close(rx:astype('float32'):mean(), { 30 })
  assert_eq(ry, 1)
  assert_error(function() gluon.data.vision.ImageRecordDataset(root .. '/none.rec') end,
    'ImageRecordDataset')
  os.execute(('rm -rf %s'):format(root))
end)

test('a ResNet-like block forward and backward under both engines', function()
  local Residual = gluon.HybridBlock:extend('Residual')
  function Residual:__init(c)
    gluon.HybridBlock.__init(self)
    self:name_scope(function()
      self.conv1 = nn.Conv2D(c, 3, { padding = 1, use_bias = false })
      self.bn1 = nn.BatchNorm()
      self.conv2 = nn.Conv2D(c, 3, { padding = 1, use_bias = false })
      self.bn2 = nn.BatchNorm()
    end)
  end
  function Residual:hybrid_forward(F, x)
    local y = F.relu(self.bn1(self.conv1(x)))
    return F.relu(self.bn2(self.conv2(y)) + x)
  end
  local results = {}
  for _, engine in ipairs({ 'threaded', 'naive' }) do
    mx.engine.set_type(engine)
    mx.random.seed(2)
    local net = nn.HybridSequential()
    net:add(nn.Conv2D(4, 3, { padding = 1 }), Residual(4), nn.GlobalAvgPool2D(), nn.Dense(3))
    net:initialize(mx.init.Xavier())
    local x = mx.nd.random.uniform(0, 1, { 2, 3, 8, 8 })
    local l = mx.autograd.record(function() return net(x):sum() end)
    l:backward()
    results[engine] = { l:totable()[1], net[1].weight:grad():abs():sum():totable()[1] }
  end
  mx.engine.set_type('threaded')
  assert_near(results.naive[1], results.threaded[1], 1e-4)
  assert_near(results.naive[2], results.threaded[2], 1e-4)
end)

test('the examples of docs/gluon.md run', function()
  local here = debug.getinfo(1, 'S').source:match('^@(.*)/[^/]*$') or '.'
  assert_eq(run_doc_examples(here .. '/../../docs/gluon.md') >= 3, true)
end)
