-- mx.lr_scheduler: MXNet's name for the schedules in mx.optimizer.
return function(mx)
  return { FactorScheduler = mx.optimizer.FactorScheduler,
    MultiFactorScheduler = mx.optimizer.MultiFactorScheduler }
end
