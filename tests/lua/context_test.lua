-- mx.cpu, mx.gpu, mx.context
return {
  printing = function()
    assert_eq(tostring(mx.cpu()), 'cpu(0)')
    assert_eq(tostring(mx.cpu(2)), 'cpu(2)')
    assert_eq(tostring(mx.gpu(1)), 'gpu(1)')
    assert_eq(tostring(mx.cpu_pinned()), 'cpu_pinned(0)')
  end,
  equality = function()
    assert(mx.cpu(0) == mx.cpu())
    assert(mx.cpu(0) ~= mx.cpu(1))
    assert(mx.gpu(0) ~= mx.cpu(0))
    assert(mx.context.gpu(3) == mx.gpu(3))
  end,
  fields = function()
    assert_eq(mx.gpu(2).device_type, 'gpu')
    assert_eq(mx.gpu(2).device_id, 2)
    assert_eq(mx.cpu().device_type, 'cpu')
  end,
  num_gpus = function()
    local n = mx.context.num_gpus()
    assert_eq(type(n), 'number')
    assert(n >= 0)
    assert_eq(mx.num_gpus(), n)
  end,
  bad_ids = function()
    assert_error(function() mx.cpu(-1) end, 'non%-negative')
    assert_error(function() mx.gpu('x') end, 'number expected')
  end,
  memory_stats_and_empty_cache = function()
    collectgarbage('collect'); collectgarbage('collect'); mx.nd.waitall()
    local cpu = mx.cpu()
    local s0 = mx.context.memory_stats(cpu)
    for _, k in ipairs{'in_use', 'pooled', 'peak', 'allocs', 'pool_hits'} do
      assert_eq(type(s0[k]), 'number')
    end
    mx.context.reset_peak_memory(cpu)
    assert_eq(cpu:memory_stats().peak, s0.in_use)
    local a = mx.nd.zeros({1000, 1000})  -- 4 MB
    a:wait_to_read()
    local s1 = cpu:memory_stats()
    assert(s1.in_use >= s0.in_use + 4e6, 'in_use grows by the array')
    assert(s1.peak >= s1.in_use)
    a = nil
    collectgarbage('collect'); collectgarbage('collect'); mx.nd.waitall()
    local s2 = mx.context.memory_stats()
    assert(s2.pooled >= 4e6, 'the freed block is pooled')
    assert_eq(s2.peak, s1.peak)
    local given = cpu:empty_cache()
    assert(given >= 4e6, 'empty_cache gives the pooled block back')
    assert_eq(mx.context.memory_stats(cpu).pooled, 0)
    assert(mx.context.empty_cache() >= 0)
    assert(mx.context.memory_stats(mx.cpu(7)).in_use == 0)  -- never used
    assert_error(function() mx.context.empty_cache('cpu') end, 'empty_cache')
    local report = mx.context.memory_report()
    assert(report:find('cpu(0)', 1, true), report)
    assert(report:find('engine op blocks', 1, true), report)
  end,
  gpu_memory_info = function()
    if mx.context.num_gpus() == 0 then
      assert_error(function() mx.context.gpu_memory_info(0) end, 'gpu%(0%)')
    else
      local free, total = mx.context.gpu_memory_info(0)
      assert(total > 0 and free <= total)
    end
    assert_error(function() mx.context.gpu_memory_info(-1) end, 'device id')
  end,
}
