-- mx.autograd: recording, backward with every grad_req, head gradients,
-- retain_graph, detach, modes, get_symbol, errors.

local function close(a, b) mx.test_utils.assert_almost_equal(a, b) end

test('record and backward: y = sum(2x^2 + x)', function()
  local x = mx.nd.array({1, 2, 3})
  x:attach_grad()
  assert_eq(x.grad:totable(), {0, 0, 0})
  local y = mx.autograd.record(function() return (x * x * 2 + x):sum() end)
  y:backward()
  close(x.grad, {5, 9, 13})
end)

test('grad_req add accumulates, null leaves the buffer alone', function()
  local w = mx.nd.array({{1, 2}, {3, 4}})
  w:attach_grad('add')
  for _ = 1, 2 do
    mx.autograd.record(function() return mx.nd.dot(w, w) end):backward()
  end
  close(w.grad, {{14, 22}, {18, 26}})
  local u, v = mx.nd.array({1, 2}), mx.nd.array({3, 4})
  u:attach_grad('null')
  v:attach_grad()
  mx.autograd.record(function() return u * v end):backward()
  close(u.grad, {0, 0})
  close(v.grad, {1, 2})
end)

test('head gradients and several heads', function()
  local x = mx.nd.array({1, 2})
  x:attach_grad()
  local a, b = mx.autograd.record(function() return x * 3, x * x end)
  mx.autograd.backward({a, b}, {mx.nd.array({1, 10}), mx.nd.array({1, 1})})
  close(x.grad, {3 + 2, 30 + 4})
  assert_error(function()
    local y = mx.autograd.record(function() return x * 2 end)
    y:backward(mx.nd.array({1, 2, 3}))
  end, 'head gradient')
end)

test('retain_graph, and a second backward over a freed graph is an error', function()
  local x = mx.nd.array({2})
  x:attach_grad()
  local y = mx.autograd.record(function() return x * x end)
  y:backward(nil, true)
  y:backward()
  close(x.grad, {4})
  assert_error(function() y:backward() end, 'freed')
end)

test('detach, pause, modes', function()
  local x = mx.nd.array({1, 2})
  x:attach_grad()
  local y = mx.autograd.record(function()
    assert_eq(mx.autograd.is_recording(), true)
    assert_eq(mx.autograd.is_training(), true)
    local c = mx.autograd.pause(function()
      assert_eq(mx.autograd.is_recording(), false)
      return x * 100
    end)
    return x:detach() * x + c
  end)
  assert_eq(mx.autograd.is_recording(), false)
  assert_eq(mx.autograd.is_training(), false)
  y:backward()
  close(x.grad, {1, 2})
  assert_eq(mx.autograd.train_mode(function() return mx.autograd.is_training() end), true)
  assert_eq(mx.autograd.predict_mode(function() return mx.autograd.is_training() end), false)
  -- a raising function restores the modes
  pcall(mx.autograd.record, function() error('boom') end)
  assert_eq(mx.autograd.is_recording(), false)
end)

test('a yield inside record leaves the modes outside as they were', function()
  local x = mx.nd.array({1, 2})
  x:attach_grad()
  local y
  local co = coroutine.create(function(a)
    local got = mx.autograd.record(function()
      local b = coroutine.yield('inside', a)   -- suspends the block
      assert_eq(mx.autograd.is_recording(), true)  -- resumed: recording again
      assert_eq(mx.autograd.is_training(), true)
      y = x * x * b
      return 'returned'
    end)
    return got
  end)
  assert_eq({coroutine.resume(co, 7)}, {true, 'inside', 7})
  assert_eq(mx.autograd.is_recording(), false)
  assert_eq(mx.autograd.is_training(), false)
  local outside = x * 5  -- not recorded
  assert_eq({coroutine.resume(co, 3)}, {true, 'returned'})
  assert_eq(mx.autograd.is_recording(), false)
  y:backward()
  close(x.grad, {6, 12})
  assert_error(function() outside:backward() end, '')
  -- Abandoned inside a block, never resumed: nothing is left switched on.
  for _, scope in ipairs({mx.autograd.record, mx.autograd.train_mode}) do
    coroutine.wrap(function() scope(function() coroutine.yield() end) end)()
    assert_eq(mx.autograd.is_recording(), false)
    assert_eq(mx.autograd.is_training(), false)
  end
  -- pause inside record, suspended: the code outside both sees neither.
  mx.autograd.record(function()
    local inner = coroutine.wrap(function()
      mx.autograd.pause(function() coroutine.yield() end)
    end)
    inner()
    assert_eq(mx.autograd.is_recording(), true)
  end)
  -- A yield outside any coroutine is still Lua's error, and leaves nothing on.
  assert_error(function() mx.autograd.record(function() coroutine.yield() end) end, 'yield')
  assert_eq(mx.autograd.is_recording(), false)
end)

test('get_symbol and errors', function()
  local x = mx.nd.array({1, 2})
  x:attach_grad()
  local y = mx.autograd.record(function() return mx.nd.relu(x) + 1 end)
  local s = mx.autograd.get_symbol(y)
  assert_eq(mx.sym.is_symbol(s), true)
  assert_eq(#s:list_arguments(), 1)
  assert_error(function() mx.nd.array({1}):backward() end, 'record')
  local z = mx.nd.array({1})
  assert_error(function() mx.autograd.record(function() return z * 2 end):backward() end, 'record')
end)

test('views made while recording pass gradients (reshape, slice, a[i], a[{i, j}])', function()
  local x = mx.nd.array({{1, 2}, {3, 4}, {5, 6}}, {dtype = 'float64'})
  x:attach_grad()
  mx.autograd.record(function()
    return (x:reshape({6}) * mx.nd.array({1, 2, 3, 4, 5, 6}, {dtype = 'float64'})):sum()
  end):backward()
  assert_eq(x.grad:totable(), {{1, 2}, {3, 4}, {5, 6}})
  mx.autograd.record(function() return (x[2] * 10):sum() + (x[{1, 2}] * x[{2, 3}]):sum() end):backward()
  -- d/dx of sum(10 x2 + x1 * x2 + x2 * x3) over rows: x1 gets x2, x2 gets 10 + x1 + x3, x3 gets x2.
  assert_eq(x.grad:totable(), {{3, 4}, {16, 18}, {3, 4}})
  mx.autograd.record(function() return (x:slice(3) * 2):sum() end):backward()
  assert_eq(x.grad:totable(), {{0, 0}, {0, 0}, {2, 2}})
  -- A 1-D array's element keeps its axis, and views of views chain.
  local v = mx.nd.array({1, 2, 3, 4}, {dtype = 'float64'})
  v:attach_grad()
  mx.autograd.record(function() return v[3] * 5 + v:reshape({2, 2})[2]:sum() end):backward()
  assert_eq(v.grad:totable(), {0, 0, 6, 1})
  -- Outside record, and for arrays nobody tracks, views stay plain views.
  local y = x:reshape({6})
  y[1] = 100
  assert_eq(x[1]:totable(), {100, 2})
end)
