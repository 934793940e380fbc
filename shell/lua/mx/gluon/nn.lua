-- mx.gluon.nn: layers (MXNet's gluon/nn in Lua). Each layer is a
-- HybridBlock whose hybrid_forward calls the registry's operators through
-- F (mx.nd or mx.sym), so the same code runs op by op and traced.
--
-- Options follow MXNet's keyword arguments, in a trailing table:
-- nn.Dense(10, {activation = 'relu', in_units = 784}) or
-- nn.Dense{units = 10, ...}. Axes are 1-based, as everywhere in Lua
-- (BatchNorm's channel axis is 2, MXNet's axis=1).
local help = require 'tessera.help'

local unpack = unpack or table.unpack

return function(mx, G)
  local nn = {}
  local Block, HybridBlock = G.Block, G.HybridBlock

  -- Positional first argument or an options table holding it by name.
  local function args(first, opts, key)
    if type(first) == 'table' and opts == nil and getmetatable(first) == nil then
      return first[key], first
    end
    return first, opts or {}
  end

  local function check_positive(v, layer, key)
    if type(v) ~= 'number' or v < 1 or v % 1 ~= 0 then
      error(("%s: %s must be a positive whole number, got %s"):format(layer, key, tostring(v)), 4)
    end
    return v
  end

  -- A number or a table of n numbers, as a table of n numbers.
  local function tuple(v, n, layer, key)
    if type(v) == 'number' then
      local t = {}
      for i = 1, n do t[i] = v end
      return t
    end
    if type(v) ~= 'table' or #v ~= n then
      error(("%s: %s must be a number or a table of %d numbers"):format(layer, key, n), 4)
    end
    return v
  end

  -- Operator options, named under the block's prefix when traced.
  local function named(F, self, opts, suffix)
    if F == mx.sym then opts.name = self.prefix .. (suffix or 'fwd') end
    return opts
  end

  local function shape_str(v) return v and v > 0 and tostring(v) or 'None' end

  -- ---- containers ----------------------------------------------------------
  local function add_all(self, ...)
    for i = 1, select('#', ...) do
      local b = select(i, ...)
      if not mx.class.isinstance(b, Block) then
        error(('%s:add: argument %d is not a Block'):format(self.name, i), 3)
      end
      self:register_child(b)
    end
    return self
  end

  local Sequential = Block:extend('Sequential')
  function Sequential:__init(opts) Block.__init(self, opts) end
  function Sequential:add(...) return add_all(self, ...) end
  function Sequential:forward(x, ...)
    for _, c in ipairs(self._children) do x = c.block(x, ...) end
    return x
  end
  function Sequential:size() return #self._children end
  nn.Sequential = Sequential

  local HybridSequential = HybridBlock:extend('HybridSequential')
  function HybridSequential:__init(opts) HybridBlock.__init(self, opts) end
  function HybridSequential:add(...)
    for i = 1, select('#', ...) do
      if not mx.class.isinstance(select(i, ...), HybridBlock) then
        error(('%s:add: argument %d is not a HybridBlock'):format(self.name, i), 2)
      end
    end
    return add_all(self, ...)
  end
  function HybridSequential:hybrid_forward(_, x, ...)
    local n = select('#', ...)
    local extra = { ... }
    extra[n] = nil  -- the params table (none of its own)
    for _, c in ipairs(self._children) do x = c.block(x, unpack(extra, 1, n - 1)) end
    return x
  end
  function HybridSequential:size() return #self._children end
  nn.HybridSequential = HybridSequential

  -- ---- Dense ---------------------------------------------------------------
  local Activation = HybridBlock:extend('Activation')
  function Activation:__init(activation, opts)
    activation, opts = args(activation, opts, 'activation')
    if type(activation) ~= 'string' then
      error('Activation: activation must be a name (relu, sigmoid, tanh, softrelu, softsign)', 2)
    end
    HybridBlock.__init(self, { prefix = opts.prefix, params = opts.params, hint = activation })
    self._act_type = activation
  end
  function Activation:hybrid_forward(F, x)
    return F.Activation(x, named(F, self, { act_type = self._act_type }))
  end
  function Activation:_repr() return ('Activation(%s)'):format(self._act_type) end
  nn.Activation = Activation

  local Dense = HybridBlock:extend('Dense')
  function Dense:__init(units, opts)
    units, opts = args(units, opts, 'units')
    check_positive(units, 'Dense', 'units')
    HybridBlock.__init(self, opts)
    self._units = units
    self._flatten = opts.flatten ~= false
    self._in_units = opts.in_units or 0
    self:name_scope(function()
      self.weight = self.params:get('weight', { shape = { units, self._in_units },
        init = opts.weight_initializer, dtype = opts.dtype, allow_deferred_init = true })
      if opts.use_bias ~= false then
        self.bias = self.params:get('bias', { shape = { units }, init = opts.bias_initializer or 'zeros',
          dtype = opts.dtype, allow_deferred_init = true })
      end
      if opts.activation then self.act = Activation(opts.activation) end
    end)
  end
  function Dense:hybrid_forward(F, x, p)
    local o = named(F, self, { num_hidden = self._units, flatten = self._flatten, no_bias = p.bias == nil })
    local y = p.bias and F.FullyConnected(x, p.weight, p.bias, o) or F.FullyConnected(x, p.weight, o)
    if self.act then y = self.act(y) end
    return y
  end
  function Dense:_repr()
    local s = self.weight.shape
    return ('Dense(%s -> %d, %s)'):format(shape_str(s[2]), self._units,
      self.act and self.act:_repr() or 'linear')
  end
  nn.Dense = Dense

  -- ---- element-wise layers -------------------------------------------------
  local function simple(name, make)
    local L = HybridBlock:extend(name)
    function L:__init(a, opts) make.init(self, a, opts) end
    L.hybrid_forward = make.forward
    L._repr = make.repr or function() return name .. '()' end
    nn[name] = L
    return L
  end

  simple('Dropout', {
    init = function(self, rate, opts)
      rate, opts = args(rate, opts, 'rate')
      if type(rate) ~= 'number' or rate < 0 or rate >= 1 then
        error('Dropout: rate must be in [0, 1), got ' .. tostring(rate), 4)
      end
      HybridBlock.__init(self, opts)
      self._rate, self._axes = rate, opts.axes
    end,
    forward = function(self, F, x)
      if self._rate == 0 then return F.identity(x) end
      local o = { p = self._rate }
      if self._axes then o.axes = self._axes end
      return F.Dropout(x, named(F, self, o))
    end,
    repr = function(self) return ('Dropout(p = %g)'):format(self._rate) end,
  })

  simple('Flatten', {
    init = function(self, opts) HybridBlock.__init(self, opts) end,
    forward = function(self, F, x) return F.flatten(x, named(F, self, {})) end,
  })

  simple('LeakyReLU', {
    init = function(self, alpha, opts)
      alpha, opts = args(alpha, opts, 'alpha')
      if type(alpha) ~= 'number' or alpha < 0 then
        error('LeakyReLU: alpha must be a number at least 0', 4)
      end
      HybridBlock.__init(self, opts)
      self._alpha = alpha
    end,
    forward = function(self, F, x)
      return F.LeakyReLU(x, named(F, self, { act_type = 'leaky', slope = self._alpha }))
    end,
    repr = function(self) return ('LeakyReLU(%g)'):format(self._alpha) end,
  })

  simple('ELU', {
    init = function(self, alpha, opts)
      alpha, opts = args(alpha, opts, 'alpha')
      HybridBlock.__init(self, opts)
      self._alpha = alpha or 1
    end,
    forward = function(self, F, x)
      return F.LeakyReLU(x, named(F, self, { act_type = 'elu', slope = self._alpha }))
    end,
  })

  simple('SELU', {
    init = function(self, opts) HybridBlock.__init(self, opts) end,
    forward = function(self, F, x) return F.LeakyReLU(x, named(F, self, { act_type = 'selu' })) end,
  })

  simple('GELU', {
    init = function(self, opts) HybridBlock.__init(self, opts) end,
    forward = function(self, F, x) return F.LeakyReLU(x, named(F, self, { act_type = 'gelu' })) end,
  })

  simple('Swish', {
    init = function(self, beta, opts)
      beta, opts = args(beta, opts, 'beta')
      HybridBlock.__init(self, opts)
      self._beta = beta or 1
    end,
    forward = function(self, F, x) return x * F.sigmoid(x * self._beta) end,
  })

  local PReLU = HybridBlock:extend('PReLU')
  function PReLU:__init(opts)
    opts = opts or {}
    HybridBlock.__init(self, opts)
    self:name_scope(function()
      self.alpha = self.params:get('alpha', { shape = { opts.in_channels or 1 },
        init = opts.alpha_initializer or mx.init.Constant(0.25) })
    end)
  end
  function PReLU:hybrid_forward(F, x, p)
    return F.LeakyReLU(x, p.alpha, named(F, self, { act_type = 'prelu' }))
  end
  nn.PReLU = PReLU

  -- ---- Embedding -----------------------------------------------------------
  local Embedding = HybridBlock:extend('Embedding')
  function Embedding:__init(input_dim, output_dim, opts)
    if type(input_dim) == 'table' then
      opts = input_dim
      input_dim, output_dim = opts.input_dim, opts.output_dim
    end
    opts = opts or {}
    check_positive(input_dim, 'Embedding', 'input_dim')
    check_positive(output_dim, 'Embedding', 'output_dim')
    HybridBlock.__init(self, opts)
    self._input_dim, self._output_dim = input_dim, output_dim
    self._dtype = opts.dtype or 'float32'
    self:name_scope(function()
      self.weight = self.params:get('weight', { shape = { input_dim, output_dim },
        init = opts.weight_initializer, dtype = self._dtype })
    end)
  end
  function Embedding:hybrid_forward(F, x, p)
    return F.Embedding(x, p.weight, named(F, self, { input_dim = self._input_dim,
      output_dim = self._output_dim, dtype = self._dtype }))
  end
  function Embedding:_repr()
    return ('Embedding(%d -> %d, %s)'):format(self._input_dim, self._output_dim, self._dtype)
  end
  nn.Embedding = Embedding

  -- ---- normalisation -------------------------------------------------------
  local function norm_params(self, opts, with_running)
    local c = opts.in_channels or 0
    local scale, center = opts.scale ~= false, opts.center ~= false
    self.gamma = self.params:get('gamma', { shape = { c }, init = opts.gamma_initializer or 'ones',
      grad_req = scale and 'write' or 'null', allow_deferred_init = true, differentiable = scale })
    self.beta = self.params:get('beta', { shape = { c }, init = opts.beta_initializer or 'zeros',
      grad_req = center and 'write' or 'null', allow_deferred_init = true, differentiable = center })
    if with_running then
      self.running_mean = self.params:get('running_mean', { shape = { c },
        init = opts.running_mean_initializer or 'zeros', grad_req = 'null',
        allow_deferred_init = true, differentiable = false })
      self.running_var = self.params:get('running_var', { shape = { c },
        init = opts.running_variance_initializer or 'ones', grad_req = 'null',
        allow_deferred_init = true, differentiable = false })
    end
  end

  local BatchNorm = HybridBlock:extend('BatchNorm')
  function BatchNorm:__init(opts)
    opts = opts or {}
    HybridBlock.__init(self, opts)
    self._axis = opts.axis or 2
    self._kw = { eps = opts.epsilon or 1e-5, momentum = opts.momentum or 0.9,
      fix_gamma = opts.scale == false, use_global_stats = opts.use_global_stats or false }
    self:name_scope(function() norm_params(self, opts, true) end)
  end
  function BatchNorm:hybrid_forward(F, x, p)
    local o = { axis = self._axis }
    for k, v in pairs(self._kw) do o[k] = v end
    return F.BatchNorm(x, p.gamma, p.beta, p.running_mean, p.running_var, named(F, self, o))
  end
  function BatchNorm:_repr()
    return ('BatchNorm(axis = %d, eps = %g, momentum = %g, in_channels = %s)'):format(self._axis,
      self._kw.eps, self._kw.momentum, shape_str(self.gamma.shape[1]))
  end
  nn.BatchNorm = BatchNorm

  local LayerNorm = HybridBlock:extend('LayerNorm')
  function LayerNorm:__init(opts)
    opts = opts or {}
    HybridBlock.__init(self, opts)
    self._axis, self._eps = opts.axis or -1, opts.epsilon or 1e-5
    self:name_scope(function() norm_params(self, opts, false) end)
  end
  function LayerNorm:hybrid_forward(F, x, p)
    return F.LayerNorm(x, p.gamma, p.beta, named(F, self, { axis = self._axis, eps = self._eps }))
  end
  nn.LayerNorm = LayerNorm

  local InstanceNorm = HybridBlock:extend('InstanceNorm')
  function InstanceNorm:__init(opts)
    opts = opts or {}
    if opts.axis and opts.axis ~= 2 then
      error('InstanceNorm: only axis = 2 (the channels of NC...) is supported', 2)
    end
    HybridBlock.__init(self, opts)
    self._eps = opts.epsilon or 1e-5
    self:name_scope(function() norm_params(self, opts, false) end)
  end
  function InstanceNorm:hybrid_forward(F, x, p)
    return F.InstanceNorm(x, p.gamma, p.beta, named(F, self, { eps = self._eps }))
  end
  nn.InstanceNorm = InstanceNorm

  -- One gamma and beta per channel (as MXNet 2.0 and PyTorch; MXNet 1.x's
  -- GroupNorm had one per group).
  local GroupNorm = HybridBlock:extend('GroupNorm')
  function GroupNorm:__init(opts)
    opts = opts or {}
    check_positive(opts.num_groups or 1, 'GroupNorm', 'num_groups')
    HybridBlock.__init(self, opts)
    self._num_groups, self._eps = opts.num_groups or 1, opts.epsilon or 1e-5
    self:name_scope(function() norm_params(self, opts, false) end)
  end
  function GroupNorm:hybrid_forward(F, x, p)
    return F.GroupNorm(x, p.gamma, p.beta, named(F, self, { num_groups = self._num_groups,
      eps = self._eps }))
  end
  function GroupNorm:_repr()
    return ('GroupNorm(num_groups = %d, eps = %g)'):format(self._num_groups, self._eps)
  end
  nn.GroupNorm = GroupNorm

  -- ---- convolution and pooling ---------------------------------------------
  local layouts = { 'NCW', 'NCHW', 'NCDHW' }

  local function conv_class(name, dims, transpose)
    local C = HybridBlock:extend(name)
    C._alias = 'conv'  -- MXNet's name hint for every convolution
    function C:__init(channels, kernel_size, opts)
      if type(channels) == 'table' then
        opts = channels
        channels, kernel_size = opts.channels, opts.kernel_size
      end
      opts = opts or {}
      check_positive(channels, name, 'channels')
      HybridBlock.__init(self, opts)
      local groups = opts.groups or 1
      local in_channels = opts.in_channels or 0
      local k = tuple(kernel_size, dims, name, 'kernel_size')
      self._kw = { kernel = k, stride = tuple(opts.strides or 1, dims, name, 'strides'),
        pad = tuple(opts.padding or 0, dims, name, 'padding'),
        dilate = tuple(opts.dilation or 1, dims, name, 'dilation'), num_filter = channels,
        num_group = groups, layout = opts.layout or layouts[dims] }
      if transpose then self._kw.adj = tuple(opts.output_padding or 0, dims, name, 'output_padding') end
      if self._kw.layout ~= layouts[dims] then
        error(("%s: layout '%s' is not supported (only %s)"):format(name, self._kw.layout,
          layouts[dims]), 2)
      end
      self._channels, self._in_channels = channels, in_channels
      local wshape
      if transpose then
        wshape = { in_channels, math.floor(channels / groups) }
      else
        wshape = { channels, in_channels > 0 and math.floor(in_channels / groups) or 0 }
      end
      for i = 1, dims do wshape[#wshape + 1] = k[i] end
      self:name_scope(function()
        self.weight = self.params:get('weight', { shape = wshape, init = opts.weight_initializer,
          allow_deferred_init = true })
        if opts.use_bias ~= false then
          self.bias = self.params:get('bias', { shape = { channels },
            init = opts.bias_initializer or 'zeros', allow_deferred_init = true })
        end
        if opts.activation then self.act = Activation(opts.activation) end
      end)
    end
    local op = transpose and 'Deconvolution' or 'Convolution'
    function C:hybrid_forward(F, x, p)
      local o = { no_bias = p.bias == nil }
      for key, v in pairs(self._kw) do o[key] = v end
      named(F, self, o)
      local y = p.bias and F[op](x, p.weight, p.bias, o) or F[op](x, p.weight, o)
      if self.act then y = self.act(y) end
      return y
    end
    function C:_repr()
      local s = self.weight.shape
      local cin = transpose and s[1] or (s[2] or 0) * self._kw.num_group
      return ('%s(%s -> %d, kernel_size = (%s), stride = (%s))'):format(name, shape_str(cin),
        self._channels, table.concat(self._kw.kernel, ', '), table.concat(self._kw.stride, ', '))
    end
    nn[name] = C
  end

  -- ceil_mode picks MXNet's 'full' pooling convention.
  local function pool_class(name, dims, pool_type, global)
    local Pl = HybridBlock:extend(name)
    Pl._alias = 'pool'
    function Pl:__init(pool_size, opts)
      if type(pool_size) == 'table' and getmetatable(pool_size) == nil and opts == nil
          and (#pool_size == 0) then
        opts = pool_size
        pool_size = opts.pool_size
      end
      opts = opts or {}
      HybridBlock.__init(self, opts)
      if global then
        self._kw = { kernel = tuple(1, dims, name, 'pool_size'), global_pool = true,
          pool_type = pool_type }
      else
        local k = tuple(pool_size or 2, dims, name, 'pool_size')
        self._kw = { kernel = k, stride = tuple(opts.strides or k, dims, name, 'strides'),
          pad = tuple(opts.padding or 0, dims, name, 'padding'), pool_type = pool_type,
          pooling_convention = opts.ceil_mode and 'full' or 'valid' }
        if pool_type == 'avg' then self._kw.count_include_pad = opts.count_include_pad ~= false end
      end
      local layout = opts.layout or layouts[dims]
      if layout ~= layouts[dims] then
        error(("%s: layout '%s' is not supported (only %s)"):format(name, layout, layouts[dims]), 2)
      end
    end
    function Pl:hybrid_forward(F, x)
      local o = {}
      for k, v in pairs(self._kw) do o[k] = v end
      return F.Pooling(x, named(F, self, o))
    end
    function Pl:_repr()
      if global then return name .. '()' end
      return ('%s(size = (%s), stride = (%s), padding = (%s))'):format(name,
        table.concat(self._kw.kernel, ', '), table.concat(self._kw.stride, ', '),
        table.concat(self._kw.pad, ', '))
    end
    nn[name] = Pl
  end

  for dims = 1, 3 do
    conv_class('Conv' .. dims .. 'D', dims, false)
    pool_class('MaxPool' .. dims .. 'D', dims, 'max', false)
    pool_class('AvgPool' .. dims .. 'D', dims, 'avg', false)
    pool_class('GlobalMaxPool' .. dims .. 'D', dims, 'max', true)
    pool_class('GlobalAvgPool' .. dims .. 'D', dims, 'avg', true)
  end
  conv_class('Conv1DTranspose', 1, true)
  conv_class('Conv2DTranspose', 2, true)
  conv_class('Conv3DTranspose', 3, true)

  -- ---- functions as blocks -------------------------------------------------
  local function op_function(fn, F)
    if type(fn) == 'string' then
      local name = fn
      return function(...) return F[name](...) end
    end
    return fn
  end

  local Lambda = Block:extend('Lambda')
  function Lambda:__init(fn, opts)
    if type(fn) ~= 'function' and type(fn) ~= 'string' then
      error('Lambda: expected a function or the name of an mx.nd operator', 2)
    end
    Block.__init(self, opts)
    self._fn = op_function(fn, mx.nd)
  end
  function Lambda:forward(...) return self._fn(...) end
  nn.Lambda = Lambda

  local HybridLambda = HybridBlock:extend('HybridLambda')
  function HybridLambda:__init(fn, opts)
    if type(fn) ~= 'function' and type(fn) ~= 'string' then
      error('HybridLambda: expected a function (F, x, ...) or the name of an operator', 2)
    end
    HybridBlock.__init(self, opts)
    self._fn = fn
  end
  function HybridLambda:hybrid_forward(F, ...)
    local n = select('#', ...)
    local a = { ... }
    if type(self._fn) == 'string' then return F[self._fn](unpack(a, 1, n - 1)) end
    return self._fn(F, unpack(a, 1, n - 1))
  end
  nn.HybridLambda = HybridLambda

  help.doc(nn, [[
mx.gluon.nn: layers. Dense(units, {activation, use_bias, flatten, in_units,
weight_initializer, bias_initializer, dtype}); Conv1D/2D/3D(channels,
kernel_size, {strides, padding, dilation, groups, activation, use_bias,
in_channels, ...}); Conv1D/2D/3DTranspose (+ output_padding);
MaxPool/AvgPool 1D/2D/3D(pool_size = 2, {strides, padding, ceil_mode,
count_include_pad}); GlobalMaxPool/GlobalAvgPool 1D/2D/3D; BatchNorm{axis = 2,
momentum = 0.9, epsilon = 1e-5, center, scale, use_global_stats,
in_channels}; LayerNorm{axis = -1}; InstanceNorm; GroupNorm{num_groups = 1}
(one gamma per channel); Dropout(rate);
Embedding(input_dim, output_dim); Flatten; Activation(name); LeakyReLU(alpha);
PReLU; ELU(alpha); SELU; GELU; Swish(beta); Sequential, HybridSequential
(net:add(a, b, ...)); Lambda(fn | op name), HybridLambda(fn(F, x) | op name).
Options may also be given by name: nn.Dense{units = 10}. Axes are 1-based.]])
  return nn
end
