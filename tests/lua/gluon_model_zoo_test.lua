-- mx.gluon.model_zoo.vision: every network's trainable parameter count
-- against MXNet's, forward shapes, hybridized against imperative runs,
-- MXNet's parameter names, pretrained loading and its errors, get_model.

local vision = mx.gluon.model_zoo.vision
local tu = mx.test_utils

-- Trainable parameters: those with a gradient (BatchNorm's running
-- statistics and its gamma/beta under scale/center = false have none).
local function trainable(net)
  local n = 0
  for _, p in ipairs(net:collect_params():values()) do
    if p.grad_req ~= 'null' then
      local size = 1
      for _, d in ipairs(p.shape) do size = size * d end
      n = n + size
    end
  end
  return n
end

-- A fresh empty directory (removed by the caller).
local function tmpdir()
  local dir = os.tmpname()
  os.remove(dir)
  os.execute('mkdir -p ' .. dir)
  return dir
end

-- ---- parameter counts ----------------------------------------------------------
-- MXNet's counts at classes = 1000 and 224x224 input (299x299 for
-- inception_v3), from an analytic count that follows MXNet's
-- model_zoo/vision sources layer by layer (convolution out*in/groups*kh*kw
-- plus out when it has a bias; BatchNorm gamma + beta when learned; Dense
-- in*out + out). They equal torchvision's counts where the architectures
-- agree: resnet18/34 v1, every vgg, alexnet, every densenet, both
-- squeezenets, inception_v3 without its auxiliary classifier. Where they
-- differ it is MXNet's design: ResNet v1 bottlenecks keep the biases of
-- their 1x1 convolutions (+18,880 / +40,640 / +59,840 over torchvision's
-- resnet50/101/152), MobileNet v2 keeps the expansion convolution of its
-- t = 1 block (+1,088) and classifies with a bias-free 1x1 convolution
-- (-1,000 against torchvision's 3,504,872). MobileNet v1 and ResNet v2
-- have no torchvision twin: their numbers are the analytic count alone.
local expected = {
  { 'resnet18_v1', 11689512 }, { 'resnet34_v1', 21797672 }, { 'resnet50_v1', 25575912 },
  { 'resnet101_v1', 44589800 }, { 'resnet152_v1', 60252648 },
  { 'resnet18_v2', 11687848 }, { 'resnet34_v2', 21796008 }, { 'resnet50_v2', 25549480 },
  { 'resnet101_v2', 44541608 }, { 'resnet152_v2', 60185256 },
  { 'vgg11', 132863336 }, { 'vgg13', 133047848 }, { 'vgg16', 138357544 }, { 'vgg19', 143667240 },
  { 'vgg11_bn', 132868840 }, { 'vgg13_bn', 133053736 }, { 'vgg16_bn', 138365992 },
  { 'vgg19_bn', 143678248 },
  { 'alexnet', 61100840 },
  { 'densenet121', 7978856 }, { 'densenet161', 28681000 }, { 'densenet169', 14149480 },
  { 'densenet201', 20013928 },
  { 'squeezenet1_0', 1248424 }, { 'squeezenet1_1', 1235496 },
  { 'mobilenet1_0', 4231976 }, { 'mobilenet0_75', 2585560 }, { 'mobilenet0_5', 1331592 },
  { 'mobilenet0_25', 470072 },
  { 'mobilenet_v2_1_0', 3504960 }, { 'mobilenet_v2_0_75', 2627592 },
  { 'mobilenet_v2_0_5', 1964736 }, { 'mobilenet_v2_0_25', 1516392 },
  { 'inception_v3', 23834568 },
}

for _, e in ipairs(expected) do
  local name, count = e[1], e[2]
  test(name .. ': trainable parameters as MXNet (' .. count .. ')', function()
    local net = vision[name]({ classes = 1000 })
    local size = name == 'inception_v3' and 299 or 224
    -- Shape inference through the traced graph: no arrays are computed.
    net:infer_shape(mx.nd.zeros({ 1, 3, size, size }))
    assert_eq(trainable(net), count, name)
  end)
end

test('ResNet v2: the BatchNorm on the raw input learns nothing', function()
  local net = vision.resnet18_v2()
  local bn = net.features[1]
  assert_eq(bn.gamma.grad_req, 'null')
  assert_eq(bn.beta.grad_req, 'null')
  net:infer_shape(mx.nd.zeros({ 1, 3, 224, 224 }))
  assert_eq(bn.gamma.shape, { 3 })
  assert_eq(net.features[2].weight.shape, { 64, 3, 7, 7 })
end)

-- ---- forward -----------------------------------------------------------------
test('resnet18_v1 with classes = 10: a {2, 3, 32, 32} batch gives {2, 10}', function()
  local net = vision.resnet18_v1({ classes = 10 })
  net:initialize(mx.init.Xavier())
  assert_eq(net(mx.nd.random.uniform(0, 1, { 2, 3, 32, 32 })).shape, { 2, 10 })
end)

test('thumbnail = true: a 3x3 stem for 32x32 images (v1 and v2)', function()
  for _, make in ipairs({ vision.resnet18_v1, vision.resnet50_v2 }) do
    local net = make({ classes = 10, thumbnail = true })
    net:initialize(mx.init.Xavier())
    assert_eq(net(mx.nd.random.uniform(0, 1, { 2, 3, 32, 32 })).shape, { 2, 10 })
    -- The stem is one convolution, stride 1: the first stage sees 32x32.
    local stem = make == vision.resnet18_v1 and net.features[1] or net.features[2]
    assert_eq(stem.weight.shape, { 64, 3, 3, 3 })
  end
end)

-- Hybridized (the traced graph through a CachedOp) against op by op.
local function hybrid_matches(net, shape)
  net:initialize(mx.init.Xavier())
  local x = mx.nd.random.uniform(-1, 1, shape)
  local y = net(x)
  net:hybridize()
  local y2 = net(x)
  assert_eq(net:_num_executors() > 0, true, 'hybridized run went through an executor')
  local scale = mx.nd.max(mx.nd.abs(y)):asscalar()
  assert_eq(scale > 0, true, 'output is not all zeros')
  tu.assert_almost_equal(y2, y, { rtol = 1e-5, atol = 1e-6 * scale })
  return y
end

test('resnet18_v1: hybridized forward equals the imperative one', function()
  local y = hybrid_matches(vision.resnet18_v1({ classes = 10 }), { 2, 3, 32, 32 })
  assert_eq(y.shape, { 2, 10 })
end)

-- One small net of each family, at the smallest input its pools allow.
local families = {
  { 'resnet50_v1', function() return vision.resnet50_v1({ classes = 10 }) end, 32 },
  { 'resnet18_v2', function() return vision.resnet18_v2({ classes = 10 }) end, 32 },
  { 'vgg11_bn', function() return vision.vgg11_bn({ classes = 10 }) end, 32 },
  { 'alexnet', function() return vision.alexnet({ classes = 10 }) end, 64 },
  -- DenseNet's code with a small configuration: ends in a 7x7 average pool.
  { 'DenseNet(8, 4, {2, 2})',
    function() return vision.DenseNet(8, 4, { 2, 2 }, { classes = 10 }) end, 56 },
  -- SqueezeNet averages a 13x13 map: 224 is its size.
  { 'squeezenet1_1', function() return vision.squeezenet1_1({ classes = 10 }) end, 224 },
  { 'mobilenet0_25', function() return vision.mobilenet0_25({ classes = 10 }) end, 32 },
  { 'mobilenet_v2_0_25', function() return vision.mobilenet_v2_0_25({ classes = 10 }) end, 32 },
}
for _, f in ipairs(families) do
  test(f[1] .. ': forward shape, hybridized equals imperative', function()
    local y = hybrid_matches(f[2](), { 2, 3, f[3], f[3] })
    assert_eq(y.shape, { 2, 10 })
  end)
end

test('inception_v3: 299x299 forward, BatchNorm epsilon 0.001', function()
  local net = vision.inception_v3({ classes = 10 })
  net:initialize(mx.init.Xavier())
  assert_eq(net(mx.nd.random.uniform(0, 1, { 1, 3, 299, 299 })).shape, { 1, 10 })
  assert_eq(net.features[1][2]._kw.eps, 0.001)
end)

test('MobileNet v2: ReLU6 clips at 0 and 6', function()
  local r = vision.RELU6()
  local y = r(mx.nd.array({ -3, 2, 9 }))
  assert_eq(y:totable(), { 0, 2, 6 })
end)

-- ---- names -------------------------------------------------------------------
test("parameter names follow MXNet's (by prefix and by place)", function()
  local net = vision.resnet18_v1()
  local p = net.prefix
  assert_eq(p:match('^resnetv1%d+_$') ~= nil, true, p)
  local names = {}
  for _, k in ipairs(net:collect_params():keys()) do names[k:sub(#p + 1)] = true end
  for _, k in ipairs({ 'conv0_weight', 'batchnorm0_gamma', 'stage1_conv0_weight',
    'stage2_conv0_weight', 'stage2_conv2_weight', 'stage2_batchnorm2_running_var',
    'dense0_weight' }) do
    assert_eq(names[k], true, k)
  end
  local places = net:_collect_params_with_prefix()
  for _, k in ipairs({ 'features.0.weight', 'features.5.0.body.0.weight',
    'features.5.0.downsample.0.weight', 'output.bias' }) do
    assert_eq(places[k] ~= nil, true, k)
  end
  -- A prefix = '' block opens no scope of its own, as in MXNet: AlexNet's
  -- output is its third Dense.
  local a = vision.alexnet()
  assert_eq(a.output.weight.name, a.prefix .. 'dense2_weight')
  local m = vision.mobilenet_v2_0_25()
  assert_eq(m.output[1].weight.name, m.prefix .. 'output_pred_weight')
  assert_eq(m.features[4].out[1].weight.name, m.prefix .. 'features_linearbottleneck0_conv0_weight')
  local inc = vision.inception_v3()
  assert_eq(inc.features[8].prefix, inc.prefix .. 'A1_')
end)

-- ---- pretrained ----------------------------------------------------------------
test('pretrained = true with no file: the error names the file to put where', function()
  local dir = tmpdir()
  local err = assert_error(function() vision.resnet18_v1({ pretrained = true, root = dir }) end,
    'pretrained weights not found')
  assert_eq(err:find(dir .. '/resnet18_v1.params', 1, true) ~= nil, true, err)
  assert_eq(err:find('nothing is downloaded', 1, true) ~= nil, true, err)
  -- MXNet's own file names: squeezenet1.0, mobilenetv2_0.25, inceptionv3.
  err = assert_error(function() vision.squeezenet1_0({ pretrained = true, root = dir }) end)
  assert_eq(err:find(dir .. '/squeezenet1.0.params', 1, true) ~= nil, true, err)
  err = assert_error(function() vision.mobilenet_v2_0_25({ pretrained = true, root = dir }) end)
  assert_eq(err:find(dir .. '/mobilenetv2_0.25.params', 1, true) ~= nil, true, err)
  err = assert_error(function() vision.vgg16_bn({ pretrained = true, root = dir }) end)
  assert_eq(err:find(dir .. '/vgg16_bn.params', 1, true) ~= nil, true, err)
  os.execute('rm -rf ' .. dir)
end)

test('the default root is ~/.mxnet/models', function()
  local home = os.getenv('HOME')
  if home then assert_eq(vision.default_root(), home .. '/.mxnet/models') end
  local err = assert_error(function()
    vision.get_resnet(1, 18, { pretrained = true, root = '/nonexistent/zoo/' })
  end, 'pretrained weights not found')
  assert_eq(err:find('/nonexistent/zoo/resnet18_v1.params', 1, true) ~= nil, true, err)
end)

test('pretrained = true loads root/NAME.params (by place or by prefixed name)', function()
  local dir = tmpdir()
  local x = mx.nd.random.uniform(0, 1, { 1, 3, 32, 32 })
  local net = vision.resnet18_v1({ classes = 10, thumbnail = true })
  net:initialize(mx.init.Xavier())
  local y = net(x)
  -- save_parameters: names by place ('features.0.weight'), MXNet 1.x's format.
  net:save_parameters(dir .. '/resnet18_v1.params')
  local loaded = vision.resnet18_v1({ classes = 10, thumbnail = true, pretrained = true,
    root = dir, ctx = mx.cpu() })
  tu.assert_almost_equal(loaded(x), y)
  os.remove(dir .. '/resnet18_v1.params')
  -- Full names without the net's prefix, under MXNet's cache name.
  net:collect_params():save(dir .. '/resnet18_v1-a0666292.params', net.prefix)
  loaded = vision.get_model('resnet18_v1', { classes = 10, thumbnail = true, pretrained = true,
    root = dir })
  tu.assert_almost_equal(loaded(x), y)
  os.execute('rm -rf ' .. dir)
end)

-- ---- get_model -----------------------------------------------------------------
test("get_model: MXNet's names, any case", function()
  local net = vision.get_model('resnet18_v1', { classes = 10 })
  assert_eq(mx.class.isinstance(net, vision.ResNetV1), true)
  assert_eq(mx.class.isinstance(vision.get_model('mobilenet0.25'), vision.MobileNet), true)
  local v2 = vision.get_model('MobileNetV2_0.25', { classes = 10 })
  assert_eq(mx.class.isinstance(v2, vision.MobileNetV2), true)
  assert_eq(v2.features[1].weight.shape[1], 8)  -- 32 * 0.25
  assert_eq(mx.class.isinstance(vision.get_model('squeezenet1.1'), vision.SqueezeNet), true)
  assert_eq(mx.class.isinstance(vision.get_model('inceptionv3'), vision.Inception3), true)
  assert_eq(mx.class.isinstance(vision.get_model('vgg13_bn'), vision.VGG), true)
  assert_eq(#vision.model_names(), 34)
end)

test('get_model: an unknown name lists the known ones', function()
  local err = assert_error(function() vision.get_model('resnet19_v1') end, 'not supported')
  for _, k in ipairs({ 'resnet18_v1', 'vgg16_bn', 'alexnet', 'densenet121', 'squeezenet1.0',
    'inceptionv3', 'mobilenet0.25', 'mobilenetv2_1.0' }) do
    assert_eq(err:find(k, 1, true) ~= nil, true, k)
  end
end)

test('invalid arguments are reported', function()
  assert_error(function() vision.get_resnet(3, 18) end, 'invalid version')
  assert_error(function() vision.get_resnet(1, 20) end, 'invalid number of layers')
  assert_error(function() vision.get_vgg(12) end, 'invalid number of layers')
  assert_error(function() vision.get_densenet(100) end, 'invalid number of layers')
  assert_error(function() vision.get_squeezenet('2.0') end, 'unsupported version')
  assert_error(function() vision.get_mobilenet(0) end, 'multiplier')
end)

test('help documents the constructors', function()
  for _, k in ipairs({ 'resnet18_v1', 'get_resnet', 'vgg16', 'alexnet', 'densenet121',
    'squeezenet1_0', 'mobilenet1_0', 'mobilenet_v2_1_0', 'inception_v3', 'get_model' }) do
    assert_eq(type(require('tessera.help').lookup(vision[k])), 'string', k)
  end
end)

test('resnet18_v1: a forward and backward on a small batch under both engines', function()
  local results = {}
  for _, engine in ipairs({ 'threaded', 'naive' }) do
    mx.engine.set_type(engine)
    mx.random.seed(4)
    local net = mx.gluon.model_zoo.vision.resnet18_v1 { classes = 10, thumbnail = true }
    net:initialize(mx.init.Xavier())
    local x = mx.nd.random.uniform(0, 1, { 2, 3, 32, 32 })
    local loss_fn = mx.gluon.loss.SoftmaxCrossEntropyLoss()
    local l = mx.autograd.record(function() return loss_fn(net(x), mx.nd.array({ 1, 7 })) end)
    l:backward()
    results[engine] = { l:sum():totable()[1],
      net.features[1].weight:grad():abs():sum():totable()[1] }
  end
  mx.engine.set_type('threaded')
  assert_near(results.naive[1], results.threaded[1], 1e-3)
  assert_near(results.naive[2], results.threaded[2], 1e-3 * results.threaded[2])
  assert_eq(results.threaded[2] > 0, true)
end)
