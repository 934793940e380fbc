-- Values where MXNet's rule differs from C's or NumPy's, taken from MXNet's
-- kernels (src/operator/mshadow_op.h): rint's ties, NaN through relu and
-- its gradient, mod by zero.

local nan = 0 / 0
local function is_nan(x) return x ~= x end

test('rint takes the floor on a tie, the nearer integer otherwise', function()
  local x = mx.nd.array({1.5, -1.5, -0.5, 0.5, 2.5, -2.5, 2.4, -2.6, 3})
  assert_eq(mx.nd.rint(x):totable(), {1, -2, -1, 0, 2, -3, 2, -3, 3})
  assert_eq(mx.nd.rint(x:astype('float64')):totable(), {1, -2, -1, 0, 2, -3, 2, -3, 3})
  assert_eq(mx.nd.rint(mx.nd.array({-3, 4}, {dtype = 'int32'})):totable(), {-3, 4})
  local inf = mx.nd.rint(mx.nd.array({1 / 0, -1 / 0, nan})):totable()
  assert_eq(inf[1], 1 / 0)
  assert_eq(inf[2], -1 / 0)
  assert(is_nan(inf[3]))
end)

test('relu and Activation(relu) pass NaN through, and so do their gradients', function()
  for _, f in ipairs({
    function(x) return mx.nd.relu(x) end,
    function(x) return mx.nd.Activation(x, {act_type = 'relu'}) end,
  }) do
    local x = mx.nd.array({nan, -1, 2})
    x:attach_grad()
    local y = mx.autograd.record(function() return f(x) end)
    local v = y:totable()
    assert(is_nan(v[1]), 'relu(NaN) is NaN')
    assert_eq({v[2], v[3]}, {0, 2})
    y:backward()
    local g = x.grad:totable()
    assert(is_nan(g[1]), 'the gradient at NaN is NaN')
    assert_eq({g[2], g[3]}, {0, 1})
  end
end)

test('mod by zero is 0 for floats and integers', function()
  local a = mx.nd.array({7, -7, 2.5, 0})
  assert_eq(mx.nd.broadcast_mod(a, mx.nd.zeros({1})):totable(), {0, 0, 0, 0})
  assert_eq((a % 0):totable(), {0, 0, 0, 0})
  assert_eq(mx.nd.broadcast_mod(a:astype('float64'), mx.nd.zeros({4}, {dtype = 'float64'})):totable(),
            {0, 0, 0, 0})
  local i = mx.nd.array({7, -7}, {dtype = 'int32'})
  assert_eq((i % 0):totable(), {0, 0})
  -- and the usual sign rule elsewhere
  assert_eq(mx.nd.broadcast_mod(mx.nd.array({-7, 7}), mx.nd.array({3, -3})):totable(), {2, -2})
  assert_eq((mx.nd.array({-7, 7}) % 3):totable(), {2, 1})
end)
