-- mx.engine.set_check_numerics: the first op that writes a NaN or an
-- infinity fails, named, in imperative calls, in a bound graph (forward and
-- backward) and under autograd.

local function with_check(fn)
  local before = mx.engine.set_check_numerics(true)
  local ok, err = pcall(fn)
  mx.engine.set_check_numerics(before)
  if not ok then error(err, 0) end
end

test('off by default; the switch returns the previous setting', function()
  assert_eq(mx.engine.check_numerics(), false)
  local y = mx.nd.log(mx.nd.array({ 1, 0 }))
  assert_eq(y:totable()[2], -math.huge)  -- no check: the value is there
  assert_eq(mx.engine.set_check_numerics(true), false)
  assert_eq(mx.engine.check_numerics(), true)
  assert_eq(mx.engine.set_check_numerics(false), true)
end)

test('an imperative op that writes -Inf fails, naming itself, the output and the element', function()
  with_check(function()
    local y = mx.nd.log(mx.nd.array({ 1, 0, 2 }))
    assert_error(function() y:wait_to_read() end,
      'check_numerics: log wrote %-Inf to output 0 %(3,%) at element 1; its inputs: 0 %(3,%) finite')
    -- inputs that were already non-finite are named
    local z = mx.nd.array({ 1, math.huge }) + 1
    assert_error(function() z:wait_to_read() end,
      'wrote %+Inf to output 0 %(2,%) at element 1; its inputs: 0 %(2,%) non%-finite')
    -- the engine and later ops carry on
    local ok = mx.nd.array({ 1, 2 }) * 2
    assert_eq(ok:totable(), { 2, 4 })
    -- integer arrays hold no NaN
    local i = mx.nd.array({ 1, 2 }, { dtype = 'int32' }) * 3
    assert_eq(i:totable(), { 3, 6 })
  end)
end)

-- data -> *2 -> +1 -> relu -> -5 -> sqrt (the fifth node: NaN for inputs < 2)
local function chain()
  local x = mx.sym.Variable('data')
  local a = mx.sym._mul_scalar { data = x, scalar = 2, name = 'n1' }
  local b = mx.sym._plus_scalar { data = a, scalar = 1, name = 'n2' }
  local c = mx.sym.relu { data = b, name = 'n3' }
  local d = mx.sym._minus_scalar { data = c, scalar = 5, name = 'n4' }
  return mx.sym.sqrt { data = d, name = 'n5' }
end

test('in a bound graph, forward: the fifth node is named', function()
  with_check(function()
    local exe = chain():simple_bind { ctx = mx.cpu(), data = { 2, 2 }, grad_req = 'null' }
    exe:forward { is_train = false, data = mx.nd.array({ { 3, 4 }, { 5, 1 } }) }
    assert_error(function() exe.outputs[1]:wait_to_read() end,
      'check_numerics: sqrt %(node n5%) wrote NaN to output 0 %(2,2%) at element 3')
  end)
end)

test('in a bound graph, backward: the gradient op names its forward op', function()
  with_check(function()
    -- sqrt at 0: forward 0, backward 0.5 / 0 = +Inf
    local x = mx.sym.Variable('x')
    local y = mx.sym.sqrt { data = x, name = 'root' }
    local exe = y:simple_bind { ctx = mx.cpu(), x = { 2 } }
    exe:forward { is_train = true, x = mx.nd.array({ 4, 0 }) }
    exe:backward { mx.nd.ones({ 2 }) }
    assert_error(function() exe.grad_dict.x:wait_to_read() end,
      '_backward_sqrt %(node root_backward, the gradient of sqrt%) wrote %+Inf to output 0')
  end)
end)

test('under autograd: the backward names the forward op', function()
  with_check(function()
    local x = mx.nd.array({ 1, 0 })
    x:attach_grad()
    local y
    mx.autograd.record(function() y = mx.nd.sqrt(x) end)
    y:backward()
    assert_error(function() x.grad:wait_to_read() end, 'the gradient of sqrt%) wrote %+Inf')
  end)
end)
