-- cumsum, moments, ravel_multi_index / unravel_index, khatri_rao,
-- contrib.index_copy and scatter_nd: MXNet's documented examples, NumPy's
-- rules where MXNet follows them, and bad input named. Gradients are in
-- gradient_test.lua.

local tu = mx.test_utils
local function close(a, b, tol) tu.assert_almost_equal(a, b, {rtol = tol or 1e-6, atol = tol or 1e-6}) end

test('cumsum: flattened, along an axis, dtypes', function()
  local a = mx.nd.array({{1, 2, 3}, {4, 5, 6}})
  assert_eq(mx.nd.cumsum(a):totable(), {1, 3, 6, 10, 15, 21})
  assert_eq(mx.nd.cumsum(a, {axis = 1}):totable(), {{1, 2, 3}, {5, 7, 9}})
  assert_eq(mx.nd.cumsum(a, {axis = 2}):totable(), {{1, 3, 6}, {4, 9, 15}})
  assert_eq(mx.nd.cumsum(a, {axis = -1}):totable(), {{1, 3, 6}, {4, 9, 15}})
  local f = mx.nd.cumsum(a, {dtype = 'float64'})
  assert_eq(f.dtype, 'float64')
  local b = mx.nd.cumsum(mx.nd.array({1, 0, 1}, {dtype = 'bool'}))
  assert_eq({b.dtype, b:totable()}, {'int64', {1, 1, 2}})
  local i = mx.nd.cumsum(mx.nd.array({100, 100, 100}, {dtype = 'int8'}))
  assert_eq(i.dtype, 'int8')  -- summed in int8, wrapping, as NumPy
  assert_eq(mx.nd._np_cumsum(a, {axis = 2}):totable(), {{1, 3, 6}, {4, 9, 15}})
  assert_error(function() mx.nd.cumsum(a, {axis = 3}) end, 'cumsum')
end)

test('moments: MXNet examples, keepdims, several axes', function()
  local x = mx.nd.array({{1, 2, 3}, {4, 5, 6}})
  local m, v = mx.nd.moments(x, {axes = {1}})
  close(m, {2.5, 3.5, 4.5})
  close(v, {2.25, 2.25, 2.25})
  m, v = mx.nd.moments(x, {axes = {2}})
  close(m, {2, 5})
  close(v, {2 / 3, 2 / 3}, 1e-6)
  m, v = mx.nd.moments(x, {axes = {1, 2}, keepdims = true})
  assert_eq(m.shape, {1, 1})
  close(m, {{3.5}})
  close(v, {{35 / 12}}, 1e-6)
  -- Against mean and mean of squares on a 3-D array, the middle axis kept.
  local y = mx.nd.random.normal(0, 2, {3, 4, 5}, {dtype = 'float64'})
  m, v = mx.nd.moments(y, {axes = {1, 3}})
  local mean = mx.nd.mean(y, {axis = {1, 3}})
  close(m, mean, 1e-12)
  close(v, mx.nd.mean(mx.nd.square(y), {axis = {1, 3}}) - mx.nd.square(mean), 1e-10)
  assert_error(function() mx.nd.moments(x) end, 'axes is required')
end)

test('ravel_multi_index and unravel_index: MXNet examples, bad positions', function()
  local t = mx.nd.array({{3, 6, 6}, {4, 5, 1}})
  assert_eq(mx.nd.ravel_multi_index(t, {shape = {7, 6}}):totable(), {22, 41, 37})
  assert_eq(mx.nd.ravel_multi_index(t, {shape = {-1, 6}}):totable(), {22, 41, 37})
  assert_eq(mx.nd.unravel_index(mx.nd.array({22, 41, 37}), {shape = {7, 6}}):totable(),
            {{3, 6, 6}, {4, 5, 1}})
  assert_eq(mx.nd.unravel_index(mx.nd.array({22, 41, 37}, {dtype = 'int64'}),
                                {shape = {-1, 6}}):totable(), {{3, 6, 6}, {4, 5, 1}})
  -- A round trip over every position of a (3, 4, 5) array.
  local flat = mx.nd.arange(0, 60, {dtype = 'int32'})
  local tuples = mx.nd.unravel_index(flat, {shape = {3, 4, 5}})
  assert_eq(tuples.shape, {3, 60})
  assert_eq(mx.nd.ravel_multi_index(tuples, {shape = {3, 4, 5}}):totable(), flat:totable())
  assert_error(function()
    mx.nd.ravel_multi_index(mx.nd.array({{7}, {0}}), {shape = {7, 6}}):wait_to_read()
  end, '_ravel_multi_index: position 0 is 7, not a whole number in %[0, 7%)')
  assert_error(function()
    mx.nd.unravel_index(mx.nd.array({42}), {shape = {7, 6}}):wait_to_read()
  end, 'flat position 0 is 42')
  assert_error(function() mx.nd.ravel_multi_index(mx.nd.ones({3, 2}), {shape = {7, 6}}) end,
               'it must be %(2, K%)')
end)

test('khatri_rao: MXNet example, one matrix, mismatched columns', function()
  local A = mx.nd.array({{1, -1}, {2, -3}})
  local B = mx.nd.array({{1, 4}, {2, 5}, {3, 6}})
  assert_eq(mx.nd.khatri_rao({A, B}):totable(),
            {{1, -4}, {2, -5}, {3, -6}, {2, -12}, {4, -15}, {6, -18}})
  assert_eq(mx.nd.khatri_rao({A}):totable(), A:totable())
  local C = mx.nd.array({{2, 1}})
  assert_eq(mx.nd.khatri_rao({A, C, B}):totable(),
            {{2, -4}, {4, -5}, {6, -6}, {4, -12}, {8, -15}, {12, -18}})
  assert_error(function() mx.nd.khatri_rao({A, mx.nd.ones({2, 3})}) end, 'same')
end)

