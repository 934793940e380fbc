-- mx.lr_scheduler: MXNet's name for the schedules in mx.optimizer.
local help = require 'tessera.help'

return function(mx)
  -- The same functions as mx.optimizer's, so they carry the docs written
  -- there (a doc belongs to the value, whichever name reaches it).
  local M = { FactorScheduler = mx.optimizer.FactorScheduler,
    MultiFactorScheduler = mx.optimizer.MultiFactorScheduler }
  help.doc(M, [[
mx.lr_scheduler: learning-rate schedules under MXNet's module name, the same
functions as mx.optimizer's: FactorScheduler{step, factor} and
MultiFactorScheduler{step = {n1, n2, ...}, factor}.

A schedule is called as sched(num_update) -> the learning rate. Give one to
an optimizer as lr_scheduler, and its base_lr becomes the optimizer's
learning rate:
  mx.optimizer.create('sgd', {learning_rate = 0.1, lr_scheduler =
    mx.lr_scheduler.FactorScheduler{step = 100, factor = 0.9}})]])
  return M
end
