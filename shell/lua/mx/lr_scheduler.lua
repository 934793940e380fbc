-- mx.lr_scheduler: MXNet's name for the schedules in mx.optimizer.
local help = require 'tessera.help'

return function(mx)
  -- The same functions as mx.optimizer's, so they carry the docs written
  -- there (a doc belongs to the value, whichever name reaches it).
  local M = { FactorScheduler = mx.optimizer.FactorScheduler,
    MultiFactorScheduler = mx.optimizer.MultiFactorScheduler,
    PolyScheduler = mx.optimizer.PolyScheduler, CosineScheduler = mx.optimizer.CosineScheduler }
  help.doc(M, [[
mx.lr_scheduler: learning-rate schedules under MXNet's module name, the same
functions as mx.optimizer's: FactorScheduler{step, factor},
MultiFactorScheduler{step = {n1, n2, ...}, factor}, PolyScheduler{max_update,
pwr, final_lr} and CosineScheduler{max_update, final_lr}, each with
warmup_steps, warmup_begin_lr and warmup_mode.

A schedule is called as sched(num_update) -> the learning rate. Give one to
an optimizer as lr_scheduler, and its base_lr becomes the optimizer's
learning rate:
  mx.optimizer.create('sgd', {learning_rate = 0.1, lr_scheduler =
    mx.lr_scheduler.FactorScheduler{step = 100, factor = 0.9}})]])
  return M
end
