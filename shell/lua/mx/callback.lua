-- mx.callback: functions for Module:fit's batch_end_callback and
-- epoch_end_callback.
local help = require 'tessera.help'

return function(mx)
  local M = {}

  function M.Speedometer(batch_size, frequent, auto_reset)
    frequent = frequent or 50
    local t0, last = nil, 0
    return function(p)
      if p.nbatch == 1 or t0 == nil then
        t0, last = mx.mod.now(), 0
        return
      end
      if p.nbatch % frequent == 0 then
        local now = mx.mod.now()
        local speed = frequent * batch_size / (now - t0)
        local parts = {}
        if p.eval_metric then
          for _, nv in ipairs(p.eval_metric:get_name_value()) do
            parts[#parts + 1] = ('%s=%f'):format(nv[1], nv[2])
          end
          if auto_reset then p.eval_metric:reset() end
        end
        print(('Epoch[%d] Batch [%d-%d]\tSpeed: %.2f samples/sec\t%s'):format(p.epoch,
          last, p.nbatch, speed, table.concat(parts, '\t')))
        t0, last = now, p.nbatch
      end
    end
  end
  help.doc(M.Speedometer, [[
mx.callback.Speedometer(batch_size, frequent = 50, auto_reset = false) -> a
batch_end_callback for Module:fit printing the training speed and the metric
every `frequent` batches.

Each line reads Epoch[e] Batch [a-b] Speed: N samples/sec, then the metric's
name=value pairs; the timing starts again at each epoch's first batch, and
auto_reset = true resets the metric after each line.]])

  function M.do_checkpoint(prefix, period)
    period = math.max(1, period or 1)
    return function(epoch, sym, args, aux)
      if (epoch + 1) % period == 0 then
        mx.mod.save_checkpoint(prefix, epoch + 1, sym, args, aux)
      end
    end
  end
  help.doc(M.do_checkpoint, [[
mx.callback.do_checkpoint(prefix, period = 1) -> an epoch_end_callback for
Module:fit saving a checkpoint every `period` epochs.

After epoch e (counted from 0), when e + 1 is a multiple of period, it calls
mx.mod.save_checkpoint(prefix, e + 1, ...): PREFIX-symbol.json and
PREFIX-%04d.params numbered e + 1, as MXNet does; read one back with
mx.mod.load_checkpoint(prefix, e + 1) or mx.mod.Module.load(prefix, e + 1).]])

  function M.log_train_metric(period, auto_reset)
    return function(p)
      if p.nbatch % period == 0 and p.eval_metric then
        for _, nv in ipairs(p.eval_metric:get_name_value()) do
          print(('Iter[%d] Batch[%d] Train-%s=%f'):format(p.epoch, p.nbatch, nv[1], nv[2]))
        end
        if auto_reset then p.eval_metric:reset() end
      end
    end
  end
  help.doc(M.log_train_metric, [[
mx.callback.log_train_metric(period, auto_reset = false) -> a
batch_end_callback for Module:fit printing the training metric every
`period` batches.

period is required. Each name=value pair of the metric prints as
Iter[epoch] Batch[n] Train-name=value; auto_reset = true resets the metric
after printing.]])

  -- ---- A progress bar: live on a terminal, one line per epoch otherwise.
  local ffi = require 'ffi'
  pcall(ffi.cdef, 'int isatty(int fd);')
  local Bar = {}
  Bar.__index = Bar

  function M.ProgressBar(total, opts)
    opts = opts or {}
    local live = opts.live
    if live == nil then live = ffi.C.isatty(1) == 1 end
    return setmetatable({ total = total, t0 = mx.mod.now(), n = 0, samples = 0, live = live,
      quiet = opts.quiet or false, width = opts.width or 24, every = opts.every or 20,
      label = opts.label or '', chart = opts.chart, chart_lines = 0 }, Bar)
  end

  -- Whether a live chart can be drawn: a terminal that shows UTF-8 (the
  -- braille dots) and understands cursor movement.
  function M.terminal_allows_chart()
    if ffi.C.isatty(1) ~= 1 then return false end
    local term = os.getenv('TERM') or ''
    if term == '' or term == 'dumb' then return false end
    local loc = (os.getenv('LC_ALL') or '') .. (os.getenv('LC_CTYPE') or '') .. (os.getenv('LANG') or '')
    return loc:upper():find('UTF%-?8') ~= nil
  end

  -- The chart under the bar (bar.chart: a list the caller keeps filling):
  -- drawn below the bar line, then the cursor goes back up to it, so the
  -- next redraw overwrites both.
  function Bar:_draw_chart()
    local values = self.chart
    if type(values) ~= 'table' or #values < 2 then return end
    local text = mx.plot.chart(values, { width = 60, height = 4 })
    local lines = select(2, text:gsub('\n', '\n')) + 1
    io.write('\n', text, '\27[K')
    io.write(('\27[%dA\r'):format(lines))
    self.chart_lines = lines
  end

  -- One more batch of `samples`; `text` (the metric) shown on the bar.
  function Bar:update(samples, text)
    self.n = self.n + 1
    self.samples = self.samples + (samples or 0)
    if not self.live or (self.n % self.every ~= 0 and self.n ~= self.total) then return end
    local dt = mx.mod.now() - self.t0
    local total = self.total
    local eta = total and math.max(0, total - self.n) * dt / self.n or 0
    local filled = total and math.min(self.width, math.floor(self.width * self.n / total)) or 0
    io.write(('\r%s[%s%s] %d/%s  %.0f samples/s  %s  %ds left   '):format(self.label,
      ('#'):rep(filled), ('.'):rep(self.width - filled), self.n, total or '?',
      self.samples / dt, text or '', math.floor(eta + 0.5)))
    if self.chart then self:_draw_chart() end
    io.flush()
  end

  -- Seconds and samples/s since the bar started.
  function Bar:elapsed()
    local dt = mx.mod.now() - self.t0
    return dt, self.samples / dt
  end

  -- Replaces the bar by `line` (printed once, also when not live).
  function Bar:finish(line)
    if self.live then
      -- The chart's lines are cleared; the epoch's line stays.
      if self.chart_lines > 0 then io.write('\r\27[J') end
      io.write('\r' .. line .. (' '):rep(20) .. '\n')
    elseif not self.quiet then
      print(line)
      io.stdout:flush()  -- a log read while training runs shows each line
    end
  end

  help.doc(M.ProgressBar, [[
mx.callback.ProgressBar(total, {live, quiet, width = 24, every = 20, label, chart})
-> a progress bar over `total` batches (nil: unknown): bar:update(samples,
text) after each batch, bar:elapsed() -> seconds, samples/s;
bar:finish(line) replaces it by a line. Live (redrawn every `every` batches,
with samples/s and the time left) when stdout is a terminal; otherwise only
the finishing line prints (none with quiet = true). chart: a list of numbers
(the caller appends to it) drawn as a braille chart under the live bar,
redrawn with it (mx.callback.terminal_allows_chart() says whether the
terminal shows one). Module:fit and the Gluon scripts show their progress
with it.]])

  help.doc(M, [[
mx.callback: ProgressBar(total, opts); Speedometer(batch_size, frequent = 50, auto_reset) prints samples/s
and the metric every `frequent` batches; do_checkpoint(prefix, period = 1)
saves PREFIX-symbol.json and PREFIX-%04d.params every `period` epochs;
log_train_metric(period).]])
  return M
end
