-- mx.nd.contrib.foreach, while_loop and cond against unrolled loops, under
-- autograd too; the contrib namespaces.

local flat = mx.test_utils.flatten

test('foreach: a running sum, as the unrolled loop', function()
  local x = mx.nd.array({{1, 2}, {3, 4}, {5, 6}})
  local outs, final = mx.nd.contrib.foreach(function(xt, s)
    local n = s + xt
    return n, n
  end, x, mx.nd.zeros({2}))
  assert_eq(outs:totable(), {{1, 2}, {4, 6}, {9, 12}})
  assert_eq(final:totable(), {9, 12})
  -- Lists of data, states and outputs.
  local o, s = mx.nd.contrib.foreach(function(d, st)
    return {d[1] * 2, d[2] + st[1]}, {st[1] + 1, st[2] * d[1]}
  end, {mx.nd.array({1, 2, 3}), mx.nd.array({10, 20, 30})}, {mx.nd.array({0}), mx.nd.array({1})})
  assert_eq(o[1]:totable(), {{2}, {4}, {6}})
  assert_eq(o[2]:totable(), {{10}, {21}, {32}})
  assert_eq(s[1]:totable(), {3})
  assert_eq(s[2]:totable(), {6})
end)

test('foreach under autograd: gradients as the unrolled loop', function()
  local x = mx.nd.array({{1, 2}, {3, 4}, {5, 6}}, {dtype = 'float64'})
  local w = mx.nd.array({0.5, -1}, {dtype = 'float64'})
  x:attach_grad()
  w:attach_grad()
  mx.autograd.record(function()
    local outs = mx.nd.contrib.foreach(function(xt, s)
      local n = mx.nd.tanh(s * w + xt)
      return n, n
    end, x, mx.nd.zeros({2}, {dtype = 'float64'}))
    return outs:sum()
  end):backward()
  local gx, gw = flat(x.grad), flat(w.grad)
  local x2 = mx.nd.array({{1, 2}, {3, 4}, {5, 6}}, {dtype = 'float64'})
  local w2 = mx.nd.array({0.5, -1}, {dtype = 'float64'})
  x2:attach_grad()
  w2:attach_grad()
  mx.autograd.record(function()
    local s, total = mx.nd.zeros({2}, {dtype = 'float64'}), nil
    for t = 1, 3 do
      s = mx.nd.tanh(s * w2 + x2[t])
      total = total and total + s:sum() or s:sum()
    end
    return total
  end):backward()
  mx.test_utils.assert_almost_equal(gx, flat(x2.grad), {rtol = 1e-12, atol = 1e-14})
  mx.test_utils.assert_almost_equal(gw, flat(w2.grad), {rtol = 1e-12, atol = 1e-14})
end)

test('while_loop: stops on cond or max_iterations, outputs padded with zeros', function()
  local outs, vars = mx.nd.contrib.while_loop(
    function(i, s) return i:asscalar() < 4 end,
    function(i, s) return {s * 10}, {i + 1, s + i} end,
    {mx.nd.array({0}), mx.nd.array({1})}, 6)
  assert_eq(outs[1]:totable(), {{10}, {10}, {20}, {40}, {0}, {0}})
  assert_eq(vars[1]:totable(), {4})
  assert_eq(vars[2]:totable(), {7})
  local _, capped = mx.nd.contrib.while_loop(function() return true end,
    function(i) return nil, {i + 1} end, {mx.nd.array({0})}, 3)
  assert_eq(capped[1]:totable(), {3})
  assert_error(function() mx.nd.contrib.while_loop(function() return true end,
    function(i) return nil, {i, i} end, {mx.nd.array({0})}, 3) end, 'returned 2 loop variables for 1')
  assert_error(function() mx.nd.contrib.while_loop(function() return mx.nd.ones({2}) end,
    function(i) return nil, {i} end, {mx.nd.array({0})}, 3) end, 'must return one value')
end)

test('cond picks a branch; contrib names resolve to _contrib_ operators', function()
  local a = mx.nd.array({2})
  local r = mx.nd.contrib.cond(mx.nd.greater(a, mx.nd.array({1})), function() return a * 10 end,
    function() return a end)
  assert_eq(r:totable(), {20})
  r = mx.nd.contrib.cond(mx.nd.array({0}), function() return a * 10 end, function() return a end)
  assert_eq(r:totable(), {2})
  assert_eq(mx.nd.contrib.CTCLoss ~= nil, true)
  assert_eq(mx.sym.contrib.ctc_loss ~= nil, true)
  assert_eq(mx.nd.contrib.no_such_op, nil)
  assert_error(function() mx.sym.contrib.foreach() end, 'not built yet')
end)
