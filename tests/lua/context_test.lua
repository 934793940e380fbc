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
}
