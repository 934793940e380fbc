-- Pad: the three modes' values (MXNet's), their gradients against central
-- differences (each input element gets every output gradient whose source
-- it is), and bad padding.

local function pad(t, mode, w, value)
  return mx.nd.Pad(mx.nd.array(t, {dtype = 'float64'}),
    {mode = mode, pad_width = w, constant_value = value}):totable()
end

test('constant, edge and reflect padding', function()
  assert_eq(pad({1, 2, 3}, 'constant', {2, 1}, 9), {9, 9, 1, 2, 3, 9})
  assert_eq(pad({1, 2, 3}, 'edge', {2, 1}), {1, 1, 1, 2, 3, 3})
  assert_eq(pad({1, 2, 3}, 'reflect', {2, 1}), {3, 2, 1, 2, 3, 2})
  assert_eq(pad({{1, 2}, {3, 4}}, 'edge', {1, 0, 0, 2}), {{1, 2, 2, 2}, {1, 2, 2, 2}, {3, 4, 4, 4}})
  assert_eq(pad({{1, 2, 3}, {4, 5, 6}}, 'reflect', {1, 1, 1, 0}),
    {{5, 4, 5, 6}, {2, 1, 2, 3}, {5, 4, 5, 6}, {2, 1, 2, 3}})
end)

test('the gradient of every mode against central differences', function()
  for _, mode in ipairs({'constant', 'edge', 'reflect'}) do
    local net = mx.sym.Pad{data = mx.sym.Variable('data'), mode = mode,
      pad_width = {0, 0, 1, 0, 2, 1, 1, 2}}
    mx.test_utils.check_numeric_gradient(net, {mx.nd.random.uniform(-1, 1, {1, 2, 4, 3},
      {dtype = 'float64'})})
  end
  -- edge: a corner's gradient is the sum over the padding beside it.
  local x = mx.nd.array({1, 2, 3}, {dtype = 'float64'})
  x:attach_grad()
  mx.autograd.record(function()
    local y = mx.nd.Pad(x, {mode = 'edge', pad_width = {2, 3}})
    y:backward(mx.nd.array({1, 2, 3, 4, 5, 6, 7, 8}, {dtype = 'float64'}))
  end)
  assert_eq(x.grad:totable(), {1 + 2 + 3, 4, 5 + 6 + 7 + 8})
end)

test('bad padding is an error naming it', function()
  local x = mx.nd.ones({2, 3})
  assert_error(function() mx.nd.Pad(x, {pad_width = {1, 1}}) end, 'pad_width has 2 values')
  assert_error(function() mx.nd.Pad(x, {pad_width = {0, 0, -1, 0}}) end, 'must not be negative')
  assert_error(function() mx.nd.Pad(x, {mode = 'reflect', pad_width = {0, 0, 3, 0}}) end,
    'reflect padding of 3')
end)
