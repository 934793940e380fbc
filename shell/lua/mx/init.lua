-- mx.init: parameter initializers. An initializer is called as
-- init(name, array) and fills the array in place, choosing by MXNet's name
-- rules: *weight -> the initializer's own rule, *bias and *beta -> 0,
-- *gamma -> 1, *moving_mean and *running_mean -> 0, *moving_var and
-- *running_var -> 1 (Gluon's BatchNorm names), *moving_inv_var -> 0,
-- *moving_avg -> 0; a variable's __init__ attribute (from mx.init.Constant
-- and friends' :dumps()) overrides the rule.
local help = require 'tessera.help'

return function(mx)
  local M = {}

  local Initializer = {}
  Initializer.__index = Initializer
  Initializer.__call = function(self, name, arr) return self:init(name, arr) end

  local function fill(arr, value)
    mx.nd.full(arr.shape, value, { dtype = arr.dtype, ctx = arr.ctx, out = arr })
  end
  local function uniform(arr, lo, hi)
    mx.nd.random.uniform(lo, hi, arr.shape, { dtype = arr.dtype, ctx = arr.ctx, out = arr })
  end
  local function normal(arr, sigma)
    mx.nd.random.normal(0, sigma, arr.shape, { dtype = arr.dtype, ctx = arr.ctx, out = arr })
  end

  local function ends(name, suffix) return name:sub(- #suffix) == suffix end

  function Initializer:init(name, arr)
    if type(name) ~= 'string' or not mx.nd.is_ndarray(arr) then
      error('initializer: call as init(name, array)', 3)
    end
    if ends(name, 'moving_mean') or ends(name, 'moving_inv_var') or ends(name, 'moving_avg')
        or ends(name, 'running_mean') or ends(name, 'bias') or ends(name, 'beta') then
      fill(arr, 0)
    elseif ends(name, 'moving_var') or ends(name, 'running_var') or ends(name, 'gamma') then
      fill(arr, 1)
    elseif ends(name, 'weight') then
      self:init_weight(name, arr)
    elseif self.init_default then
      self:init_default(name, arr)
    else
      error("initializer: no rule for parameter '" .. name .. "' (names end in weight, bias, "
        .. 'gamma, beta, moving_mean or moving_var; use mx.init.Constant or name it so)', 3)
    end
    return arr
  end

  local function class(init_weight, fields)
    local c = setmetatable({}, { __index = Initializer })
    c.__index = c
    c.__call = Initializer.__call
    c.init_weight = init_weight
    return function(opts)
      local self = setmetatable({}, c)
      for k, v in pairs(fields(opts or {})) do self[k] = v end
      return self
    end
  end

  M.Uniform = class(function(self, _, arr) uniform(arr, -self.scale, self.scale) end,
    function(o) return { scale = type(o) == 'number' and o or (o.scale or 0.07) } end)
  M.Normal = class(function(self, _, arr) normal(arr, self.sigma) end,
    function(o) return { sigma = type(o) == 'number' and o or (o.sigma or 0.01) } end)
  M.Zero = class(function(_, _, arr) fill(arr, 0) end, function() return {} end)
  M.One = class(function(_, _, arr) fill(arr, 1) end, function() return {} end)
  M.Constant = class(function(self, _, arr) fill(arr, self.value) end,
    function(o) return { value = type(o) == 'number' and o or (o.value or 0) } end)
  help.doc(M.Uniform, [[
mx.init.Uniform{scale = 0.07} or Uniform(scale) -> an initializer: weights
drawn uniformly from [-scale, scale].

Names other than *weight follow mx.init.Initializer's rules (bias 0,
gamma 1, ...).]])
  help.doc(M.Normal, [[
mx.init.Normal{sigma = 0.01} or Normal(sigma) -> an initializer: weights
drawn from a normal distribution of mean 0 and standard deviation sigma.

Names other than *weight follow mx.init.Initializer's rules (bias 0,
gamma 1, ...).]])
  help.doc(M.Zero, [[
mx.init.Zero() -> an initializer that fills weights with 0.

Names other than *weight follow mx.init.Initializer's rules (gamma 1, ...).]])
  help.doc(M.One, [[
mx.init.One() -> an initializer that fills weights with 1.

Names other than *weight follow mx.init.Initializer's rules (bias 0, ...).]])
  help.doc(M.Constant, [[
mx.init.Constant{value = 0} or Constant(value) -> an initializer that fills
weights with value.

Names other than *weight follow mx.init.Initializer's rules (bias 0,
gamma 1, ...).]])

  -- Xavier: scale = sqrt(magnitude / factor), factor from fan-in/out with
  -- the trailing (kernel) dimensions counted in, as MXNet.
  local function xavier_weight(self, name, arr)
    local s = arr.shape
    if #s < 2 then
      error(("Xavier: '%s' has shape {%s}; it needs at least 2 dimensions"):format(name,
        table.concat(s, ', ')), 4)
    end
    local hw = 1
    for i = 3, #s do hw = hw * s[i] end
    local fan_in, fan_out = s[2] * hw, s[1] * hw
    local factor = ({ avg = (fan_in + fan_out) / 2, ['in'] = fan_in, out = fan_out })[self.factor_type]
    local scale = math.sqrt(self.magnitude / factor)
    if self.rnd_type == 'uniform' then uniform(arr, -scale, scale) else normal(arr, scale) end
  end
  local function xavier_fields(o)
    local f = { rnd_type = o.rnd_type or 'uniform', factor_type = o.factor_type or 'avg',
      magnitude = o.magnitude or 3 }
    if f.rnd_type ~= 'uniform' and f.rnd_type ~= 'gaussian' then
      error("Xavier: rnd_type must be 'uniform' or 'gaussian'", 3)
    end
    if f.factor_type ~= 'avg' and f.factor_type ~= 'in' and f.factor_type ~= 'out' then
      error("Xavier: factor_type must be 'avg', 'in' or 'out'", 3)
    end
    return f
  end
  M.Xavier = class(xavier_weight, xavier_fields)
  help.doc(M.Xavier, [[
mx.init.Xavier{rnd_type = 'uniform', factor_type = 'avg', magnitude = 3} ->
an initializer: random weights whose scale follows their fan-in and fan-out
(Glorot's rule, as MXNet's Xavier).

With fan_in = shape[2] * k and fan_out = shape[1] * k, k the product of the
trailing (kernel) dimensions, factor is their mean ('avg'), fan_in ('in') or
fan_out ('out'), and scale = sqrt(magnitude / factor): rnd_type 'uniform'
draws from [-scale, scale], 'gaussian' from a normal distribution of
standard deviation scale. A weight needs at least 2 dimensions; other names
follow mx.init.Initializer's rules.]])
  M.MSRAPrelu = class(xavier_weight, function(o)
    local slope = o.slope or 0.25
    return xavier_fields { rnd_type = 'gaussian', factor_type = o.factor_type or 'avg',
      magnitude = 2 / (1 + slope * slope) }
  end)
  help.doc(M.MSRAPrelu, [[
mx.init.MSRAPrelu{factor_type = 'avg', slope = 0.25} -> an initializer: He et
al.'s rule for PReLU networks, weights drawn from a normal distribution.

It is Xavier{rnd_type = 'gaussian', factor_type = factor_type, magnitude =
2 / (1 + slope ^ 2)}.]])

  -- Bilinear: the kernel of a bilinear interpolation, for UpSampling's
  -- 'bilinear' weight and Deconvolution up-samplers (MXNet's rule).
  M.Bilinear = class(function(_, name, arr)
    local shape = arr.shape
    if #shape < 3 then
      error(('mx.init.Bilinear: %s has shape {%s}; it needs (C, ..., kh, kw)'):format(name,
        table.concat(shape, ', ')), 4)
    end
    local kh, kw = shape[#shape - 1], shape[#shape]
    local f = math.ceil(kw / 2)
    local c = (2 * f - 1 - f % 2) / (2 * f)
    local plane = {}
    for y = 0, kh - 1 do
      for x = 0, kw - 1 do
        plane[#plane + 1] = (1 - math.abs(x / f - c)) * (1 - math.abs(y / f - c))
      end
    end
    local n = arr.size / #plane
    local all = {}
    for _ = 1, n do
      for _, v in ipairs(plane) do all[#all + 1] = v end
    end
    mx.nd.array(all, {dtype = arr.dtype}):reshape(shape):copyto(arr)
  end, function() return {} end)
  help.doc(M.Bilinear, [[
mx.init.Bilinear() -> an initializer: every (kh, kw) plane of a weight of
shape (C, ..., kh, kw) is the kernel of a bilinear interpolation,
(1 - |x / f - c|) (1 - |y / f - c|) with f = ceil(kw / 2) and
c = (2 f - 1 - f % 2) / (2 f), as MXNet's: the weight of
UpSampling{sample_type = 'bilinear'}.]])

  -- Mixed: the first pattern that matches the name picks the initializer.
  function M.Mixed(patterns, inits)
    local self = setmetatable({}, Initializer)
    function self:init(name, arr)
      for i, p in ipairs(patterns) do
        if name:match(p) then return inits[i](name, arr) end
      end
      error("Mixed: no pattern matches parameter '" .. name .. "'", 3)
    end
    return self
  end

  help.doc(M.Mixed, [[
mx.init.Mixed({pattern, ...}, {init, ...}) -> an initializer handing each
parameter to the init of the first Lua pattern its name matches.

The chosen initializer applies its own name rules; a name no pattern matches
is an error, so end the list with '.*' for a default:
  mx.init.Mixed({'^fc', '.*'}, {mx.init.Normal(0.02), mx.init.Uniform(0.07)})]])

  -- FusedRNN: the packed parameter vector of a fused RNN (mx.rnn.
  -- FusedRNNCell), cut into its weights (each initialized by `init` as a
  -- *weight of its own shape) and biases (0, but the LSTM forget gate's
  -- i2h bias, forget_bias), in the RNN op's layout. The input size is
  -- found from the vector's length.
  function M.FusedRNN(init, num_hidden, num_layers, mode, bidirectional, forget_bias)
    if type(init) == 'table' and getmetatable(init) == nil and num_hidden == nil then
      local o = init
      init, num_hidden, num_layers, mode = o.init, o.num_hidden, o.num_layers, o.mode
      bidirectional, forget_bias = o.bidirectional, o.forget_bias
    end
    local self = setmetatable({}, { __index = Initializer, __call = Initializer.__call })
    local H, L, D = num_hidden, num_layers or 1, bidirectional and 2 or 1
    local G = ({ lstm = 4, gru = 3, rnn_relu = 1, rnn_tanh = 1 })[mode or 'lstm']
    if not G or type(H) ~= 'number' then
      error('FusedRNN: num_hidden and a mode (lstm, gru, rnn_relu, rnn_tanh) are required', 2)
    end
    forget_bias = forget_bias or 1
    function self:init(name, arr)
      local P = arr.size
      local rest = P - 2 * L * D * G * H - (L - 1) * D * G * H * (D * H + H)
      local I = rest / (D * G * H) - H
      if I < 1 or I ~= math.floor(I) then
        error(("FusedRNN: '%s' has %d elements, which no input size gives for %s, %d layers "
          .. 'of %d%s'):format(name, P, mode or 'lstm', L, H, D == 2 and ', bidirectional' or ''), 3)
      end
      local pieces, pos = {}, 0
      local function piece(shape, kind)
        local n = 1
        for _, d in ipairs(shape) do n = n * d end
        pieces[#pieces + 1] = { shape = shape, kind = kind, from = pos }
        pos = pos + n
      end
      for l = 1, L do
        for _ = 1, D do
          piece({ G * H, l == 1 and I or D * H }, 'weight')
          piece({ G * H, H }, 'weight')
        end
      end
      for _ = 1, L * D do
        piece({ G * H }, 'i2h_bias')
        piece({ G * H }, 'h2h_bias')
      end
      local flat = arr:reshape({ P })
      for k, pc in ipairs(pieces) do
        local n = pc.shape[1] * (pc.shape[2] or 1)
        local tmp = mx.nd.zeros(pc.shape, { dtype = arr.dtype, ctx = arr.ctx })
        if pc.kind == 'weight' then
          (init or M.Uniform())(name .. '_' .. k .. '_weight', tmp)
        elseif pc.kind == 'i2h_bias' and (mode or 'lstm') == 'lstm' and forget_bias ~= 0 then
          tmp = mx.nd.concat({ mx.nd.zeros({ H }), mx.nd.full({ H }, forget_bias),
            mx.nd.zeros({ 2 * H }) }, { dim = 1 }):astype(arr.dtype)
        end
        tmp:reshape({ n }):copyto(flat[{ pc.from + 1, pc.from + n }])
      end
      return arr
    end
    return self
  end
  help.doc(M.FusedRNN, [[
mx.init.FusedRNN(init, num_hidden, num_layers, mode, bidirectional,
forget_bias = 1) or FusedRNN{init =, num_hidden =, ...} -> an initializer for
a fused RNN's packed parameter vector: each weight initialized by init as a
weight of its own shape, biases 0 but the LSTM forget gate's (forget_bias).
mx.rnn.FusedRNNCell's parameter variable carries one (its __init__
attribute), which Module:init_params uses with its own initializer inside.]])

  -- The initializer an __init__ attribute names ('["constant", {"value":
  -- 0.5}]', a number, or '["fusedrnn", {...}]'); `default`: the one a
  -- fused RNN's weights use.
  function M._from_attr(text, default)
    local kind = text:match('^%s*%[%s*"(%w+)"')
    if kind == 'fusedrnn' then
      local function field(k) return text:match('"' .. k .. '"%s*:%s*([^,}]+)') end
      local function str(k) local v = field(k) return v and v:match('"(.-)"') end
      return M.FusedRNN(default, tonumber(field('num_hidden')), tonumber(field('num_layers')),
        str('mode'), field('bidirectional') == 'true', tonumber(field('forget_bias')))
    end
    return M.Constant { value = tonumber(text:match('[%-%d%.eE]+')) or 0 }
  end

  M.Initializer = help.doc(Initializer, [[
mx.init.Initializer: the base class of the initializers. init(name, array),
or init:init(name, array), fills the array in place by the parameter's name
and returns it.

Names ending in bias, beta, moving_mean, running_mean, moving_inv_var or
moving_avg get 0; gamma, moving_var and running_var get 1; weight gets the initializer's own rule,
init_weight(self, name, array); any other name goes to init_default(self,
name, array) when the initializer has one, and is an error otherwise. An
initializer of one's own:
  setmetatable({init_weight = function(self, name, arr) ... end},
    mx.init.Initializer)]])
  help.doc(M, [[
mx.init: Uniform{scale = 0.07}, Normal{sigma = 0.01}, Xavier{rnd_type =
'uniform' | 'gaussian', factor_type = 'avg' | 'in' | 'out', magnitude = 3},
MSRAPrelu{factor_type, slope = 0.25}, Zero(), One(), Constant{value}, FusedRNN(...), Mixed(
{patterns}, {inits}). init(name, array) fills the array by MXNet's name rules:
weights by the initializer, bias/beta/moving_mean/running_mean 0,
gamma/moving_var/running_var 1.]])
  return M
end
