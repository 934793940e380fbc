-- mx.optimizer: SGD (momentum), NAG, Adam, RMSProp, AdaGrad, with MXNet's
-- options (learning_rate, wd, rescale_grad, clip_gradient, lr_scheduler) and
-- per-parameter lr_mult / wd_mult. Updates run the fused update operators
-- in place on the weight (sgd_mom_update, adam_update, ...), so one update
-- is one engine push per parameter.
--   local opt = mx.optimizer.create('sgd', {learning_rate = 0.1, momentum = 0.9})
--   local state = opt:create_state(i, w)
--   opt:update(i, w, g, state)
local help = require 'tessera.help'

return function(mx)
  local M = {}

  -- ---- Learning-rate schedules: sched(num_update) -> lr.
  local function FactorScheduler(opts)
    opts = opts or {}
    local step = opts.step or error('FactorScheduler: step is required', 2)
    if step < 1 then error('FactorScheduler: step must be at least 1', 2) end
    local factor = opts.factor or 1
    if factor > 1 then error('FactorScheduler: factor must be at most 1', 2) end
    local s = { base_lr = opts.base_lr or 0.01, stop = opts.stop_factor_lr or 1e-8 }
    return setmetatable(s, { __call = function(self, n)
      local lr = self.base_lr * factor ^ math.floor(n / step)
      return math.max(lr, self.stop)
    end })
  end
  local function MultiFactorScheduler(opts)
    opts = opts or {}
    local steps = opts.step or error('MultiFactorScheduler: step = {n1, n2, ...} is required', 2)
    for i = 2, #steps do
      if steps[i] <= steps[i - 1] then
        error('MultiFactorScheduler: steps must increase', 2)
      end
    end
    local factor = opts.factor or 1
    return setmetatable({ base_lr = opts.base_lr or 0.01 }, { __call = function(self, n)
      local k = 0
      for _, s in ipairs(steps) do if n > s then k = k + 1 end end
      return self.base_lr * factor ^ k
    end })
  end
  M.FactorScheduler = help.doc(FactorScheduler,
    'mx.optimizer.FactorScheduler{step, factor = 1, stop_factor_lr = 1e-8}: lr * factor every step updates')
  M.MultiFactorScheduler = help.doc(MultiFactorScheduler,
    'mx.optimizer.MultiFactorScheduler{step = {n1, n2, ...}, factor = 1}: lr * factor after each listed update count')

  -- ---- The base class.
  local Optimizer = {}
  Optimizer.__index = Optimizer

  local function new(class, opts, defaults)
    opts = opts or {}
    local self = setmetatable({}, class)
    self.lr = opts.learning_rate or opts.lr or defaults.learning_rate or 0.01
    self.wd = opts.wd or 0
    self.rescale_grad = opts.rescale_grad or 1
    self.clip_gradient = opts.clip_gradient
    self.lr_scheduler = opts.lr_scheduler
    if self.lr_scheduler then self.lr_scheduler.base_lr = self.lr end
    self.idx2name = opts.param_idx2name or {}
    self.lr_mult, self.wd_mult = {}, {}
    self.num_update, self.counts = 0, {}
    for k, v in pairs(defaults) do
      if self[k] == nil then self[k] = opts[k] == nil and v or opts[k] end
    end
    -- MXNet: weight decay applies to weights and gammas only.
    for _, n in pairs(self.idx2name) do
      if not (n:match('_weight$') or n:match('_gamma$')) then self.wd_mult[n] = 0 end
    end
    if opts.sym then self:set_mults_from_symbol(opts.sym) end
    return self
  end

  -- lr_mult / wd_mult from the symbol's __lr_mult__ / __wd_mult__ attributes.
  function Optimizer:set_mults_from_symbol(sym)
    for node, attrs in pairs(sym:attr_dict()) do
      if attrs.__lr_mult__ then self.lr_mult[node] = tonumber(attrs.__lr_mult__) end
      if attrs.__wd_mult__ then self.wd_mult[node] = tonumber(attrs.__wd_mult__) end
    end
  end

  function Optimizer:set_learning_rate(lr)
    if self.lr_scheduler then error('set_learning_rate: an lr_scheduler sets the rate', 2) end
    self.lr = lr
  end

  function Optimizer:_lr_wd(index)
    local n = (self.counts[index] or 0) + 1
    self.counts[index] = n
    if n > self.num_update then self.num_update = n end
    local lr = self.lr_scheduler and self.lr_scheduler(self.num_update) or self.lr
    local name = self.idx2name[index] or index
    return lr * (self.lr_mult[name] or 1), self.wd * (self.wd_mult[name] or 1), n
  end

  function Optimizer:_common(lr, wd)
    local p = { lr = lr, wd = wd, rescale_grad = self.rescale_grad, out = nil }
    if self.clip_gradient then p.clip_gradient = self.clip_gradient end
    return p
  end

  -- ---- SGD and NAG.
  local SGD = setmetatable({}, { __index = Optimizer })
  SGD.__index = SGD
  function SGD:create_state(_, weight)
    if self.momentum == 0 then return nil end
    return mx.nd.zeros(weight.shape, { dtype = weight.dtype, ctx = weight.ctx })
  end
  function SGD:update(index, weight, grad, state)
    local lr, wd = self:_lr_wd(index)
    local p = self:_common(lr, wd)
    p.out = weight
    if state then
      p.momentum = self.momentum
      mx.nd[self.fused_mom](weight, grad, state, p)
    else
      mx.nd.sgd_update(weight, grad, p)
    end
  end
  M.SGD = function(opts) return new(SGD, opts, { momentum = 0, fused_mom = 'sgd_mom_update' }) end
  M.NAG = function(opts) return new(SGD, opts, { momentum = 0, fused_mom = 'nag_mom_update' }) end

  -- ---- Adam.
  local Adam = setmetatable({}, { __index = Optimizer })
  Adam.__index = Adam
  function Adam:create_state(_, w)
    local o = { dtype = w.dtype, ctx = w.ctx }
    return { mx.nd.zeros(w.shape, o), mx.nd.zeros(w.shape, o) }
  end
  function Adam:update(index, weight, grad, state)
    local lr, wd, t = self:_lr_wd(index)
    -- MXNet folds the bias corrections into the learning rate.
    lr = lr * math.sqrt(1 - self.beta2 ^ t) / (1 - self.beta1 ^ t)
    local p = self:_common(lr, wd)
    p.beta1, p.beta2, p.epsilon, p.out = self.beta1, self.beta2, self.epsilon, weight
    mx.nd.adam_update(weight, grad, state[1], state[2], p)
  end
  M.Adam = function(opts)
    return new(Adam, opts, { learning_rate = 0.001, beta1 = 0.9, beta2 = 0.999, epsilon = 1e-8 })
  end

  -- ---- RMSProp (MXNet's non-centered form; centered = true is Graves').
  local RMSProp = setmetatable({}, { __index = Optimizer })
  RMSProp.__index = RMSProp
  function RMSProp:create_state(_, w)
    local o = { dtype = w.dtype, ctx = w.ctx }
    if self.centered then return { mx.nd.zeros(w.shape, o), mx.nd.zeros(w.shape, o), mx.nd.zeros(w.shape, o) } end
    return { mx.nd.zeros(w.shape, o) }
  end
  function RMSProp:update(index, weight, grad, state)
    local lr, wd = self:_lr_wd(index)
    local p = self:_common(lr, wd)
    p.gamma1, p.epsilon, p.out = self.gamma1, self.epsilon, weight
    if self.clip_weights then p.clip_weights = self.clip_weights end
    if self.centered then
      p.gamma2 = self.gamma2
      mx.nd.rmspropalex_update(weight, grad, state[1], state[2], state[3], p)
    else
      mx.nd.rmsprop_update(weight, grad, state[1], p)
    end
  end
  M.RMSProp = function(opts)
    return new(RMSProp, opts, { learning_rate = 0.001, gamma1 = 0.9, gamma2 = 0.9,
      epsilon = 1e-8, centered = false })
  end

  -- ---- AdaGrad (no fused op: three pushes).
  local AdaGrad = setmetatable({}, { __index = Optimizer })
  AdaGrad.__index = AdaGrad
  function AdaGrad:create_state(_, w)
    return mx.nd.zeros(w.shape, { dtype = w.dtype, ctx = w.ctx })
  end
  function AdaGrad:update(index, weight, grad, history)
    local lr, wd = self:_lr_wd(index)
    local g = grad * self.rescale_grad
    if self.clip_gradient then
      g = mx.nd.clip(g, { a_min = -self.clip_gradient, a_max = self.clip_gradient })
    end
    history:add_(g * g)
    weight:sub_((g / mx.nd.sqrt(history + self.float_stable_eps) + weight * wd) * lr)
  end
  M.AdaGrad = function(opts) return new(AdaGrad, opts, { float_stable_eps = 1e-7 }) end

  local registry = { sgd = M.SGD, nag = M.NAG, adam = M.Adam, rmsprop = M.RMSProp,
    adagrad = M.AdaGrad }

  function M.create(name, opts)
    if type(name) == 'table' then return name end
    local make = registry[tostring(name):lower()]
    if not make then
      local names = {}
      for k in pairs(registry) do names[#names + 1] = k end
      table.sort(names)
      error("optimizer: unknown optimizer '" .. tostring(name) .. "' (known: "
        .. table.concat(names, ', ') .. ')', 2)
    end
    return make(opts)
  end

  M.create = require('tessera.kwargs').wrap(M.create, 'optimizer.create', { 'name' }, 2)
  help.doc(M.create, [[
mx.optimizer.create(name, {learning_rate =, wd =, momentum =, rescale_grad =,
clip_gradient =, lr_scheduler =, ...}) -> an optimizer; name is 'sgd', 'nag',
'adam', 'rmsprop' or 'adagrad' (an optimizer object is returned as it is).
Also create{name = 'sgd', learning_rate = 0.1}, as MXNet's keywords.]])

  -- updater(index, grad, weight), keeping one state per index (MXNet's get_updater).
  function M.get_updater(opt)
    local states = {}
    return function(index, grad, weight)
      if states[index] == nil then states[index] = opt:create_state(index, weight) or false end
      opt:update(index, weight, grad, states[index] or nil)
    end
  end

  M.Optimizer = Optimizer
  help.doc(M, [[
mx.optimizer: create(name, {learning_rate, wd, rescale_grad, clip_gradient,
lr_scheduler, momentum, ...}) for 'sgd', 'nag', 'adam', 'rmsprop', 'adagrad';
SGD{...}, NAG, Adam, RMSProp, AdaGrad; FactorScheduler, MultiFactorScheduler;
get_updater(opt). opt:create_state(i, w), opt:update(i, w, g, state). Weight
decay applies to *_weight and *_gamma parameters only (MXNet's rule).]])
  return M
end
