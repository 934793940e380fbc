-- SequenceMask, SequenceLast and SequenceReverse on MXNet's documented
-- examples, batch-first layouts, and bad lengths. Their gradients are in
-- gradient_test.lua.

local x = mx.nd.array({{{1, 2, 3}, {4, 5, 6}}, {{7, 8, 9}, {10, 11, 12}},
                       {{13, 14, 15}, {16, 17, 18}}})  -- (time 3, batch 2, 3)

test('SequenceMask: MXNet examples', function()
  assert_eq(mx.nd.SequenceMask(x):totable(), x:totable())
  assert_eq(mx.nd.SequenceMask({x, mx.nd.array({1, 1})}, {use_sequence_length = true}):totable(),
            {{{1, 2, 3}, {4, 5, 6}}, {{0, 0, 0}, {0, 0, 0}}, {{0, 0, 0}, {0, 0, 0}}})
  assert_eq(mx.nd.SequenceMask({x, mx.nd.array({2, 3})},
                               {use_sequence_length = true, value = 1}):totable(),
            {{{1, 2, 3}, {4, 5, 6}}, {{7, 8, 9}, {10, 11, 12}}, {{1, 1, 1}, {16, 17, 18}}})
  -- Batch first (Lua axis 2 is the time axis); integer lengths.
  local b = mx.nd.array({{1, 2, 3}, {4, 5, 6}})  -- (batch 2, time 3)
  assert_eq(mx.nd.SequenceMask({b, mx.nd.array({1, 2}, {dtype = 'int32'})},
                               {use_sequence_length = true, axis = 2, value = -1}):totable(),
            {{1, -1, -1}, {4, 5, -1}})
end)

test('SequenceLast: each row at its length', function()
  assert_eq(mx.nd.SequenceLast(x):totable(), {{13, 14, 15}, {16, 17, 18}})
  assert_eq(mx.nd.SequenceLast({x, mx.nd.array({1, 3})}, {use_sequence_length = true}):totable(),
            {{1, 2, 3}, {16, 17, 18}})
  local b = mx.nd.array({{1, 2, 3}, {4, 5, 6}})
  assert_eq(mx.nd.SequenceLast({b, mx.nd.array({2, 1})}, {use_sequence_length = true, axis = 2})
                :totable(), {2, 4})
end)

test('SequenceReverse: the first len steps reversed, the rest in place', function()
  assert_eq(mx.nd.SequenceReverse(x):totable(),
            {{{13, 14, 15}, {16, 17, 18}}, {{7, 8, 9}, {10, 11, 12}}, {{1, 2, 3}, {4, 5, 6}}})
  assert_eq(mx.nd.SequenceReverse({x, mx.nd.array({2, 3})}, {use_sequence_length = true})
                :totable(),
            {{{7, 8, 9}, {16, 17, 18}}, {{1, 2, 3}, {10, 11, 12}}, {{13, 14, 15}, {4, 5, 6}}})
end)

test('sequence ops: shapes in symbols, and bad input named', function()
  local s = mx.sym.SequenceLast({mx.sym.Variable('data'), mx.sym.Variable('len')},
                                {use_sequence_length = true})
  local args, outs = s:infer_shape({data = {5, 4, 3}})
  assert_eq(args, {{5, 4, 3}, {4}})
  assert_eq(outs, {{4, 3}})
  assert_error(function()
    mx.nd.SequenceLast({x, mx.nd.array({0, 3})}, {use_sequence_length = true}):wait_to_read()
  end, 'sequence_length%[0%] = 0 is not a whole number in %[1, 3%]')
  assert_error(function()
    mx.nd.SequenceMask({x, mx.nd.array({1, 4})}, {use_sequence_length = true}):wait_to_read()
  end, 'sequence_length%[1%] = 4')
  assert_error(function()
    mx.nd.SequenceMask({x, mx.nd.array({1, 2, 3})}, {use_sequence_length = true})
  end, 'sequence_length has shape')
  assert_error(function() mx.nd.SequenceReverse(x, {axis = 2}) end, 'only axis 0')
  assert_error(function() mx.nd.SequenceMask(mx.nd.ones({3})) end, 'time and a batch axis')
end)
