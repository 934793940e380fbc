-- mx.optimizer: SGD (momentum), NAG, Adam, AdamW, RMSProp, AdaGrad, AdaDelta,
-- Ftrl, Signum, LAMB, with MXNet's
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

  -- MXNet's warm-up (every schedule's warmup_steps, warmup_begin_lr,
  -- warmup_mode): for the first warmup_steps updates the rate rises
  -- linearly from warmup_begin_lr to base_lr ('linear'), or stays at
  -- warmup_begin_lr ('constant'); then `after(self, n)` rules.
  local function warmup_fields(s, opts, who)
    s.warmup_steps = opts.warmup_steps or 0
    s.warmup_begin_lr = opts.warmup_begin_lr or 0
    s.warmup_mode = opts.warmup_mode or 'linear'
    if s.warmup_steps < 0 then error(who .. ': warmup_steps must be at least 0', 3) end
    if s.warmup_mode ~= 'linear' and s.warmup_mode ~= 'constant' then
      error(who .. ": warmup_mode must be 'linear' or 'constant'", 3)
    end
    if s.warmup_begin_lr > s.base_lr then
      error(who .. ': warmup_begin_lr must not exceed base_lr', 3)
    end
  end
  local function schedule(s, after)
    return setmetatable(s, { __call = function(self, n)
      if n < self.warmup_steps then
        if self.warmup_mode == 'constant' then return self.warmup_begin_lr end
        return self.warmup_begin_lr + (self.base_lr - self.warmup_begin_lr) * n / self.warmup_steps
      end
      return after(self, n)
    end })
  end

  local function FactorScheduler(opts)
    opts = opts or {}
    local step = opts.step or error('FactorScheduler: step is required', 2)
    if step < 1 then error('FactorScheduler: step must be at least 1', 2) end
    local factor = opts.factor or 1
    if factor > 1 then error('FactorScheduler: factor must be at most 1', 2) end
    local s = { base_lr = opts.base_lr or 0.01, stop = opts.stop_factor_lr or 1e-8 }
    warmup_fields(s, opts, 'FactorScheduler')
    return schedule(s, function(self, n)
      local lr = self.base_lr * factor ^ math.floor(n / step)
      return math.max(lr, self.stop)
    end)
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
    local s = { base_lr = opts.base_lr or 0.01 }
    warmup_fields(s, opts, 'MultiFactorScheduler')
    return schedule(s, function(self, n)
      local k = 0
      for _, st in ipairs(steps) do if n > st then k = k + 1 end end
      return self.base_lr * factor ^ k
    end)
  end
  -- Poly and Cosine decay from base_lr to final_lr over the max_update
  -- updates after the warm-up, and stay at final_lr after it (MXNet's).
  local function decay_fields(opts, who)
    local max_update = opts.max_update or error(who .. ': max_update is required', 3)
    local s = { base_lr = opts.base_lr or 0.01, final_lr = opts.final_lr or 0,
      max_update = max_update }
    warmup_fields(s, opts, who)
    if max_update < 1 or max_update <= s.warmup_steps then
      error(who .. ': max_update must be at least 1 and above warmup_steps', 3)
    end
    return s
  end
  local function PolyScheduler(opts)
    opts = opts or {}
    local s = decay_fields(opts, 'PolyScheduler')
    s.pwr = opts.pwr or 2
    return schedule(s, function(self, n)
      if n > self.max_update then return self.final_lr end
      local frac = (n - self.warmup_steps) / (self.max_update - self.warmup_steps)
      return self.final_lr + (self.base_lr - self.final_lr) * (1 - frac) ^ self.pwr
    end)
  end
  local function CosineScheduler(opts)
    opts = opts or {}
    local s = decay_fields(opts, 'CosineScheduler')
    return schedule(s, function(self, n)
      if n > self.max_update then return self.final_lr end
      local frac = (n - self.warmup_steps) / (self.max_update - self.warmup_steps)
      return self.final_lr + (self.base_lr - self.final_lr) * (1 + math.cos(math.pi * frac)) / 2
    end)
  end
  M.PolyScheduler = help.doc(PolyScheduler, [[
mx.optimizer.PolyScheduler{max_update =, base_lr = 0.01, pwr = 2, final_lr = 0,
  warmup_steps = 0, warmup_begin_lr = 0, warmup_mode = 'linear'} -> a schedule
(also mx.lr_scheduler.PolyScheduler): after the warm-up,
final_lr + (base_lr - final_lr) * (1 - (n - warmup_steps) / (max_update -
warmup_steps)) ^ pwr, and final_lr past max_update (MXNet's).]])
  M.CosineScheduler = help.doc(CosineScheduler, [[
mx.optimizer.CosineScheduler{max_update =, base_lr = 0.01, final_lr = 0,
  warmup_steps = 0, warmup_begin_lr = 0, warmup_mode = 'linear'} -> a schedule
(also mx.lr_scheduler.CosineScheduler): after the warm-up, final_lr +
(base_lr - final_lr) * (1 + cos(pi * (n - warmup_steps) / (max_update -
warmup_steps))) / 2, and final_lr past max_update (MXNet's).]])
  M.FactorScheduler = help.doc(FactorScheduler, [[
mx.optimizer.FactorScheduler{step =, factor = 1, stop_factor_lr = 1e-8,
  base_lr = 0.01} -> a schedule (also mx.lr_scheduler.FactorScheduler): the
rate is multiplied by factor every step updates, never going below
stop_factor_lr.

sched(n) = max(base_lr * factor ^ floor(n / step), stop_factor_lr). step is
required and at least 1; factor is at most 1. Given to an optimizer as
lr_scheduler, its base_lr becomes the optimizer's learning rate. Every
schedule takes warmup_steps = 0, warmup_begin_lr = 0 and warmup_mode =
'linear' | 'constant' (MXNet's warm-up: the first warmup_steps updates rise
linearly from warmup_begin_lr to base_lr, or stay at warmup_begin_lr).]])
  M.MultiFactorScheduler = help.doc(MultiFactorScheduler, [[
mx.optimizer.MultiFactorScheduler{step = {n1, n2, ...}, factor = 1,
  base_lr = 0.01} -> a schedule (also mx.lr_scheduler.MultiFactorScheduler):
the rate is multiplied by factor once past each listed update count.

sched(n) = base_lr * factor ^ k, k the number of steps below n; the steps
must increase. Given to an optimizer as lr_scheduler, its base_lr becomes
the optimizer's learning rate.]])

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

  -- An optimizer class: what it lacks comes from Optimizer. create_state,
  -- when given, is the state of another optimizer with the same arrays.
  local function subclass(create_state)
    local cls = setmetatable({ create_state = create_state }, { __index = Optimizer })
    cls.__index = cls
    return cls
  end

  -- ---- SGD and NAG.
  local SGD = subclass()
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
  help.doc(M.SGD, [[
mx.optimizer.SGD{learning_rate = 0.01, momentum = 0, wd = 0, ...} -> an
optimizer: stochastic gradient descent, with momentum when momentum is not 0.

An update is one fused operator run in place on the weight: sgd_update, or
sgd_mom_update with a momentum state (an array of the weight's shape). The
other options are mx.optimizer.Optimizer's; create('sgd', opts) makes the
same.]])
  help.doc(M.NAG, [[
mx.optimizer.NAG{learning_rate = 0.01, momentum = 0, wd = 0, ...} -> an
optimizer: SGD with Nesterov momentum (the fused nag_mom_update operator).

With momentum = 0, the default, it keeps no state and updates as plain SGD
does; give a momentum (0.9, say) for Nesterov's method. The other options
are mx.optimizer.Optimizer's; create('nag', opts) makes the same.]])

  -- ---- Adam.
  local Adam = subclass()
  function Adam:create_state(_, w)
    local o = { dtype = w.dtype, ctx = w.ctx }
    return { mx.nd.zeros(w.shape, o), mx.nd.zeros(w.shape, o) }
  end
  -- The options Adam and AdamW share, with their defaults.
  local adam_defaults = { learning_rate = 0.001, beta1 = 0.9, beta2 = 0.999, epsilon = 1e-8 }
  -- Runs op (adam_update or adamw_update) in place on the weight with the
  -- two moment states, p holding the rates.
  local function adam_step(self, op, weight, grad, state, p)
    p.beta1, p.beta2, p.epsilon, p.out = self.beta1, self.beta2, self.epsilon, weight
    mx.nd[op](weight, grad, state[1], state[2], p)
  end
  function Adam:update(index, weight, grad, state)
    local lr, wd, t = self:_lr_wd(index)
    -- MXNet folds the bias corrections into the learning rate.
    lr = lr * math.sqrt(1 - self.beta2 ^ t) / (1 - self.beta1 ^ t)
    adam_step(self, 'adam_update', weight, grad, state, self:_common(lr, wd))
  end
  M.Adam = function(opts) return new(Adam, opts, adam_defaults) end
  help.doc(M.Adam, [[
mx.optimizer.Adam{learning_rate = 0.001, beta1 = 0.9, beta2 = 0.999,
  epsilon = 1e-8, wd = 0, ...} -> an optimizer: Adam, each update one fused
adam_update operator run in place on the weight.

Its state is two arrays of the weight's shape (the running averages of the
gradient and of its square). As MXNet does, the bias corrections are folded
into the rate: lr * sqrt(1 - beta2 ^ t) / (1 - beta1 ^ t) at a parameter's
t-th update. The other options are mx.optimizer.Optimizer's;
create('adam', opts) makes the same.]])

  -- ---- RMSProp (MXNet's non-centered form; centered = true is Graves').
  local RMSProp = subclass()
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
  help.doc(M.RMSProp, [[
mx.optimizer.RMSProp{learning_rate = 0.001, gamma1 = 0.9, gamma2 = 0.9,
  epsilon = 1e-8, centered = false, clip_weights =, wd = 0, ...} -> an
optimizer: RMSProp in MXNet's non-centered form, or Graves' centered form
with centered = true.

The non-centered form (the fused rmsprop_update) keeps one array, the
running average of the squared gradient, decayed by gamma1; the centered
form (rmspropalex_update) keeps three and uses gamma2 as its momentum.
clip_weights, when given, clips the weights to [-clip_weights,
clip_weights] after each update. The other options are
mx.optimizer.Optimizer's; create('rmsprop', opts) makes the same.]])

  -- ---- AdaGrad (no fused op: three pushes).
  local AdaGrad = subclass()
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
  help.doc(M.AdaGrad, [[
mx.optimizer.AdaGrad{learning_rate = 0.01, float_stable_eps = 1e-7, wd = 0,
  ...} -> an optimizer: AdaGrad, each weight's step divided by the root of
the sum of its squared gradients so far.

Its state, the history, is that sum (of the rescaled and clipped gradients
g), an array of the weight's shape; an update is weight = weight - lr *
(g / sqrt(history + float_stable_eps) + wd * weight), made of NDArray
operations (there is no fused operator). The other options are
mx.optimizer.Optimizer's; create('adagrad', opts) makes the same.]])

  -- ---- AdamW: Adam with decoupled weight decay (adamw_update).
  local AdamW = subclass(Adam.create_state)
  function AdamW:update(index, weight, grad, state)
    local lr, wd, t = self:_lr_wd(index)
    local p = self:_common(1, wd)
    -- eta (the scheduled rate) scales the step and the decay; the bias
    -- corrections go into the step's own rate.
    p.eta = lr
    p.lr = math.sqrt(1 - self.beta2 ^ t) / (1 - self.beta1 ^ t)
    adam_step(self, 'adamw_update', weight, grad, state, p)
  end
  M.AdamW = function(opts) return new(AdamW, opts, adam_defaults) end
  help.doc(M.AdamW, [[
mx.optimizer.AdamW{learning_rate = 0.001, beta1 = 0.9, beta2 = 0.999,
  epsilon = 1e-8, wd = 0, ...} -> an optimizer: Adam with decoupled weight
decay (Loshchilov and Hutter), one fused adamw_update per parameter:
weight -= lr * (c * m / (sqrt(v) + epsilon) + wd * weight), c = sqrt(1 -
beta2 ^ t) / (1 - beta1 ^ t) the bias correction; the moments never see the
decay (PyTorch's AdamW). create('adamw', opts) makes the same.]])

  -- ---- Signum and SignSGD (signum_update, signsgd_update).
  local Signum = subclass(SGD.create_state)  -- a momentum unless momentum = 0
  function Signum:update(index, weight, grad, state)
    local lr, wd = self:_lr_wd(index)
    local p = self:_common(lr, wd)
    p.out = weight
    if state then
      p.momentum, p.wd_lh = self.momentum, self.wd_lh
      mx.nd.signum_update(weight, grad, state, p)
    else
      mx.nd.signsgd_update(weight, grad, p)
    end
  end
  M.Signum = function(opts) return new(Signum, opts, { momentum = 0.9, wd_lh = 0 }) end
  help.doc(M.Signum, [[
mx.optimizer.Signum{learning_rate = 0.01, momentum = 0.9, wd_lh = 0, wd = 0,
  ...} -> an optimizer: SIGN momentUM (Bernstein et al.), each step lr times
the sign of the momentum (signum_update), or of the gradient with momentum
= 0 (signsgd_update). wd_lh is a decoupled decay. create('signum', opts)
makes the same.]])

  -- ---- Ftrl (ftrl_update).
  local Ftrl = subclass(Adam.create_state)  -- two arrays: z and n
  function Ftrl:update(index, weight, grad, state)
    local lr, wd = self:_lr_wd(index)
    local p = self:_common(lr, wd)
    p.lamda1, p.beta, p.out = self.lamda1, self.beta, weight
    mx.nd.ftrl_update(weight, grad, state[1], state[2], p)
  end
  M.Ftrl = function(opts)
    return new(Ftrl, opts, { learning_rate = 0.1, lamda1 = 0.01, beta = 1 })
  end
  help.doc(M.Ftrl, [[
mx.optimizer.Ftrl{learning_rate = 0.1, lamda1 = 0.01, beta = 1, wd = 0, ...}
-> an optimizer: Follow the Regularized Leader (McMahan et al.), one fused
ftrl_update per parameter with its z and n states. create('ftrl', opts)
makes the same.]])

  -- ---- AdaDelta (no fused op in MXNet either: NDArray operations).
  local AdaDelta = subclass(Adam.create_state)  -- two arrays: acc_g and acc_delta
  function AdaDelta:update(index, weight, grad, state)
    local _, wd = self:_lr_wd(index)
    local acc_g, acc_delta = state[1], state[2]
    local rho, eps = self.rho, self.epsilon
    local g = grad * self.rescale_grad
    if self.clip_gradient then
      g = mx.nd.clip(g, { a_min = -self.clip_gradient, a_max = self.clip_gradient })
    end
    mx.nd.elemwise_add(acc_g * rho, g * g * (1 - rho), { out = acc_g })
    local delta = mx.nd.sqrt(acc_delta + eps) / mx.nd.sqrt(acc_g + eps) * g
    mx.nd.elemwise_add(acc_delta * rho, delta * delta * (1 - rho), { out = acc_delta })
    weight:sub_(delta + weight * wd)
  end
  M.AdaDelta = function(opts) return new(AdaDelta, opts, { rho = 0.9, epsilon = 1e-5 }) end
  help.doc(M.AdaDelta, [[
mx.optimizer.AdaDelta{rho = 0.9, epsilon = 1e-5, wd = 0, ...} -> an
optimizer: AdaDelta (Zeiler), MXNet's form: acc_g = rho * acc_g + (1 - rho)
* g^2, delta = sqrt(acc_delta + eps) / sqrt(acc_g + eps) * g, acc_delta =
rho * acc_delta + (1 - rho) * delta^2, weight -= delta + wd * weight. The
learning rate is not used. NDArray operations (MXNet has no fused op
either). create('adadelta', opts) makes the same.]])

  -- ---- LAMB (lamb_update_phase1 and _phase2).
  local LAMB = subclass(Adam.create_state)
  function LAMB:update(index, weight, grad, state)
    local lr, wd, t = self:_lr_wd(index)
    local p = self:_common(lr, wd)
    p.lr, p.out = nil, nil
    p.beta1, p.beta2, p.epsilon, p.t = self.beta1, self.beta2, self.epsilon, t
    p.bias_correction = self.bias_correction
    local g = mx.nd.lamb_update_phase1(weight, grad, state[1], state[2], p)
    local r1, r2 = mx.nd.norm(weight), mx.nd.norm(g)
    mx.nd.lamb_update_phase2(weight, g, r1, r2, { lr = lr, lower_bound = self.lower_bound or -1,
      upper_bound = self.upper_bound or -1, out = weight })
  end
  M.LAMB = function(opts)
    return new(LAMB, opts, { learning_rate = 0.001, beta1 = 0.9, beta2 = 0.999, epsilon = 1e-6,
      bias_correction = true })
  end
  help.doc(M.LAMB, [[
mx.optimizer.LAMB{learning_rate = 0.001, beta1 = 0.9, beta2 = 0.999,
  epsilon = 1e-6, lower_bound =, upper_bound =, bias_correction = true, wd =
  0, ...} -> an optimizer: LAMB (You et al.), Adam's direction scaled per
layer by the trust ratio norm(weight) / norm(direction): lamb_update_phase1,
two norms, lamb_update_phase2. create('lamb', opts) makes the same.]])

  local registry = { sgd = M.SGD, nag = M.NAG, adam = M.Adam, rmsprop = M.RMSProp,
    adagrad = M.AdaGrad, adamw = M.AdamW, signum = M.Signum, ftrl = M.Ftrl,
    adadelta = M.AdaDelta, lamb = M.LAMB }

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
'adam', 'adamw', 'rmsprop', 'adagrad', 'adadelta', 'ftrl', 'signum' or
'lamb' (an optimizer object is returned as it is).
Also create{name = 'sgd', learning_rate = 0.1}, as MXNet's keywords.]])

  -- updater(index, grad, weight), keeping one state per index (MXNet's get_updater).
  function M.get_updater(opt)
    local states = {}
    return function(index, grad, weight)
      if states[index] == nil then states[index] = opt:create_state(index, weight) or false end
      opt:update(index, weight, grad, states[index] or nil)
    end
  end

  help.doc(M.get_updater, [[
mx.optimizer.get_updater(opt) -> updater(index, grad, weight), as MXNet's:
each call updates weight in place with opt, keeping one state per index.

The state of an index is made by opt:create_state(index, weight) at its
first call; note the order of the arguments, grad before weight, as in
MXNet.]])

  M.Optimizer = help.doc(Optimizer, [[
mx.optimizer.Optimizer: the base class of every optimizer (SGD, NAG, Adam, ...),
with the options they all read. opt:update(index, weight, grad, state)
updates a weight in place, with the state made by opt:create_state(index,
weight).

Options: learning_rate (or lr; each optimizer has its own default), wd = 0,
rescale_grad = 1 (the gradient is multiplied by it first), clip_gradient
(gradients are clipped to [-clip_gradient, clip_gradient]; no clipping by
default), lr_scheduler (a schedule such as FactorScheduler, called with the
number of updates; its base_lr is set to the learning rate),
param_idx2name = {[index] = name} and sym (a symbol whose __lr_mult__ and
__wd_mult__ attributes fill opt.lr_mult and opt.wd_mult, tables by name).
Of the parameters param_idx2name names, weight decay applies only to the
*_weight and *_gamma ones (MXNet's rule). opt:set_learning_rate(lr) changes
the rate (an error under an lr_scheduler); opt:set_mults_from_symbol(sym)
reads the multipliers of a symbol.]])
  help.doc(M, [[
mx.optimizer: create(name, {learning_rate, wd, rescale_grad, clip_gradient,
lr_scheduler, momentum, ...}) for 'sgd', 'nag', 'adam', 'adamw', 'rmsprop',
'adagrad', 'adadelta', 'ftrl', 'signum', 'lamb'; SGD{...}, NAG, Adam, AdamW,
RMSProp, AdaGrad, AdaDelta, Ftrl, Signum, LAMB; FactorScheduler,
MultiFactorScheduler, PolyScheduler, CosineScheduler (all with warm-up);
get_updater(opt). opt:create_state(i, w), opt:update(i, w, g, state). Weight
decay applies to *_weight and *_gamma parameters only (MXNet's rule).]])
  return M
end
