-- mx.metric: evaluation metrics. m:update(labels, preds) with lists of
-- NDArrays (or single arrays); m:get() -> name, value; m:reset().
-- Per-batch sums are kept as NDArrays and added on the engine, so update
-- never waits; get() reads them.
local help = require 'tessera.help'

return function(mx)
  local M = {}

  local EvalMetric = {}
  EvalMetric.__index = EvalMetric

  local function list(x)
    if x == nil then return {} end
    if mx.nd.is_ndarray(x) then return { x } end
    return x
  end

  function EvalMetric:reset()
    self.sum, self.num = nil, 0
  end

  -- Adds an NDArray (one element) or a number to the running sum.
  function EvalMetric:_add(value, count)
    if self.sum == nil then
      self.sum = value
    else
      self.sum = self.sum + value
    end
    self.num = self.num + count
  end

  function EvalMetric:get()
    if self.num == 0 then return self.name, 0 / 0 end
    local s = self.sum
    if mx.nd.is_ndarray(s) then s = s:asscalar() end
    return self.name, s / self.num
  end

  function EvalMetric:get_name_value()
    local n, v = self:get()
    return { { n, v } }
  end

  local function metric(name, update)
    local c = setmetatable({}, { __index = EvalMetric })
    c.__index = c
    c.update = function(self, labels, preds)
      labels, preds = list(labels), list(preds)
      if #labels ~= #preds then
        error(('%s: %d labels for %d predictions'):format(self.name, #labels, #preds), 2)
      end
      for i = 1, #labels do update(self, labels[i], preds[i]) end
    end
    return function(opts)
      local self = setmetatable({ name = (opts and opts.name) or name }, c)
      for k, v in pairs(opts or {}) do self[k] = v end
      self:reset()
      return self
    end
  end

  local function check_rows(what, label, pred)
    if label.shape[1] ~= pred.shape[1] then
      error(('%s: label has %d rows, prediction %d'):format(what, label.shape[1], pred.shape[1]), 4)
    end
  end

  -- Predictions (batch, classes) are compared by argmax; predictions of
  -- the label's shape are compared directly (already class indices).
  M.Accuracy = metric('accuracy', function(self, label, pred)
    check_rows(self.name, label, pred)
    local cls = pred
    if pred.ndim > label.ndim then cls = mx.nd.argmax(pred, { axis = self.axis or -1 }) end
    local hits = mx.nd.sum(mx.nd.equal(cls:astype(label.dtype), label:reshape(cls.shape)))
    self:_add(hits:astype('float64'), label.size)
  end)
  help.doc(M.Accuracy, [[
mx.metric.Accuracy{axis = -1, name = 'accuracy'} -> a metric: the fraction
of labels predicted right (also create('acc')).

Predictions with more dimensions than their labels, such as (batch,
classes), become classes by argmax over axis; predictions of the labels'
shape are compared as class indices directly.]])

  M.TopKAccuracy = metric('top_k_accuracy', function(self, label, pred)
    check_rows(self.name, label, pred)
    local k = self.top_k or 1
    local top = mx.nd.topk(pred, { axis = -1, k = k, ret_typ = 'indices' })
    local l = label:reshape({ label.size, 1 }):astype(top.dtype)
    local hits = mx.nd.sum(mx.nd.broadcast_equal(top, l))
    self:_add(hits:astype('float64'), label.size)
  end)
  help.doc(M.TopKAccuracy, [[
mx.metric.TopKAccuracy{top_k = 1, name = 'top_k_accuracy'} -> a metric: the
fraction of labels among the top_k highest-scoring classes of their
prediction (also create('top_k_acc', {top_k = k})).

Predictions are (batch, classes), ranked over their last axis.]])

  M.CrossEntropy = metric('cross-entropy', function(self, label, pred)
    check_rows(self.name, label, pred)
    local eps = self.eps or 1e-12
    local p = mx.nd.pick(pred, label, { axis = -1 })
    self:_add(mx.nd.sum(mx.nd.log(p + eps) * -1):astype('float64'), label.size)
  end)
  help.doc(M.CrossEntropy, [[
mx.metric.CrossEntropy{eps = 1e-12, name = 'cross-entropy'} -> a metric: the
mean of -log(p + eps), p the probability a prediction gives its label (also
create('ce')).

Predictions are probabilities, such as a softmax's output, of shape (batch,
classes); each label picks its class along the last axis.]])

  -- Perplexity: exp of the mean -log p over the labels that are not
  -- ignore_label. Labels of any shape are flattened; predictions are
  -- (labels, classes) probabilities.
  local Perplexity = metric('perplexity', function(self, label, pred)
    local n = label.size
    local flat = label:reshape({ n })
    local p = mx.nd.pick(pred:reshape({ n, pred.shape[pred.ndim] }), flat, { axis = -1 })
    local nll = mx.nd.log(mx.nd.clip(p, {a_min = 1e-10, a_max = 1})) * -1
    local count = n
    if self.ignore_label ~= nil then
      local keep = mx.nd._not_equal_scalar(flat, { scalar = self.ignore_label }):astype(nll.dtype)
      nll = nll * keep
      count = mx.nd.sum(keep):astype('float64')
    end
    self:_add(mx.nd.sum(nll):astype('float64'), 1)
    self._count = self._count and self._count + count or count
  end)
  M.Perplexity = function(opts)
    if type(opts) ~= 'table' then opts = { ignore_label = opts } end
    local m = Perplexity(opts)
    m.reset = function(self)
      EvalMetric.reset(self)
      self._count = nil
    end
    m.get = function(self)
      local c = self._count
      if mx.nd.is_ndarray(c) then c = c:asscalar() end
      if self.sum == nil or not c or c == 0 then return self.name, 0 / 0 end
      return self.name, math.exp(self.sum:asscalar() / c)
    end
    m:reset()
    return m
  end
  help.doc(M.Perplexity, [[
mx.metric.Perplexity{ignore_label =, name = 'perplexity'} (or
Perplexity(ignore_label)) -> a metric: exp of the mean negative log
probability of the labels (also create('perplexity')). Labels of any shape
are flattened, predictions are (labels, classes) probabilities, such as a
SoftmaxOutput's over a whole sequence; labels equal to ignore_label (the
padding of BucketSentenceIter) do not count.]])

  local function regression(name, per)
    return metric(name, function(self, label, pred)
      check_rows(self.name, label, pred)
      local d = pred - label:reshape(pred.shape)
      self:_add(mx.nd.sum(per(d)):astype('float64'), label.size)
    end)
  end
  M.MSE = regression('mse', function(d) return d * d end)
  M.MAE = regression('mae', function(d) return mx.nd.abs(d) end)
  local RMSE = regression('rmse', function(d) return d * d end)
  M.RMSE = function(opts)
    local m = RMSE(opts)
    local get = m.get
    m.get = function(self)
      local n, v = get(self)
      return n, math.sqrt(v)
    end
    return m
  end
  help.doc(M.MSE, [[
mx.metric.MSE{name = 'mse'} -> a metric: the mean squared difference between
predictions and labels, over every element (also create('mse')).

Labels are reshaped to their prediction's shape.]])
  help.doc(M.MAE, [[
mx.metric.MAE{name = 'mae'} -> a metric: the mean absolute difference between
predictions and labels, over every element (also create('mae')).

Labels are reshaped to their prediction's shape.]])
  help.doc(M.RMSE, [[
mx.metric.RMSE{name = 'rmse'} -> a metric: the square root of the mean
squared difference between predictions and labels (also create('rmse')).

The root is taken of the mean over every element of every update since the
last reset, not averaged batch by batch. Labels are reshaped to their
prediction's shape.]])

  -- F1 for binary classification (class 1 positive), from counts read at get().
  M.F1 = metric('f1', function(self, label, pred)
    check_rows(self.name, label, pred)
    local cls = pred.ndim > label.ndim and mx.nd.argmax(pred, { axis = -1 }) or pred
    local l = label:reshape(cls.shape):astype(cls.dtype)
    local tp = mx.nd.sum(cls * l):astype('float64')
    local fp = mx.nd.sum(cls * (l * -1 + 1)):astype('float64')
    local fn = mx.nd.sum((cls * -1 + 1) * l):astype('float64')
    self.counts = self.counts or {}
    table.insert(self.counts, { tp, fp, fn })
    self.num = self.num + label.size
  end)
  local f1_get = function(self)
    local tp, fp, fn = 0, 0, 0
    for _, c in ipairs(self.counts or {}) do
      tp, fp, fn = tp + c[1]:asscalar(), fp + c[2]:asscalar(), fn + c[3]:asscalar()
    end
    local prec = tp + fp > 0 and tp / (tp + fp) or 0
    local rec = tp + fn > 0 and tp / (tp + fn) or 0
    return self.name, (prec + rec > 0) and 2 * prec * rec / (prec + rec) or 0
  end
  local F1 = M.F1
  M.F1 = function(opts)
    local m = F1(opts)
    m.get = f1_get
    local reset = m.reset
    m.reset = function(self) reset(self); self.counts = {} end
    return m
  end
  help.doc(M.F1, [[
mx.metric.F1{name = 'f1'} -> a metric: the F1 score of a binary
classification, class 1 being the positive one (also create('f1')).

Predictions with more dimensions than their labels, such as (batch, 2),
become classes by argmax over the last axis; predictions of the labels'
shape are read as classes 0 and 1. True positives, false positives and false
negatives are summed over every update since the last reset, and get()
returns 2 * precision * recall / (precision + recall) of those sums (0 when
that is undefined).]])

  -- Several metrics as one.
  function M.CompositeEvalMetric(metrics)
    local self = { metrics = metrics or {}, name = 'composite' }
    function self:add(m) self.metrics[#self.metrics + 1] = M.create(m) end
    function self:update(labels, preds) for _, m in ipairs(self.metrics) do m:update(labels, preds) end end
    function self:reset() for _, m in ipairs(self.metrics) do m:reset() end end
    function self:get_name_value()
      local out = {}
      for _, m in ipairs(self.metrics) do out[#out + 1] = { m:get() } end
      return out
    end
    function self:get()
      local names, values = {}, {}
      for _, m in ipairs(self.metrics) do
        local n, v = m:get()
        names[#names + 1], values[#values + 1] = n, v
      end
      return names, values
    end
    return self
  end
  help.doc(M.CompositeEvalMetric, [[
mx.metric.CompositeEvalMetric({m1, m2, ...}) -> a metric updating and
resetting every metric of the list at once (also create({'acc', 'ce'})).

The list holds metric objects (create takes names too); m:add(metric)
appends one, a name or an object. m:get() returns the list of names and the
list of values; m:get_name_value() -> {{name, value}, ...}.]])

  local registry = { acc = M.Accuracy, accuracy = M.Accuracy, top_k_accuracy = M.TopKAccuracy,
    top_k_acc = M.TopKAccuracy, ce = M.CrossEntropy, ['cross-entropy'] = M.CrossEntropy,
    mse = M.MSE, mae = M.MAE, rmse = M.RMSE, f1 = M.F1, perplexity = M.Perplexity }

  function M.create(m, opts)
    if type(m) == 'table' and m.update then return m end
    if type(m) == 'table' then
      local parts = {}
      for i, x in ipairs(m) do parts[i] = M.create(x) end
      return M.CompositeEvalMetric(parts)
    end
    local make = registry[tostring(m):lower()]
    if not make then error("metric: unknown metric '" .. tostring(m) .. "'", 2) end
    return make(opts)
  end

  M.create = require('tessera.kwargs').wrap(M.create, 'metric.create', { 'metric' }, 2)
  help.doc(M.create, [[
mx.metric.create(metric, opts) -> a metric: a name ('acc', 'top_k_acc', 'ce',
'mse', 'mae', 'rmse', 'f1', 'perplexity'), a list of them (a CompositeEvalMetric), or a
metric object (returned as it is). Also create{metric = 'acc'}.]])

  M.EvalMetric = help.doc(EvalMetric, [[
mx.metric.EvalMetric: the base class of the metrics: m:reset(), m:get() ->
name, value (the running sum over the count; NaN before any update) and
m:get_name_value() -> {{name, value}}.

The built-in metrics add m:update(labels, preds), each a list of NDArrays
or a single one, and keep their options as fields (Accuracy{name = 'acc2'}
renames one). Their sums stay NDArrays on the engine: update never waits,
get() does.]])
  help.doc(M, [[
mx.metric: Accuracy, TopKAccuracy{top_k}, CrossEntropy, Perplexity, MSE, MAE, RMSE, F1,
CompositeEvalMetric{...}; create('acc' | 'ce' | 'mse' | {...}). m:update(labels,
preds), m:get() -> name, value, m:get_name_value(), m:reset(). Updates are
pushed to the engine; get() waits for them.]])
  return M
end
