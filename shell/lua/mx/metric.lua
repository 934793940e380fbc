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

  M.TopKAccuracy = metric('top_k_accuracy', function(self, label, pred)
    check_rows(self.name, label, pred)
    local k = self.top_k or 1
    local top = mx.nd.topk(pred, { axis = -1, k = k, ret_typ = 'indices' })
    local l = label:reshape({ label.size, 1 }):astype(top.dtype)
    local hits = mx.nd.sum(mx.nd.broadcast_equal(top, l))
    self:_add(hits:astype('float64'), label.size)
  end)

  M.CrossEntropy = metric('cross-entropy', function(self, label, pred)
    check_rows(self.name, label, pred)
    local eps = self.eps or 1e-12
    local p = mx.nd.pick(pred, label, { axis = -1 })
    self:_add(mx.nd.sum(mx.nd.log(p + eps) * -1):astype('float64'), label.size)
  end)

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

  local registry = { acc = M.Accuracy, accuracy = M.Accuracy, top_k_accuracy = M.TopKAccuracy,
    top_k_acc = M.TopKAccuracy, ce = M.CrossEntropy, ['cross-entropy'] = M.CrossEntropy,
    mse = M.MSE, mae = M.MAE, rmse = M.RMSE, f1 = M.F1 }

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
'mse', 'mae', 'rmse', 'f1'), a list of them (a CompositeEvalMetric), or a
metric object (returned as it is). Also create{metric = 'acc'}.]])

  M.EvalMetric = EvalMetric
  help.doc(M, [[
mx.metric: Accuracy, TopKAccuracy{top_k}, CrossEntropy, MSE, MAE, RMSE, F1,
CompositeEvalMetric{...}; create('acc' | 'ce' | 'mse' | {...}). m:update(labels,
preds), m:get() -> name, value, m:get_name_value(), m:reset(). Updates are
pushed to the engine; get() waits for them.]])
  return M
end