test('index_copy: MXNet example, gradients, bad rows', function()
  local x = mx.nd.zeros({5, 3})
  local t = mx.nd.array({{1, 2, 3}, {4, 5, 6}, {7, 8, 9}})
  local index = mx.nd.array({0, 4, 2}, {dtype = 'int64'})
  assert_eq(mx.nd.contrib.index_copy(x, index, t):totable(),
            {{1, 2, 3}, {0, 0, 0}, {7, 8, 9}, {0, 0, 0}, {4, 5, 6}})
  x:attach_grad()
  t:attach_grad()
  local y = mx.autograd.record(function() return mx.nd.contrib.index_copy(x, index, t) end)
  y:backward(mx.nd.ones({5, 3}))
  assert_eq(x.grad:totable(), {{0, 0, 0}, {1, 1, 1}, {0, 0, 0}, {1, 1, 1}, {0, 0, 0}})
  assert_eq(t.grad:totable(), {{1, 1, 1}, {1, 1, 1}, {1, 1, 1}})
  assert_error(function()
    mx.nd.contrib.index_copy(x, mx.nd.array({0, 5, 1}), t):wait_to_read()
  end, 'index_vector%[1%] = 5 is not a row of old_tensor')
  assert_error(function() mx.nd.contrib.index_copy(x, mx.nd.array({0, 1}), t) end,
               'one row of old_tensor')
  -- A repeated index takes the last of its rows; in place (out = x) too.
  local rep = mx.nd.array({3, 1, 3}, {dtype = 'int64'})
  assert_eq(mx.nd.contrib.index_copy(mx.nd.zeros({5, 3}), rep, t):totable(),
            {{0, 0, 0}, {4, 5, 6}, {0, 0, 0}, {7, 8, 9}, {0, 0, 0}})
  local z = mx.nd.ones({5, 3})
  mx.nd.contrib.index_copy(z, rep, t, {out = z})
  assert_eq(z:totable(), {{1, 1, 1}, {4, 5, 6}, {1, 1, 1}, {7, 8, 9}, {1, 1, 1}})
end)

test('scatter_nd: MXNet examples, the inverse of gather_nd', function()
  local data = mx.nd.array({2, 3, 0})
  local idx = mx.nd.array({{1, 1, 0}, {0, 1, 0}})
  assert_eq(mx.nd.scatter_nd(data, idx, {shape = {2, 2}}):totable(), {{0, 0}, {2, 3}})
  local d = mx.nd.array({{{1, 2}, {3, 4}}, {{5, 6}, {7, 8}}})
  local out = mx.nd.scatter_nd(d, mx.nd.array({{0, 1}, {1, 1}}), {shape = {2, 2, 2, 2}})
  -- out[0, 1] = data[0], out[1, 1] = data[1], zeros elsewhere.
  assert_eq(out:totable(), {{{{0, 0}, {0, 0}}, {{1, 2}, {3, 4}}},
                            {{{0, 0}, {0, 0}}, {{5, 6}, {7, 8}}}})
  -- gather_nd of a scatter_nd at distinct positions gives the data back.
  local pos = mx.nd.array({{0, 2, 1}, {3, 0, 1}})
  local vals = mx.nd.array({1.5, -2, 7})
  assert_eq(mx.nd.gather_nd(mx.nd.scatter_nd(vals, pos, {shape = {3, 4}}), pos):totable(),
            vals:totable())
  assert_error(function() mx.nd.scatter_nd(mx.nd.ones({2}), idx, {shape = {2, 2}}) end, 'data')
  assert_error(function()
    mx.nd.scatter_nd(data, mx.nd.array({{1, 2, 0}, {0, 1, 0}}), {shape = {2, 2}}):wait_to_read()
  end, 'scatter_nd: index 2 is out of range for axis 0')
end)

test('contrib.boolean_mask: MXNet example, gradients, bad input', function()
  local data = mx.nd.array({{1, 2, 3}, {4, 5, 6}, {7, 8, 9}})
  local index = mx.nd.array({0, 1, 0})
  assert_eq(mx.nd.contrib.boolean_mask(data, index):totable(), {{4, 5, 6}})
  assert_eq(mx.nd.contrib.boolean_mask(data, mx.nd.array({1, 0, 1})):totable(),
            {{1, 2, 3}, {7, 8, 9}})
  data:attach_grad()
  mx.autograd.record(function() return mx.nd.contrib.boolean_mask(data, index) end):backward()
  assert_eq(data.grad:totable(), {{0, 0, 0}, {1, 1, 1}, {0, 0, 0}})
  assert_error(function() mx.nd.contrib.boolean_mask(data, mx.nd.array({1, 0})) end,
               'one flag per row')
  assert_error(function() mx.nd.contrib.boolean_mask(data, mx.nd.zeros({3})) end, 'keeps no row')
  assert_error(function() mx.nd.contrib.boolean_mask(data, index, {axis = 2}) end, 'axis 2')
  assert_error(function() mx.sym.contrib.boolean_mask(mx.sym.Variable('d'), mx.sym.Variable('i')) end,
               'use mx.nd.contrib.boolean_mask')
end)
