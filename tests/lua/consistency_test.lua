-- mx.test_utils.check_consistency: a symbol bound on several contexts and
-- dtypes gives the same outputs and gradients; on cpu(0) against cpu(1)
-- here, against gpu(0) where there is one.

local function mlp()
  local net = mx.sym.FullyConnected{data = mx.sym.Variable('data'), num_hidden = 5, name = 'fc'}
  net = mx.sym.Activation{data = net, act_type = 'tanh', name = 'act'}
  return mx.sym.SoftmaxOutput{data = net, name = 'sm'}
end

test('check_consistency: float32 against float64 on two contexts', function()
  local exes = mx.test_utils.check_consistency(mlp(), {
    {ctx = mx.cpu(0), data = {4, 3}, type_dict = {data = 'float32'}},
    {ctx = mx.cpu(1), data = {4, 3}, type_dict = {data = 'float64'}},
  })
  assert_eq(#exes, 2)
  assert_eq(exes[1].outputs[1].dtype, 'float32')
  assert_eq(exes[2].outputs[1].dtype, 'float64')
  -- The same arguments went to both.
  mx.test_utils.assert_almost_equal(exes[1].arg_dict.fc_weight, exes[2].arg_dict.fc_weight)
end)

test('check_consistency: a difference is an error naming it', function()
  -- Dropout draws its mask from each context's own stream.
  local net = mx.sym.Dropout{data = mx.sym.Variable('data'), p = 0.5}
  assert_error(function()
    mx.test_utils.check_consistency(net, {{ctx = mx.cpu(0), data = {64}},
      {ctx = mx.cpu(1), data = {64}}})
  end, 'output')
  assert_error(function()
    mx.test_utils.check_consistency(net, {{ctx = mx.cpu(0), data = {4}}})
  end, 'at least two')
  assert_error(function()
    mx.test_utils.check_consistency(net, {{ctx = mx.cpu(0), data = {4}}, {ctx = mx.cpu(0)}})
  end, 'entry 2')
end)

test('check_consistency: grad_req null compares the inference outputs', function()
  local exes = mx.test_utils.check_consistency(mlp(), {
    {ctx = mx.cpu(0), data = {2, 3}}, {ctx = mx.cpu(1), data = {2, 3}}}, {grad_req = 'null'})
  assert_eq(exes[1].outputs[1].shape, {2, 5})
end)
