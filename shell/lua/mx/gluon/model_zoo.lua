-- mx.gluon.model_zoo: the image-classification networks of MXNet 1.x's
-- Gluon model zoo (model_zoo.vision): ResNet v1/v2, VGG, AlexNet,
-- DenseNet, SqueezeNet, MobileNet v1/v2 and Inception v3, built from
-- mx.gluon.nn layers with MXNet's layer order, options and block names, so
-- that MXNet's .params files load into them.
--
-- Every constructor takes one options table: classes (1000), pretrained
-- (false), root (~/.mxnet/models), ctx (mx.cpu()), and the net's own
-- options (thumbnail for ResNet, batch_norm for VGG, ...), plus prefix and
-- params as any Block. Nothing is ever downloaded: pretrained = true loads
-- root/NAME.params (or MXNet's cached NAME-HASH.params) and otherwise says
-- which file to put where.
--
-- Names follow MXNet's scopes: a block made with prefix = '' opens no scope
-- of its own in MXNet (its name_scope is a no-op), so its children are made
-- in the enclosing block's scope here too; that keeps parameter names such
-- as 'alexnet0_dense2_weight' identical to MXNet's.
local help = require 'tessera.help'

local floor = math.floor

return function(mx, G)
  local nn = G.nn
  local HybridBlock = G.HybridBlock
  local V = {}

  -- ---- options and pretrained weights ----------------------------------------
  -- A copy, so a constructor may fill in defaults without touching the
  -- caller's table.
  local function options(opts, what)
    if opts ~= nil and type(opts) ~= 'table' then
      error(('%s: options must be a table, got %s'):format(what, type(opts)), 3)
    end
    local o = {}
    for k, v in pairs(opts or {}) do o[k] = v end
    return o
  end

  -- What HybridBlock.__init takes from a constructor's options.
  local function block_opts(opts)
    return { prefix = opts.prefix, params = opts.params }
  end

  -- A classifier's __init: the block made from opts, then build(f) in its
  -- scope, f its features (a sequence that opens no scope of its own);
  -- build also makes self.output.
  local function init_net(self, opts, build)
    HybridBlock.__init(self, block_opts(opts))
    self:name_scope(function()
      local f = nn.HybridSequential({ prefix = '' })
      self.features = f
      build(f)
    end)
  end

  -- Every classifier runs its features, then its output.
  local function classifier_forward(self, _, x) return self.output(self.features(x)) end

  -- A classifier class, exported as V[name].
  local function classifier(name)
    local cls = HybridBlock:extend(name, { hybrid_forward = classifier_forward })
    V[name] = cls
    return cls
  end

  -- The first 8 hex digits of the SHA-1 of MXNet's published files: its
  -- cache (model_store) names them NAME-HASH.params, so a root filled by
  -- MXNet works as it is.
  local short_hash = {
    alexnet = '44335d1f', densenet121 = 'f27dbf2d', densenet161 = 'b6c8a957',
    densenet169 = '2603f878', densenet201 = '1cdbc116', inceptionv3 = 'ed47ec45',
    ['mobilenet0.25'] = '9f83e440', ['mobilenet0.5'] = '8e9d539c',
    ['mobilenet0.75'] = '529b2c7f', ['mobilenet1.0'] = '6b8c5106',
    ['mobilenetv2_1.0'] = '36da4ff1', ['mobilenetv2_0.75'] = 'e2be7b72',
    ['mobilenetv2_0.5'] = 'aabd26cd', ['mobilenetv2_0.25'] = 'ae8f9392',
    resnet18_v1 = 'a0666292', resnet34_v1 = '48216ba9', resnet50_v1 = '0aee57f9',
    resnet101_v1 = 'd988c13d', resnet152_v1 = '671c637a', resnet18_v2 = 'a81db45f',
    resnet34_v2 = '9d6b80bb', resnet50_v2 = 'ecdde353', resnet101_v2 = '18e93e4f',
    resnet152_v2 = 'f2695542', ['squeezenet1.0'] = '264ba497',
    ['squeezenet1.1'] = '33ba0f93', vgg11 = 'dd221b16', vgg11_bn = 'ee79a809',
    vgg13 = '6bc5de58', vgg13_bn = '7d97a06c', vgg16 = '64946753', vgg16_bn = '6b9dbe61',
    vgg19 = 'f7134366', vgg19_bn = '9730961c',
  }

  local function home() return os.getenv('HOME') or os.getenv('USERPROFILE') or '.' end

  -- MXNet expands '~' in root; a trailing '/' would double the separator.
  local function expand_root(root)
    if type(root) ~= 'string' or root == '' then
      error('model_zoo: root must be a directory path (a string)', 4)
    end
    if root:sub(1, 1) == '~' then root = home() .. root:sub(2) end
    if #root > 1 then root = root:gsub('/+$', '') end
    return root
  end

  local function readable(path)
    local f = io.open(path, 'rb')
    if f then f:close() end
    return f ~= nil
  end

  -- The net, with MXNet's weights loaded from root when opts.pretrained.
  local function finish(net, name, opts)
    if not opts.pretrained then return net end
    local root = expand_root(opts.root or V.default_root())
    local sep = root:sub(-1) == '/' and '' or '/'
    local file = root .. sep .. name .. '.params'
    local found = readable(file) and file or nil
    local cached = short_hash[name]
      and (root .. sep .. name .. '-' .. short_hash[name] .. '.params')
    if not found and cached and readable(cached) then found = cached end
    if not found then
      error(("%s: pretrained weights not found: put MXNet's %s .params file at %s (%snothing "
        .. 'is downloaded)'):format(name, name, file, cached and ("MXNet's cached name "
        .. name .. '-' .. short_hash[name] .. '.params there works too; ') or ''), 0)
    end
    net:load_parameters(found, opts.ctx or mx.cpu())
    return net
  end

  -- specs[num_layers] for a get_* function `who`; an error at its caller
  -- lists the counts there are.
  local function spec_of(specs, num_layers, who, counts)
    local spec = specs[num_layers]
    if not spec then
      error(('%s: invalid number of layers %s (%s)'):format(who, tostring(num_layers), counts), 3)
    end
    return spec
  end

  -- A get_* function of one argument, `who`: cls(arg, opts), with MXNet's
  -- weights file_of(arg) loaded when opts.pretrained.
  local function getter(who, cls, file_of)
    return function(arg, opts)
      opts = options(opts, who)
      return finish(cls(arg, opts), file_of(arg), opts)
    end
  end

  -- The constructor `who` of a net with no variants: cls(opts), with
  -- MXNet's weights `file` loaded when opts.pretrained.
  local function constructor(who, cls, file)
    return function(opts)
      opts = options(opts, who)
      return finish(cls(opts), file, opts)
    end
  end

  -- ---- blocks the zoo needs beyond nn ------------------------------------------
  -- HybridConcurrent: runs every child on the same input and concatenates
  -- their outputs along `axis` (1-based; -1 the last, as MXNet's default).
  local HybridConcurrent = nn.HybridSequential:extend('HybridConcurrent')
  function HybridConcurrent:__init(opts)
    opts = opts or {}
    nn.HybridSequential.__init(self, block_opts(opts))
    self._axis = opts.axis or -1
  end
  function HybridConcurrent:hybrid_forward(F, x)
    local outs = {}
    for i, c in ipairs(self._children) do outs[i] = c.block(x) end
    return F.concat(outs, { dim = self._axis })
  end
  function HybridConcurrent:_repr()
    local lines = { ('HybridConcurrent(axis = %d,'):format(self._axis) }
    for _, c in ipairs(self._children) do
      lines[#lines + 1] = ('  (%s): %s'):format(c.name, (tostring(c.block):gsub('\n', '\n  ')))
    end
    lines[#lines + 1] = ')'
    return table.concat(lines, '\n')
  end
  V.HybridConcurrent = HybridConcurrent

  -- Identity: the input as it is (DenseNet's shortcut beside a new layer).
  local Identity = HybridBlock:extend('Identity')
  function Identity:__init(opts) HybridBlock.__init(self, block_opts(opts or {})) end
  function Identity:hybrid_forward(_, x) return x end
  V.Identity = Identity

  -- ReLU6, min(max(x, 0), 6): MobileNet v2's activation.
  local RELU6 = HybridBlock:extend('RELU6')
  function RELU6:__init(opts) HybridBlock.__init(self, block_opts(opts or {})) end
  function RELU6:hybrid_forward(F, x)
    local o = { a_min = 0, a_max = 6 }
    if F == mx.sym then o.name = self.prefix .. 'fwd' end
    return F.clip(x, o)
  end
  V.RELU6 = RELU6

  -- ---- ResNet ------------------------------------------------------------------
  local function conv3x3(channels, stride, in_channels)
    return nn.Conv2D(channels, 3, { strides = stride, padding = 1, use_bias = false,
      in_channels = in_channels })
  end

  -- The shortcut's strided 1x1 projection, in a block that changes the
  -- stride or the width.
  local function projection(channels, stride, in_channels)
    return nn.Conv2D(channels, 1, { strides = stride, use_bias = false,
      in_channels = in_channels })
  end

  -- v1 blocks normalise the projection.
  local function v1_downsample(channels, stride, in_channels)
    local out = nn.HybridSequential({ prefix = '' })
    out:add(projection(channels, stride, in_channels), nn.BatchNorm())
    return out
  end

  -- A residual block class, exported as V[name]. Its __init(channels,
  -- stride, downsample, in_channels, opts) runs build(self, channels,
  -- stride, in_channels) for the layers, then, when downsample, makes the
  -- shortcut's projection with shortcut(channels, stride, in_channels). The
  -- blocks make their layers in the scope they are made in (a stage), as
  -- MXNet's do: they open no name scope of their own.
  local function residual_block(name, forward, shortcut, build)
    local cls = HybridBlock:extend(name, { hybrid_forward = forward })
    function cls:__init(channels, stride, downsample, in_channels, opts)
      HybridBlock.__init(self, block_opts(opts or {}))
      in_channels = in_channels or 0
      build(self, channels, stride, in_channels)
      if downsample then self.downsample = shortcut(channels, stride, in_channels) end
    end
    V[name] = cls
    return cls
  end

  local function v1_forward(self, F, x)
    local residual = x
    x = self.body(x)
    if self.downsample then residual = self.downsample(residual) end
    return F.Activation(residual + x, { act_type = 'relu' })
  end

  local BasicBlockV1 = residual_block('BasicBlockV1', v1_forward, v1_downsample,
    function(self, channels, stride, in_channels)
      self.body = nn.HybridSequential({ prefix = '' })
      self.body:add(conv3x3(channels, stride, in_channels), nn.BatchNorm(), nn.Activation('relu'),
        conv3x3(channels, 1, channels), nn.BatchNorm())
    end)

  -- MXNet's v1 bottleneck keeps the biases of its two 1x1 convolutions and
  -- strides in the first of them (torchvision's strides in the 3x3).
  local BottleneckV1 = residual_block('BottleneckV1', v1_forward, v1_downsample,
    function(self, channels, stride)
      local mid = floor(channels / 4)
      self.body = nn.HybridSequential({ prefix = '' })
      self.body:add(nn.Conv2D(mid, 1, { strides = stride }), nn.BatchNorm(),
        nn.Activation('relu'), conv3x3(mid, 1, mid), nn.BatchNorm(), nn.Activation('relu'),
        nn.Conv2D(channels, 1, { strides = 1 }), nn.BatchNorm())
    end)

  -- v2 blocks normalise first; the shortcut projection reads the
  -- normalised input. Their bodies are n (bnK, ReLU, convK) in a row.
  local function v2_forward(self, F, x, n)
    local residual = x
    x = F.Activation(self.bn1(x), { act_type = 'relu' })
    if self.downsample then residual = self.downsample(x) end
    x = self.conv1(x)
    for k = 2, n do
      x = F.Activation(self['bn' .. k](x), { act_type = 'relu' })
      x = self['conv' .. k](x)
    end
    return x + residual
  end

  local BasicBlockV2 = residual_block('BasicBlockV2',
    function(self, F, x) return v2_forward(self, F, x, 2) end, projection,
    function(self, channels, stride, in_channels)
      self.bn1 = nn.BatchNorm()
      self.conv1 = conv3x3(channels, stride, in_channels)
      self.bn2 = nn.BatchNorm()
      self.conv2 = conv3x3(channels, 1, channels)
    end)

  local BottleneckV2 = residual_block('BottleneckV2',
    function(self, F, x) return v2_forward(self, F, x, 3) end, projection,
    function(self, channels, stride)
      local mid = floor(channels / 4)
      self.bn1 = nn.BatchNorm()
      self.conv1 = nn.Conv2D(mid, 1, { strides = 1, use_bias = false })
      self.bn2 = nn.BatchNorm()
      self.conv2 = conv3x3(mid, stride, mid)
      self.bn3 = nn.BatchNorm()
      self.conv3 = nn.Conv2D(channels, 1, { strides = 1, use_bias = false })
    end)

  -- One stage ('stageN_'): the first block changes stride and width, the
  -- rest keep them.
  local function resnet_stage(block, num, channels, stride, index, in_channels)
    local stage = nn.HybridSequential({ prefix = ('stage%d_'):format(index) })
    stage:name_scope(function()
      stage:add(block(channels, stride, channels ~= in_channels, in_channels, { prefix = '' }))
      for _ = 2, num do stage:add(block(channels, 1, false, channels, { prefix = '' })) end
    end)
    return stage
  end

  -- The stages after the stem: stage i is layers[i] blocks of width
  -- channels[i + 1] reading channels[i]; all but the first halve the
  -- resolution.
  local function add_resnet_stages(f, block, layers, channels)
    for i, num in ipairs(layers) do
      local stride = i == 1 and 1 or 2
      f:add(resnet_stage(block, num, channels[i + 1], stride, i, channels[i]))
    end
  end

  local function check_resnet_args(cls, block, layers, channels)
    if type(block) ~= 'table' then error(cls .. ': block must be a block class', 3) end
    if type(layers) ~= 'table' or type(channels) ~= 'table' or #layers ~= #channels - 1 then
      error(cls .. ': channels must have one more entry than layers (the stem, then each stage)', 3)
    end
  end

  -- The stem: a 3x3 convolution for small images (thumbnail), else 7x7/2
  -- and a 3x3/2 max pool.
  local function resnet_stem(features, width, thumbnail)
    if thumbnail then
      features:add(conv3x3(width, 1, 0))
    else
      features:add(nn.Conv2D(width, 7, { strides = 2, padding = 3, use_bias = false }),
        nn.BatchNorm(), nn.Activation('relu'), nn.MaxPool2D(3, { strides = 2, padding = 1 }))
    end
  end

  -- A ResNet class, exported as V[name]: __init(block, layers, channels,
  -- opts). Its features are the stem, the stages, then the layers tail()
  -- returns; pre_norm puts a BatchNorm before the stem that normalises the
  -- raw input with running statistics only (nothing learned).
  local function resnet_class(name, pre_norm, tail)
    local cls = classifier(name)
    function cls:__init(block, layers, channels, opts)
      check_resnet_args(name, block, layers, channels)
      opts = opts or {}
      init_net(self, opts, function(f)
        if pre_norm then f:add(nn.BatchNorm({ scale = false, center = false })) end
        resnet_stem(f, channels[1], opts.thumbnail)
        add_resnet_stages(f, block, layers, channels)
        f:add(tail())
        self.output = nn.Dense(opts.classes or 1000, { in_units = channels[#channels] })
      end)
    end
    return cls
  end

  local ResNetV1 = resnet_class('ResNetV1', false, function() return nn.GlobalAvgPool2D() end)
  local ResNetV2 = resnet_class('ResNetV2', true, function()
    return nn.BatchNorm(), nn.Activation('relu'), nn.GlobalAvgPool2D(), nn.Flatten()
  end)

  local resnet_spec = {
    [18] = { 'basic', { 2, 2, 2, 2 }, { 64, 64, 128, 256, 512 } },
    [34] = { 'basic', { 3, 4, 6, 3 }, { 64, 64, 128, 256, 512 } },
    [50] = { 'bottleneck', { 3, 4, 6, 3 }, { 64, 256, 512, 1024, 2048 } },
    [101] = { 'bottleneck', { 3, 4, 23, 3 }, { 64, 256, 512, 1024, 2048 } },
    [152] = { 'bottleneck', { 3, 8, 36, 3 }, { 64, 256, 512, 1024, 2048 } },
  }
  local resnet_classes = {
    { net = ResNetV1, basic = BasicBlockV1, bottleneck = BottleneckV1 },
    { net = ResNetV2, basic = BasicBlockV2, bottleneck = BottleneckV2 },
  }

  function V.get_resnet(version, num_layers, opts)
    opts = options(opts, 'get_resnet')
    local spec = spec_of(resnet_spec, num_layers, 'get_resnet', '18, 34, 50, 101 or 152')
    local kind = resnet_classes[version]
    if not kind then
      error(('get_resnet: invalid version %s (1 or 2)'):format(tostring(version)), 2)
    end
    local net = kind.net(kind[spec[1]], spec[2], spec[3], opts)
    return finish(net, ('resnet%d_v%d'):format(num_layers, version), opts)
  end
  help.doc(V.get_resnet, [[
get_resnet(version, num_layers, {classes = 1000, thumbnail = false,
pretrained = false, root = '~/.mxnet/models', ctx = mx.cpu()}) -> ResNet
version 1 (He et al. 2015, 'Deep Residual Learning') or 2 (pre-activation,
'Identity Mappings in Deep Residual Networks') with 18, 34, 50, 101 or 152
layers. thumbnail = true swaps the 7x7/2 stem and its pool for one 3x3
convolution, for small images such as CIFAR's 32x32.]])

  for _, version in ipairs({ 1, 2 }) do
    for _, n in ipairs({ 18, 34, 50, 101, 152 }) do
      local name = ('resnet%d_v%d'):format(n, version)
      V[name] = function(opts) return V.get_resnet(version, n, opts) end
      help.doc(V[name], ([[
%s{classes = 1000, thumbnail = false, pretrained = false, root =
'~/.mxnet/models', ctx = mx.cpu()} -> ResNet-%d version %d
(%s); see get_resnet.
pretrained = true loads root/%s.params.]]):format(name, n, version,
        version == 1 and 'He et al., Deep Residual Learning'
          or 'pre-activation, Identity Mappings in Deep Residual Networks', name))
    end
  end

  -- ---- VGG ---------------------------------------------------------------------
  local VGG = classifier('VGG')
  function VGG:__init(layers, filters, opts)
    if type(layers) ~= 'table' or type(filters) ~= 'table' or #layers ~= #filters then
      error('VGG: layers and filters must be lists of the same length', 2)
    end
    opts = opts or {}
    init_net(self, opts, function(f)
      for i, num in ipairs(layers) do
        for _ = 1, num do
          -- He-style gaussian initialisation, as MXNet's VGG sets it.
          f:add(nn.Conv2D(filters[i], 3, { padding = 1, bias_initializer = 'zeros',
            weight_initializer = mx.init.Xavier({ rnd_type = 'gaussian', factor_type = 'out',
              magnitude = 2 }) }))
          if opts.batch_norm then f:add(nn.BatchNorm()) end
          f:add(nn.Activation('relu'))
        end
        f:add(nn.MaxPool2D(2, { strides = 2 }))
      end
      for _ = 1, 2 do
        f:add(nn.Dense(4096, { activation = 'relu', weight_initializer = 'normal',
          bias_initializer = 'zeros' }), nn.Dropout(0.5))
      end
      self.output = nn.Dense(opts.classes or 1000, { weight_initializer = 'normal',
        bias_initializer = 'zeros' })
    end)
  end

  local vgg_spec = {
    [11] = { 1, 1, 2, 2, 2 }, [13] = { 2, 2, 2, 2, 2 },
    [16] = { 2, 2, 3, 3, 3 }, [19] = { 2, 2, 4, 4, 4 },
  }
  local vgg_filters = { 64, 128, 256, 512, 512 }

  function V.get_vgg(num_layers, opts)
    opts = options(opts, 'get_vgg')
    local layers = spec_of(vgg_spec, num_layers, 'get_vgg', '11, 13, 16 or 19')
    local net = VGG(layers, vgg_filters, opts)
    return finish(net, ('vgg%d%s'):format(num_layers, opts.batch_norm and '_bn' or ''), opts)
  end
  help.doc(V.get_vgg, [[
get_vgg(num_layers, {classes = 1000, batch_norm = false, pretrained = false,
root = '~/.mxnet/models', ctx = mx.cpu()}) -> VGG with 11, 13, 16 or 19
layers (Simonyan and Zisserman, 'Very Deep Convolutional Networks'), with a
BatchNorm after every convolution when batch_norm. Expects 224x224 input
(its first Dense reads 512x7x7 features).]])

  for _, n in ipairs({ 11, 13, 16, 19 }) do
    for _, bn in ipairs({ false, true }) do
      local name = ('vgg%d%s'):format(n, bn and '_bn' or '')
      V[name] = function(opts)
        opts = options(opts, name)
        opts.batch_norm = bn
        return V.get_vgg(n, opts)
      end
      help.doc(V[name], ([[
%s{classes = 1000, pretrained = false, root = '~/.mxnet/models', ctx =
mx.cpu()} -> VGG-%d%s; see get_vgg. pretrained = true loads
root/%s.params.]]):format(name, n, bn and ' with batch normalisation' or '', name))
    end
  end

  -- ---- AlexNet -----------------------------------------------------------------
  local AlexNet = classifier('AlexNet')
  function AlexNet:__init(opts)
    opts = opts or {}
    init_net(self, opts, function(f)
      f:add(nn.Conv2D(64, 11, { strides = 4, padding = 2, activation = 'relu' }),
        nn.MaxPool2D(3, { strides = 2 }),
        nn.Conv2D(192, 5, { padding = 2, activation = 'relu' }),
        nn.MaxPool2D(3, { strides = 2 }),
        nn.Conv2D(384, 3, { padding = 1, activation = 'relu' }),
        nn.Conv2D(256, 3, { padding = 1, activation = 'relu' }),
        nn.Conv2D(256, 3, { padding = 1, activation = 'relu' }),
        nn.MaxPool2D(3, { strides = 2 }),
        nn.Flatten(),
        nn.Dense(4096, { activation = 'relu' }), nn.Dropout(0.5),
        nn.Dense(4096, { activation = 'relu' }), nn.Dropout(0.5))
      self.output = nn.Dense(opts.classes or 1000)
    end)
  end

  V.alexnet = constructor('alexnet', AlexNet, 'alexnet')
  help.doc(V.alexnet, [[
alexnet{classes = 1000, pretrained = false, root = '~/.mxnet/models', ctx =
mx.cpu()} -> AlexNet as in Krizhevsky's 'One weird trick' (64, 192, 384,
256, 256 channels; dropout after each hidden Dense). Expects 224x224 input.
pretrained = true loads root/alexnet.params.]])

  -- ---- DenseNet ----------------------------------------------------------------
  local function dense_layer(growth_rate, bn_size, dropout)
    local new = nn.HybridSequential({ prefix = '' })
    new:add(nn.BatchNorm(), nn.Activation('relu'),
      nn.Conv2D(bn_size * growth_rate, 1, { use_bias = false }),
      nn.BatchNorm(), nn.Activation('relu'),
      nn.Conv2D(growth_rate, 3, { padding = 1, use_bias = false }))
    if dropout and dropout > 0 then new:add(nn.Dropout(dropout)) end
    -- The layer's output is its input with growth_rate new channels after it.
    local out = HybridConcurrent({ axis = 2, prefix = '' })
    out:add(Identity(), new)
    return out
  end

  local function dense_block(num_layers, bn_size, growth_rate, dropout, index)
    local block = nn.HybridSequential({ prefix = ('stage%d_'):format(index) })
    block:name_scope(function()
      for _ = 1, num_layers do block:add(dense_layer(growth_rate, bn_size, dropout)) end
    end)
    return block
  end

  local function transition(channels)
    local out = nn.HybridSequential({ prefix = '' })
    out:add(nn.BatchNorm(), nn.Activation('relu'), nn.Conv2D(channels, 1, { use_bias = false }),
      nn.AvgPool2D(2, { strides = 2 }))
    return out
  end

  local DenseNet = classifier('DenseNet')
  function DenseNet:__init(num_init_features, growth_rate, block_config, opts)
    opts = opts or {}
    local bn_size, dropout = opts.bn_size or 4, opts.dropout or 0
    init_net(self, opts, function(f)
      f:add(nn.Conv2D(num_init_features, 7, { strides = 2, padding = 3, use_bias = false }),
        nn.BatchNorm(), nn.Activation('relu'), nn.MaxPool2D(3, { strides = 2, padding = 1 }))
      local features = num_init_features
      for i, num_layers in ipairs(block_config) do
        f:add(dense_block(num_layers, bn_size, growth_rate, dropout, i))
        features = features + num_layers * growth_rate
        if i ~= #block_config then
          -- Transitions halve the channels and the resolution.
          features = floor(features / 2)
          f:add(transition(features))
        end
      end
      f:add(nn.BatchNorm(), nn.Activation('relu'), nn.AvgPool2D(7), nn.Flatten())
      self.output = nn.Dense(opts.classes or 1000)
    end)
  end

  local densenet_spec = {
    [121] = { 64, 32, { 6, 12, 24, 16 } }, [161] = { 96, 48, { 6, 12, 36, 24 } },
    [169] = { 64, 32, { 6, 12, 32, 32 } }, [201] = { 64, 32, { 6, 12, 48, 32 } },
  }

  function V.get_densenet(num_layers, opts)
    opts = options(opts, 'get_densenet')
    local spec = spec_of(densenet_spec, num_layers, 'get_densenet', '121, 161, 169 or 201')
    local net = DenseNet(spec[1], spec[2], spec[3], opts)
    return finish(net, ('densenet%d'):format(num_layers), opts)
  end
  help.doc(V.get_densenet, [[
get_densenet(num_layers, {classes = 1000, bn_size = 4, dropout = 0,
pretrained = false, root = '~/.mxnet/models', ctx = mx.cpu()}) -> DenseNet-BC
with 121, 161, 169 or 201 layers (Huang et al., 'Densely Connected
Convolutional Networks'). Expects 224x224 input (it ends in a 7x7 average
pool).]])

  for _, n in ipairs({ 121, 161, 169, 201 }) do
    local name = 'densenet' .. n
    V[name] = function(opts) return V.get_densenet(n, opts) end
    help.doc(V[name], ([[
%s{classes = 1000, pretrained = false, root = '~/.mxnet/models', ctx =
mx.cpu()} -> DenseNet-BC-%d; see get_densenet. pretrained = true loads
root/%s.params.]]):format(name, n, name))
  end

  -- ---- SqueezeNet --------------------------------------------------------------
  local function fire_conv(channels, kernel, padding)
    local out = nn.HybridSequential({ prefix = '' })
    out:add(nn.Conv2D(channels, kernel, { padding = padding or 0 }), nn.Activation('relu'))
    return out
  end

  -- A fire module: a 1x1 squeeze, then 1x1 and 3x3 expansions side by side.
  local function fire(squeeze, expand1x1, expand3x3)
    local out = nn.HybridSequential({ prefix = '' })
    out:add(fire_conv(squeeze, 1))
    local paths = HybridConcurrent({ axis = 2, prefix = '' })
    paths:add(fire_conv(expand1x1, 1))
    paths:add(fire_conv(expand3x3, 3, 1))
    out:add(paths)
    return out
  end

  -- Each version's features: its first convolution {channels, kernel}
  -- (stride 2, then a pool), then fire modules {squeeze, expand1x1,
  -- expand3x3} and pools. 1.1 pools earlier: about 2.4x less computation,
  -- same accuracy.
  local squeezenet_spec = {
    ['1.0'] = { { 96, 7 }, { 16, 64, 64 }, { 16, 64, 64 }, { 32, 128, 128 }, 'pool',
      { 32, 128, 128 }, { 48, 192, 192 }, { 48, 192, 192 }, { 64, 256, 256 }, 'pool',
      { 64, 256, 256 } },
    ['1.1'] = { { 64, 3 }, { 16, 64, 64 }, { 16, 64, 64 }, 'pool', { 32, 128, 128 },
      { 32, 128, 128 }, 'pool', { 48, 192, 192 }, { 48, 192, 192 }, { 64, 256, 256 },
      { 64, 256, 256 } },
  }

  local SqueezeNet = classifier('SqueezeNet')
  function SqueezeNet:__init(version, opts)
    local spec = squeezenet_spec[version]
    if not spec then
      error(("SqueezeNet: unsupported version %s ('1.0' or '1.1')"):format(tostring(version)), 2)
    end
    opts = opts or {}
    init_net(self, opts, function(f)
      local function pool() return nn.MaxPool2D(3, { strides = 2, ceil_mode = true }) end
      f:add(nn.Conv2D(spec[1][1], spec[1][2], { strides = 2 }), nn.Activation('relu'), pool())
      for i = 2, #spec do
        local l = spec[i]
        f:add(l == 'pool' and pool() or fire(l[1], l[2], l[3]))
      end
      f:add(nn.Dropout(0.5))
      -- The classifier is a 1x1 convolution averaged over the 13x13 map.
      self.output = nn.HybridSequential({ prefix = '' })
      self.output:add(nn.Conv2D(opts.classes or 1000, 1), nn.Activation('relu'), nn.AvgPool2D(13),
        nn.Flatten())
    end)
  end

  V.get_squeezenet = getter('get_squeezenet', SqueezeNet,
    function(version) return 'squeezenet' .. version end)
  help.doc(V.get_squeezenet, [[
get_squeezenet(version, {classes = 1000, pretrained = false, root =
'~/.mxnet/models', ctx = mx.cpu()}) -> SqueezeNet '1.0' (Iandola et al.) or
'1.1' (the official repository's lighter variant). Expects 224x224 input
(its classifier averages a 13x13 map).]])
  V.squeezenet1_0 = function(opts) return V.get_squeezenet('1.0', opts) end
  V.squeezenet1_1 = function(opts) return V.get_squeezenet('1.1', opts) end
  help.doc(V.squeezenet1_0, [[
squeezenet1_0{classes = 1000, pretrained = false, root = '~/.mxnet/models',
ctx = mx.cpu()} -> SqueezeNet 1.0; see get_squeezenet. pretrained = true
loads root/squeezenet1.0.params.]])
  help.doc(V.squeezenet1_1, [[
squeezenet1_1{classes = 1000, pretrained = false, root = '~/.mxnet/models',
ctx = mx.cpu()} -> SqueezeNet 1.1; see get_squeezenet. pretrained = true
loads root/squeezenet1.1.params.]])

  -- ---- MobileNet v1 and v2 -------------------------------------------------------
  -- Convolution (no bias), BatchNorm, then ReLU or ReLU6 unless o.active
  -- is false (v2's linear projections).
  local function add_conv(out, o)
    out:add(nn.Conv2D(o.channels, o.kernel or 1, { strides = o.stride or 1, padding = o.pad or 0,
      groups = o.groups or 1, use_bias = false }))
    out:add(nn.BatchNorm({ scale = true }))
    if o.active ~= false then out:add(o.relu6 and RELU6() or nn.Activation('relu')) end
  end

  -- A depthwise 3x3 then a pointwise 1x1.
  local function add_conv_dw(out, dw_channels, channels, stride)
    add_conv(out, { channels = dw_channels, kernel = 3, stride = stride, pad = 1,
      groups = dw_channels })
    add_conv(out, { channels = channels })
  end

  local function scaled(list, multiplier)
    local out = {}
    for i, c in ipairs(list) do out[i] = floor(c * multiplier) end
    return out
  end

  local function repeated(...)
    local out = {}
    local spec = { ... }
    for i = 1, #spec, 2 do
      for _ = 1, spec[i + 1] do out[#out + 1] = spec[i] end
    end
    return out
  end

  local function check_multiplier(cls, m)
    if type(m) ~= 'number' or m <= 0 then
      error(('%s: multiplier must be a positive number, got %s'):format(cls, tostring(m)), 3)
    end
  end

  local MobileNet = classifier('MobileNet')
  function MobileNet:__init(multiplier, opts)
    multiplier = multiplier or 1
    check_multiplier('MobileNet', multiplier)
    opts = opts or {}
    init_net(self, opts, function(f)
      add_conv(f, { channels = floor(32 * multiplier), kernel = 3, pad = 1, stride = 2 })
      local dw = scaled(repeated(32, 1, 64, 1, 128, 2, 256, 2, 512, 6, 1024, 1), multiplier)
      local channels = scaled(repeated(64, 1, 128, 2, 256, 2, 512, 6, 1024, 2), multiplier)
      local strides = { 1, 2, 1, 2, 1, 2, 1, 1, 1, 1, 1, 2, 1 }
      for i = 1, #dw do add_conv_dw(f, dw[i], channels[i], strides[i]) end
      f:add(nn.GlobalAvgPool2D(), nn.Flatten())
      self.output = nn.Dense(opts.classes or 1000)
    end)
  end

  -- An inverted residual: 1x1 expansion by t, depthwise 3x3, linear 1x1
  -- projection; the input is added back when the shapes agree.
  local LinearBottleneck = HybridBlock:extend('LinearBottleneck')
  function LinearBottleneck:__init(in_channels, channels, t, stride, opts)
    HybridBlock.__init(self, block_opts(opts or {}))
    self.use_shortcut = stride == 1 and in_channels == channels
    self:name_scope(function()
      self.out = nn.HybridSequential()
      -- MXNet keeps the expansion even for t = 1 (torchvision drops it).
      add_conv(self.out, { channels = in_channels * t, relu6 = true })
      add_conv(self.out, { channels = in_channels * t, kernel = 3, stride = stride, pad = 1,
        groups = in_channels * t, relu6 = true })
      add_conv(self.out, { channels = channels, active = false })
    end)
  end
  function LinearBottleneck:hybrid_forward(F, x)
    local out = self.out(x)
    if self.use_shortcut then out = F.elemwise_add(out, x) end
    return out
  end
  V.LinearBottleneck = LinearBottleneck

  local MobileNetV2 = classifier('MobileNetV2')
  function MobileNetV2:__init(multiplier, opts)
    multiplier = multiplier or 1
    check_multiplier('MobileNetV2', multiplier)
    opts = opts or {}
    HybridBlock.__init(self, block_opts(opts))
    self:name_scope(function()
      local f = nn.HybridSequential({ prefix = 'features_' })
      self.features = f
      f:name_scope(function()
        add_conv(f, { channels = floor(32 * multiplier), kernel = 3, stride = 2, pad = 1,
          relu6 = true })
        local ins = scaled(repeated(32, 1, 16, 1, 24, 2, 32, 3, 64, 4, 96, 3, 160, 3), multiplier)
        local outs = scaled(repeated(16, 1, 24, 2, 32, 3, 64, 4, 96, 3, 160, 3, 320, 1), multiplier)
        local strides = { 1, 2, 1, 2, 1, 1, 2, 1, 1, 1, 1, 1, 1, 2, 1, 1, 1 }
        for i = 1, #ins do
          f:add(LinearBottleneck(ins[i], outs[i], i == 1 and 1 or 6, strides[i]))
        end
        -- The last layer only widens for multipliers above 1.
        local last = multiplier > 1 and floor(1280 * multiplier) or 1280
        add_conv(f, { channels = last, relu6 = true })
        f:add(nn.GlobalAvgPool2D())
      end)
      local out = nn.HybridSequential({ prefix = 'output_' })
      self.output = out
      out:name_scope(function()
        out:add(nn.Conv2D(opts.classes or 1000, 1, { use_bias = false, prefix = 'pred_' }),
          nn.Flatten())
      end)
    end)
  end

  -- MXNet's file names: two decimals, '1.00' and '0.50' shortened.
  local function multiplier_name(m)
    local s = ('%.2f'):format(m)
    if s == '1.00' or s == '0.50' then s = s:sub(1, -2) end
    return s
  end

  V.get_mobilenet = getter('get_mobilenet', MobileNet,
    function(m) return 'mobilenet' .. multiplier_name(m) end)
  help.doc(V.get_mobilenet, [[
get_mobilenet(multiplier, {classes = 1000, pretrained = false, root =
'~/.mxnet/models', ctx = mx.cpu()}) -> MobileNet v1 (Howard et al.) with
every width scaled by multiplier (1.0, 0.75, 0.5, 0.25 have MXNet weights).]])

  V.get_mobilenet_v2 = getter('get_mobilenet_v2', MobileNetV2,
    function(m) return 'mobilenetv2_' .. multiplier_name(m) end)
  help.doc(V.get_mobilenet_v2, [[
get_mobilenet_v2(multiplier, {classes = 1000, pretrained = false, root =
'~/.mxnet/models', ctx = mx.cpu()}) -> MobileNet v2 (Sandler et al.,
'Inverted Residuals and Linear Bottlenecks') with widths scaled by
multiplier; ReLU6 activations; the classifier is a bias-free 1x1
convolution.]])

  for _, m in ipairs({ { 1.0, '1_0' }, { 0.75, '0_75' }, { 0.5, '0_5' }, { 0.25, '0_25' } }) do
    local v1, v2 = 'mobilenet' .. m[2], 'mobilenet_v2_' .. m[2]
    V[v1] = function(opts) return V.get_mobilenet(m[1], opts) end
    V[v2] = function(opts) return V.get_mobilenet_v2(m[1], opts) end
    help.doc(V[v1], ([[
%s{classes = 1000, pretrained = false, root = '~/.mxnet/models', ctx =
mx.cpu()} -> MobileNet v1 with width multiplier %g; see get_mobilenet.
pretrained = true loads root/mobilenet%s.params.]]):format(v1, m[1], multiplier_name(m[1])))
    help.doc(V[v2], ([[
%s{classes = 1000, pretrained = false, root = '~/.mxnet/models', ctx =
mx.cpu()} -> MobileNet v2 with width multiplier %g; see get_mobilenet_v2.
pretrained = true loads root/mobilenetv2_%s.params.]]):format(v2, m[1], multiplier_name(m[1])))
  end

  -- ---- Inception v3 --------------------------------------------------------------
  -- Convolution (no bias), BatchNorm with epsilon 0.001, ReLU.
  local function basic_conv(channels, kernel, strides, padding)
    local out = nn.HybridSequential({ prefix = '' })
    out:add(nn.Conv2D(channels, kernel, { strides = strides or 1, padding = padding or 0,
      use_bias = false }))
    out:add(nn.BatchNorm({ epsilon = 0.001 }))
    out:add(nn.Activation('relu'))
    return out
  end

  -- A branch: an optional pool ('avg' 3x3/1 padded, 'max' 3x3/2), then one
  -- basic_conv per setting {channels, kernel, strides, padding} (nil: the
  -- default).
  local function branch(pool, ...)
    local out = nn.HybridSequential({ prefix = '' })
    if pool == 'avg' then
      out:add(nn.AvgPool2D(3, { strides = 1, padding = 1 }))
    elseif pool == 'max' then
      out:add(nn.MaxPool2D(3, { strides = 2 }))
    end
    for i = 1, select('#', ...) do
      local s = select(i, ...)
      out:add(basic_conv(s[1], s[2], s[3], s[4]))
    end
    return out
  end

  local function concurrent(prefix, fill)
    local out = HybridConcurrent({ axis = 2, prefix = prefix })
    out:name_scope(function() fill(out) end)
    return out
  end

  local function inception_a(pool_features, prefix)
    return concurrent(prefix, function(out)
      out:add(branch(nil, { 64, 1 }))
      out:add(branch(nil, { 48, 1 }, { 64, 5, nil, 2 }))
      out:add(branch(nil, { 64, 1 }, { 96, 3, nil, 1 }, { 96, 3, nil, 1 }))
      out:add(branch('avg', { pool_features, 1 }))
    end)
  end

  local function inception_b(prefix)
    return concurrent(prefix, function(out)
      out:add(branch(nil, { 384, 3, 2 }))
      out:add(branch(nil, { 64, 1 }, { 96, 3, nil, 1 }, { 96, 3, 2 }))
      out:add(branch('max'))
    end)
  end

  local function inception_c(c7, prefix)
    return concurrent(prefix, function(out)
      out:add(branch(nil, { 192, 1 }))
      -- 7x7 convolutions factored into 1x7 and 7x1, once and twice.
      local function row(c) return { c, { 1, 7 }, nil, { 0, 3 } } end
      local function col(c) return { c, { 7, 1 }, nil, { 3, 0 } } end
      out:add(branch(nil, { c7, 1 }, row(c7), col(192)))
      out:add(branch(nil, { c7, 1 }, col(c7), row(c7), col(c7), row(192)))
      out:add(branch('avg', { 192, 1 }))
    end)
  end

  local function inception_d(prefix)
    return concurrent(prefix, function(out)
      out:add(branch(nil, { 192, 1 }, { 320, 3, 2 }))
      out:add(branch(nil, { 192, 1 }, { 192, { 1, 7 }, nil, { 0, 3 } },
        { 192, { 7, 1 }, nil, { 3, 0 } }, { 192, 3, 2 }))
      out:add(branch('max'))
    end)
  end

  -- E: the 3x3 paths end in 1x3 and 3x1 convolutions side by side. Blocks
  -- are made in MXNet's order, which numbers their names.
  local function inception_e(prefix)
    return concurrent(prefix, function(out)
      out:add(branch(nil, { 320, 1 }))
      local b3 = nn.HybridSequential({ prefix = '' })
      out:add(b3)
      b3:add(branch(nil, { 384, 1 }))
      local split = HybridConcurrent({ axis = 2, prefix = '' })
      split:add(branch(nil, { 384, { 1, 3 }, nil, { 0, 1 } }))
      split:add(branch(nil, { 384, { 3, 1 }, nil, { 1, 0 } }))
      b3:add(split)
      local dbl = nn.HybridSequential({ prefix = '' })
      out:add(dbl)
      dbl:add(branch(nil, { 448, 1 }, { 384, 3, nil, 1 }))
      local dbl_split = HybridConcurrent({ axis = 2, prefix = '' })
      dbl:add(dbl_split)
      dbl_split:add(branch(nil, { 384, { 1, 3 }, nil, { 0, 1 } }))
      dbl_split:add(branch(nil, { 384, { 3, 1 }, nil, { 1, 0 } }))
      out:add(branch('avg', { 192, 1 }))
    end)
  end

  local Inception3 = classifier('Inception3')
  function Inception3:__init(opts)
    opts = opts or {}
    init_net(self, opts, function(f)
      f:add(basic_conv(32, 3, 2))
      f:add(basic_conv(32, 3))
      f:add(basic_conv(64, 3, nil, 1))
      f:add(nn.MaxPool2D(3, { strides = 2 }))
      f:add(basic_conv(80, 1))
      f:add(basic_conv(192, 3))
      f:add(nn.MaxPool2D(3, { strides = 2 }))
      f:add(inception_a(32, 'A1_'))
      f:add(inception_a(64, 'A2_'))
      f:add(inception_a(64, 'A3_'))
      f:add(inception_b('B_'))
      f:add(inception_c(128, 'C1_'))
      f:add(inception_c(160, 'C2_'))
      f:add(inception_c(160, 'C3_'))
      f:add(inception_c(192, 'C4_'))
      f:add(inception_d('D_'))
      f:add(inception_e('E1_'))
      f:add(inception_e('E2_'))
      f:add(nn.AvgPool2D(8))
      f:add(nn.Dropout(0.5))
      self.output = nn.Dense(opts.classes or 1000)
    end)
  end

  V.inception_v3 = constructor('inception_v3', Inception3, 'inceptionv3')
  help.doc(V.inception_v3, [[
inception_v3{classes = 1000, pretrained = false, root = '~/.mxnet/models',
ctx = mx.cpu()} -> Inception v3 (Szegedy et al., 'Rethinking the Inception
Architecture'), without the auxiliary classifier. Expects 299x299 input (it
ends in an 8x8 average pool). pretrained = true loads
root/inceptionv3.params.]])

  -- ---- by name -----------------------------------------------------------------
  -- MXNet's spellings (get_model in model_zoo/vision/__init__.py).
  local by_name = {
    alexnet = V.alexnet, inceptionv3 = V.inception_v3,
    ['squeezenet1.0'] = V.squeezenet1_0, ['squeezenet1.1'] = V.squeezenet1_1,
  }
  for _, v in ipairs({ 1, 2 }) do
    for _, n in ipairs({ 18, 34, 50, 101, 152 }) do
      local name = ('resnet%d_v%d'):format(n, v)
      by_name[name] = V[name]
    end
  end
  for _, n in ipairs({ 11, 13, 16, 19 }) do
    by_name['vgg' .. n], by_name['vgg' .. n .. '_bn'] = V['vgg' .. n], V['vgg' .. n .. '_bn']
  end
  for _, n in ipairs({ 121, 161, 169, 201 }) do by_name['densenet' .. n] = V['densenet' .. n] end
  local multipliers = { { '1.0', '1_0' }, { '0.75', '0_75' }, { '0.5', '0_5' }, { '0.25', '0_25' } }
  for _, m in ipairs(multipliers) do
    by_name['mobilenet' .. m[1]] = V['mobilenet' .. m[2]]
    by_name['mobilenetv2_' .. m[1]] = V['mobilenet_v2_' .. m[2]]
  end

  function V.model_names()
    local names = {}
    for k in pairs(by_name) do names[#names + 1] = k end
    table.sort(names)
    return names
  end
  help.doc(V.model_names, 'model_names() -> the names get_model knows, sorted')

  function V.get_model(name, opts)
    if type(name) ~= 'string' then
      error('get_model: name must be a string, got ' .. type(name), 2)
    end
    local make = by_name[name:lower()]
    if not make then
      error(("get_model: model '%s' is not supported; the known models are: %s"):format(name,
        table.concat(V.model_names(), ', ')), 2)
    end
    return make(opts)
  end
  help.doc(V.get_model, [[
get_model(name, {classes = 1000, pretrained = false, root =
'~/.mxnet/models', ctx = mx.cpu(), ...}) -> a model zoo network by MXNet's
name: resnet18_v1 ... resnet152_v2, vgg11 ... vgg19_bn, alexnet,
densenet121/161/169/201, squeezenet1.0, squeezenet1.1, inceptionv3,
mobilenet1.0/0.75/0.5/0.25, mobilenetv2_1.0/0.75/0.5/0.25 (case ignored).]])

  function V.default_root() return home() .. '/.mxnet/models' end
  help.doc(V.default_root, "default_root() -> os.getenv('HOME') .. '/.mxnet/models', where "
    .. 'pretrained weights are looked for unless root is given')

  help.doc(V, [[
mx.gluon.model_zoo.vision: MXNet 1.x's model zoo networks, built from
mx.gluon.nn. Constructors take {classes = 1000, pretrained = false, root =
'~/.mxnet/models', ctx = mx.cpu()}: resnet18_v1 ... resnet152_v1,
resnet18_v2 ... resnet152_v2 (+ thumbnail), get_resnet(version, layers);
vgg11/13/16/19 and _bn, get_vgg(layers, {batch_norm}); alexnet;
densenet121/161/169/201; squeezenet1_0, squeezenet1_1; mobilenet1_0,
mobilenet0_75, mobilenet0_5, mobilenet0_25, get_mobilenet(multiplier);
mobilenet_v2_1_0 ... mobilenet_v2_0_25, get_mobilenet_v2(multiplier);
inception_v3 (299x299 input); get_model(name) by MXNet's names. Nothing is
downloaded: pretrained = true loads root/NAME.params (MXNet's file), or
says where to put it.
  local net = mx.gluon.model_zoo.vision.resnet18_v1{classes = 10, thumbnail = true}
  net:initialize(mx.init.Xavier())
  local y = net(mx.nd.zeros({8, 3, 32, 32}))   -- 8x10]])

  local Z = { vision = V }
  help.doc(Z, [[
mx.gluon.model_zoo: pre-defined networks, as MXNet's gluon.model_zoo.
vision holds the image classifiers (see help(mx.gluon.model_zoo.vision)).]])
  return Z
end
