-- Sizes that overflow or make no sense: every path that makes an array
-- checks the shape before anything is allocated, and the error names the
-- function, the shape and what it would need (engine/base/array_bytes.h).

local huge = {{2^31, 2^31}, {2^32, 2^32}, {2^62, 4}, {2^16, 2^16, 2^16, 2^16}, {2^40, 2^40, 2^40}}

test('creation functions refuse shapes whose size overflows', function()
  assert_error(function() mx.nd.zeros({2^31, 2^31}) end,
    'shape %(2147483648,2147483648%) float32 needs 16 EiB')
  assert_error(function() mx.nd.zeros({2^32, 2^32}) end, 'needs 64 EiB')
  for _, shape in ipairs(huge) do
    assert_error(function() mx.nd.zeros(shape) end, 'needs')
    assert_error(function() mx.nd.ones(shape) end, 'needs')
    assert_error(function() mx.nd.full(shape, 3) end, 'needs')
    assert_error(function() mx.nd.empty(shape) end, 'needs')
    assert_error(function() mx.nd.zeros(shape, {dtype = 'float64'}) end, 'float64 needs')
    assert_error(function() mx.nd.random.uniform(0, 1, shape) end, 'needs')
    assert_error(function() mx.nd.random.normal(0, 1, shape) end, 'needs')
    assert_error(function() mx.nd.random.randint(0, 5, shape) end, 'needs')
  end
  assert_error(function() mx.nd.eye(2^32) end, 'needs 64 EiB')
  assert_error(function() mx.nd.eye(2^40, 2^40) end, 'needs')
  -- Still usable afterwards.
  assert_eq(mx.nd.zeros({2, 3}):totable(), {{0, 0, 0}, {0, 0, 0}})
end)

test('a size must be a whole number in [0, 2^63)', function()
  assert_error(function() mx.nd.zeros({2, -3}) end, 'shape item 2 is %-3, sizes must be >= 0')
  assert_error(function() mx.nd.zeros({2.5}) end, 'shape item 1 is 2.5, not a whole number')
  assert_error(function() mx.nd.zeros({0 / 0}) end, 'shape item 1 is nan')
  assert_error(function() mx.nd.zeros({math.huge}) end, 'shape item 1 is inf')
  assert_error(function() mx.nd.zeros({2^64}) end, 'more than 64 bits hold')
  assert_error(function() mx.nd.zeros({2^63}) end, 'more than 64 bits hold')
  assert_error(function() mx.nd.zeros(-1) end, 'sizes must be >= 0')
  assert_error(function() mx.nd.zeros({1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}) end, 'at most 10')
end)

test('ops whose output sizes multiply: tile, repeat, broadcast_to, one_hot, reshape', function()
  local a = mx.nd.ones({4, 4})
  -- 65536 elements times 2^31 - 1: more than 128 TiB (a smaller product
  -- would be a real, if absurd, allocation).
  local b = mx.nd.ones({256, 256})
  assert_error(function() mx.nd.tile(a, {reps = {2^32, 2^32}}) end, 'needs')
  assert_error(function() mx.nd['repeat'](b, {repeats = 2^31 - 1}) end, 'needs 512 TiB')
  assert_error(function() mx.nd['repeat'](b, {repeats = 2^31 - 1, axis = 1}) end, 'needs 512 TiB')
  assert_error(function() mx.nd.broadcast_to(mx.nd.ones({1, 1}), {shape = {2^32, 2^32}}) end,
    'needs')
  assert_error(function() mx.nd.one_hot(b, {depth = 2^31 - 1}) end, 'needs 512 TiB')
  assert_error(function() a:reshape({2^32, 2^32, -1}) end, '64 bits')
  assert_error(function() a:reshape({2.5, -1}) end, 'code 1 is 2.5, not a whole number')
  assert_error(function() mx.nd.UpSampling(mx.nd.ones({1, 1, 2, 2}),
    {scale = 2^31 - 1, sample_type = 'nearest', num_args = 1}) end, 'needs')
  assert_eq(mx.nd.tile(mx.nd.ones({1}), {reps = {3}}):totable(), {1, 1, 1})
end)

test('symbols: simple_bind and reshape refuse entries too large to exist', function()
  local x = mx.sym.Variable('x')
  assert_error(function() mx.sym.relu(x):simple_bind{x = {2^32, 2^32}} end, 'needs 64 EiB')
  local t = mx.sym.tile(x, {reps = {2^31, 2^31}, name = 't'})
  assert_error(function() t:simple_bind{x = {2, 2}} end, "node 't' output 0")
  local exe = mx.sym.relu(x):simple_bind{x = {2, 2}}
  assert_error(function() exe:reshape{x = {2^32, 2^32}} end, 'needs')
  -- infer_shape only reports; a concat whose sizes cannot add is an error.
  local c = mx.sym.concat(mx.sym.Variable('a'), mx.sym.Variable('b'), {dim = 1})
  assert_error(function() c:infer_shape{a = {2^62, 1}, b = {2^62, 1}} end, '64 bits')
end)

test("a custom op's infer_shape cannot make an array too large", function()
  local Big = mx.operator.CustomOp:extend()
  function Big:forward() end
  mx.operator.register('t_huge_shape', {
    infer_shape = function(_, in_shape) return in_shape, {{2^32, 2^32}}, {} end,
    create_operator = function() return setmetatable({}, Big) end})
  assert_error(function() mx.nd.Custom(mx.nd.ones({2}), {op_type = 't_huge_shape'}) end, 'needs')
  mx.operator.register('t_bad_size', {
    infer_shape = function(_, in_shape) return in_shape, {{2.5}}, {} end,
    create_operator = function() return setmetatable({}, Big) end})
  assert_error(function() mx.nd.Custom(mx.nd.ones({2}), {op_type = 't_bad_size'}) end,
    'not a whole number')
end)

test('mx.nd.array of a table that contains itself is an error, not a stack overflow', function()
  local t = {}
  t[1] = t
  assert_error(function() mx.nd.array(t) end, 'levels of nesting')
end)
