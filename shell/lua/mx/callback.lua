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

  help.doc(M, [[
mx.callback: Speedometer(batch_size, frequent = 50, auto_reset) prints samples/s
and the metric every `frequent` batches; do_checkpoint(prefix, period = 1)
saves PREFIX-symbol.json and PREFIX-%04d.params every `period` epochs;
log_train_metric(period).]])
  return M
end
