-- mx.gluon.loss: losses as HybridBlocks (MXNet's gluon/loss.py in Lua).
-- A loss is called as loss(pred, label, sample_weight) and returns one
-- value per sample: the element losses, times sample_weight (broadcast)
-- and the loss's weight, averaged over every axis but batch_axis (1-based,
-- default 1).
local help = require 'tessera.help'

return function(mx, G)
  local L = {}
  local HybridBlock = G.HybridBlock

  local Loss = HybridBlock:extend('Loss')
  function Loss:__init(weight, batch_axis, opts)
    HybridBlock.__init(self, opts)
    self._weight = weight
    self._batch_axis = batch_axis or 1
  end

  -- hybrid_forward(F, pred, label, [sample_weight], params): the params
  -- table (always last) is dropped.
  local function inputs(...)
    local n = select('#', ...)
    local a = { ... }
    return a[1], a[2], n > 3 and a[3] or nil
  end

  function Loss:_finish(F, loss, sample_weight)
    if sample_weight then loss = F.broadcast_mul(loss, sample_weight) end
    if self._weight then loss = loss * self._weight end
    return F.mean(loss, { axis = self._batch_axis, exclude = true })
  end

  function Loss:_repr()
    return ('%s(batch_axis = %d, w = %s)'):format(rawget(getmetatable(self), '__name'),
      self._batch_axis, tostring(self._weight))
  end
  L.Loss = Loss

  -- A loss class: `compute(self, F, pred, label)` gives the element losses.
  -- `fields(self, opts)` reads the loss's own options.
  local function loss_class(name, compute, fields, default_weight)
    local C = Loss:extend(name)
    function C:__init(opts)
      opts = opts or {}
      local w = opts.weight
      if w == nil then w = default_weight end
      Loss.__init(self, w, opts.batch_axis, opts)
      if fields then fields(self, opts) end
    end
    function C:hybrid_forward(F, ...)
      local pred, label, sample_weight = inputs(...)
      return self:_finish(F, compute(self, F, pred, label), sample_weight)
    end
    L[name] = C
    return C
  end

  loss_class('L2Loss', function(_, F, pred, label)
    return F.square(F.reshape_like(label, pred) - pred)
  end, nil, 0.5)

  loss_class('L1Loss', function(_, F, pred, label)
    return F.abs(F.reshape_like(label, pred) - pred)
  end)

  loss_class('SoftmaxCrossEntropyLoss', function(self, F, pred, label)
    if not self._from_logits then pred = F.log_softmax(pred, { axis = self._axis }) end
    if self._sparse_label then
      return -F.pick(pred, label, { axis = self._axis, keepdims = true })
    end
    label = F.reshape_like(label, pred)
    return -F.sum(pred * label, { axis = self._axis, keepdims = true })
  end, function(self, o)
    self._axis = o.axis or -1
    self._sparse_label = o.sparse_label ~= false
    self._from_logits = o.from_logits or false
  end)
  L.SoftmaxCELoss = L.SoftmaxCrossEntropyLoss

  loss_class('SigmoidBinaryCrossEntropyLoss', function(self, F, pred, label)
    label = F.reshape_like(label, pred)
    if not self._from_sigmoid then
      -- max(x, 0) - x * z + log(1 + exp(-|x|)): stable for large |x|.
      return F.relu(pred) - pred * label + F.Activation(-F.abs(pred), { act_type = 'softrelu' })
    end
    local eps = 1e-12
    return -(F.log(pred + eps) * label + F.log(1 - pred + eps) * (1 - label))
  end, function(self, o) self._from_sigmoid = o.from_sigmoid or false end)
  L.SigmoidBCELoss = L.SigmoidBinaryCrossEntropyLoss

  loss_class('HuberLoss', function(self, F, pred, label)
    local rho = self._rho
    local d = F.abs(F.reshape_like(label, pred) - pred)
    return F.where(F._greater_scalar(d, { scalar = rho }), d - 0.5 * rho, F.square(d) * (0.5 / rho))
  end, function(self, o) self._rho = o.rho or 1 end)

  loss_class('HingeLoss', function(self, F, pred, label)
    return F.relu(self._margin - pred * F.reshape_like(label, pred))
  end, function(self, o) self._margin = o.margin or 1 end)

  loss_class('KLDivLoss', function(self, F, pred, label)
    if not self._from_logits then pred = F.log_softmax(pred, { axis = self._axis }) end
    return label * (F.log(label + 1e-12) - pred)
  end, function(self, o)
    self._from_logits = o.from_logits ~= false
    self._axis = o.axis or -1
  end)

  -- CosineEmbeddingLoss(input1, input2, label): 1 - cos for label 1,
  -- max(0, cos - margin) for label -1.
  local Cosine = Loss:extend('CosineEmbeddingLoss')
  function Cosine:__init(opts)
    opts = opts or {}
    Loss.__init(self, opts.weight, opts.batch_axis, opts)
    self._margin = opts.margin or 0
  end
  function Cosine:hybrid_forward(F, ...)
    local n = select('#', ...)
    local a = { ... }
    local x1, x2, label, sample_weight = a[1], a[2], a[3], n > 4 and a[4] or nil
    local dot = F.sum(x1 * x2, { axis = -1 })
    local norm = F.sqrt(F.sum(F.square(x1), { axis = -1 })) * F.sqrt(F.sum(F.square(x2), { axis = -1 }))
    local cos = dot / F._maximum_scalar(norm, { scalar = 1e-12 })
    label = F.reshape_like(label, cos)
    local loss = F.where(F._greater_scalar(label, { scalar = 0 }), 1 - cos, F.relu(cos - self._margin))
    return self:_finish(F, loss, sample_weight)
  end
  L.CosineEmbeddingLoss = Cosine

  help.doc(L, [[
mx.gluon.loss: L2Loss, L1Loss, SoftmaxCrossEntropyLoss{axis = -1,
sparse_label = true, from_logits = false} (SoftmaxCELoss),
SigmoidBinaryCrossEntropyLoss{from_sigmoid = false} (SigmoidBCELoss),
HuberLoss{rho = 1}, HingeLoss{margin = 1}, KLDivLoss{from_logits = true},
CosineEmbeddingLoss{margin = 0}. Every loss takes {weight =, batch_axis = 1}
and is called as loss(pred, label, sample_weight): the element losses times
sample_weight and weight, averaged over every axis but batch_axis, one value
per sample (MXNet's rules; L2Loss is half the squared error).]])
  return L
end
