-- mx.gluon.contrib.estimator: MXNet's Estimator, the training loop of the
-- layer API written once: fit(train, {val_data, epochs, event_handlers})
-- runs forward under autograd, backward and the trainer's step for every
-- batch, keeps the training metrics per batch and per epoch, evaluates,
-- shows the progress bar (with the live chart where the terminal allows
-- it) and draws the curves (plot = 'curves.png'), as Module:fit does.
local class = require 'tessera.class'
local help = require 'tessera.help'

return function(mx, G)
  local M = {}
  local Estimator = class.root('Estimator')

  local function metric_list(m, default)
    if m == nil then m = default end
    if type(m) == 'string' or (type(m) == 'table' and m.update) then m = { m } end
    local out = {}
    for i, x in ipairs(m) do out[i] = mx.metric.create(x) end
    return out
  end

  -- Estimator{net =, loss =, trainer =, train_metrics = 'acc', val_metrics =
  -- (as train_metrics), context = mx.cpu()} (or positional: net, loss, ...).
  function Estimator:__init(opts, loss, train_metrics, trainer, context)
    if not (type(opts) == 'table' and opts.net) then
      opts = { net = opts, loss = loss, train_metrics = train_metrics, trainer = trainer,
        context = context }
    end
    if not class.isinstance(opts.net, G.Block) then error('Estimator: net must be a gluon Block', 3) end
    if opts.loss == nil then error('Estimator: a loss is required', 3) end
    self.net, self.loss = opts.net, opts.loss
    self.context = opts.context or mx.cpu()
    self.train_metrics = metric_list(opts.train_metrics, 'acc')
    self.val_metrics = metric_list(opts.val_metrics or opts.train_metrics, 'acc')
    self.trainer = opts.trainer or G.Trainer(self.net:collect_params(), 'sgd',
      { learning_rate = 0.001 })
    self.history = {}
  end

  local function values(metrics)
    local out = {}
    for _, m in ipairs(metrics) do
      for _, nv in ipairs(m:get_name_value()) do out[#out + 1] = nv end
    end
    return out
  end

  local function text(nvs)
    local parts = {}
    for i, nv in ipairs(nvs) do parts[i] = ('%s=%.4f'):format(nv[1], nv[2]) end
    return table.concat(parts, ' ')
  end

  -- Calls `event` on every handler that has it; true when one asks to stop.
  local function fire(handlers, event, est, info)
    local stop = false
    for _, h in ipairs(handlers) do
      local fn = h[event]
      if fn and fn(h, est, info) == true then stop = true end
    end
    return stop
  end

  -- The validation metrics over `data` (a DataLoader): {{name, value}, ...}.
  function Estimator:evaluate(data)
    for _, m in ipairs(self.val_metrics) do m:reset() end
    for x, y in data:iter() do
      x, y = x:as_in_context(self.context), y:as_in_context(self.context)
      local out = self.net(x)
      for _, m in ipairs(self.val_metrics) do m:update({ y }, { out }) end
    end
    return values(self.val_metrics)
  end

  -- est:fit(train_data, {val_data, epochs = 1, batches, event_handlers =
  -- {...}, progress = true, plot = path, chart}) -> the history: per epoch
  -- {epoch, train = {name, value}, train_metrics, loss, batches, validation}.
  -- Handlers are tables with any of train_begin, epoch_begin, batch_begin,
  -- batch_end, epoch_end, train_end (handler, estimator, info); batch_end or
  -- epoch_end returning true stops training (MXNet's StoppingHandler rule).
  function Estimator:fit(train_data, opts)
    opts = opts or {}
    local epochs = opts.epochs or 1
    local handlers = opts.event_handlers or {}
    local chart = opts.chart
    if chart == nil then chart = opts.progress ~= false and mx.callback.terminal_allows_chart() end
    fire(handlers, 'train_begin', self, {})
    local stop = false
    for epoch = 0, epochs - 1 do
      if stop then break end
      for _, m in ipairs(self.train_metrics) do m:reset() end
      fire(handlers, 'epoch_begin', self, { epoch = epoch })
      local batch_values, nbatch, loss_sum, loss_n = {}, 0, 0, 0
      local total = train_data.len and train_data:len() or nil
      local bar = mx.callback.ProgressBar(total, { label = ('Epoch %d '):format(epoch),
        quiet = opts.progress == false, chart = chart and batch_values or nil })
      if opts.progress == false then bar.live = false end
      for x, y in train_data:iter() do
        if opts.batches and nbatch >= opts.batches then break end
        fire(handlers, 'batch_begin', self, { epoch = epoch, nbatch = nbatch })
        x, y = x:as_in_context(self.context), y:as_in_context(self.context)
        local out
        local loss = mx.autograd.record(function()
          out = self.net(x)
          return self.loss(out, y)
        end)
        loss:backward()
        self.trainer:step(x.shape[1])
        for _, m in ipairs(self.train_metrics) do m:update({ y }, { out }) end
        nbatch = nbatch + 1
        loss_sum, loss_n = loss_sum + loss:sum():asscalar(), loss_n + x.shape[1]
        local nvs = values(self.train_metrics)
        batch_values[nbatch] = nvs[1] and nvs[1][2] or 0
        bar:update(x.shape[1], text(nvs) .. (' loss=%.4f'):format(loss_sum / loss_n))
        if fire(handlers, 'batch_end', self, { epoch = epoch, nbatch = nbatch, loss = loss }) then
          stop = true
          break
        end
      end
      local train = values(self.train_metrics)
      local record = { epoch = epoch, train = train[1] or { 'none', 0 }, train_metrics = train,
        loss = loss_n > 0 and loss_sum / loss_n or nil, batches = batch_values }
      local line = ('Epoch %d: train %s loss=%.4f'):format(epoch, text(train), record.loss or 0)
      if opts.val_data then
        record.validation = self:evaluate(opts.val_data)
        line = line .. ', validation ' .. text(record.validation)
      end
      local dt, speed = bar:elapsed()
      bar:finish(line .. (', %.1fs (%.0f samples/s)'):format(dt, speed))
      self.history[#self.history + 1] = record
      if opts.plot then mx.plot.training_curves(opts.plot, self.history) end
      if fire(handlers, 'epoch_end', self, { epoch = epoch, record = record }) then stop = true end
    end
    fire(handlers, 'train_end', self, {})
    return self.history
  end

  M.Estimator = Estimator
  help.doc(M.Estimator, [[
mx.gluon.contrib.estimator.Estimator{net =, loss =, trainer =, train_metrics
= 'acc', val_metrics =, context = mx.cpu()}: MXNet's Estimator, the layer
API's training loop. est:fit(train_loader, {val_data =, epochs = 1, batches
=, event_handlers = {...}, progress = true, plot = 'curves.png', chart})
trains (autograd forward, backward, trainer:step per batch), keeps the
training metrics per batch and per epoch (the history it returns, also
est.history), shows the progress bar (a live chart under it where the
terminal allows it) and writes the curves with plot. est:evaluate(loader)
-> {{name, value}, ...}. Event handlers are tables with any of train_begin,
epoch_begin, batch_begin, batch_end, epoch_end, train_end (handler, est,
info); batch_end or epoch_end returning true stops training.]])
  return { estimator = M }
end
