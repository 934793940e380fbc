-- Executors from Lua: simple_bind and bind, forward with inputs by name,
-- backward, grad_req per argument, reshape, copy_params_from, debug_str and
-- the memory plan of a 10-layer network.

local V = mx.sym.Variable
local close = mx.test_utils.assert_almost_equal

test('simple_bind, forward by name, backward', function()
  local s = mx.sym.dot(V('x'), V('w'), {name = 'fc'})
  local exe = s:simple_bind{x = {2, 3}, w = {3, 2}}
  exe:forward{x = {{1, 2, 3}, {4, 5, 6}}, w = mx.nd.array({{1, 0}, {0, 1}, {1, 1}})}
  close(exe.outputs[1], {{4, 5}, {10, 11}})
  close(exe.output_dict.fc_output, {{4, 5}, {10, 11}})
  exe:forward{is_train = true}
  exe:backward(mx.nd.ones({2, 2}))
  close(exe.grad_dict.x, {{1, 1, 2}, {1, 1, 2}})
  close(exe.grad_dict.w, {{5, 5}, {7, 7}, {9, 9}})
  assert_error(function() exe:forward{nope = {1}} end, "'nope' is not an argument")
  assert_error(function() exe:forward{x = {1, 2}} end,
    "argument 'x' has shape %(2,3%) in this executor, got %(2%)")
  assert_error(function() exe:forward{x = mx.nd.ones({3, 2})} end, "argument 'x'")
  assert_error(function() exe:forward{w = {{1}, {2, 3}}} end, "argument 'w': array: ragged")
  assert(exe:debug_str():find('fc %(dot%)'))
end)

test('bind with arrays, grad_req add and null', function()
  local s = V('a') * V('b')
  local a, b = mx.nd.array({1, 2}), mx.nd.array({3, 4})
  local ga, gb = mx.nd.array({10, 10}), mx.nd.array({7, 7})
  local exe = s:bind{args = {a = a, b = b}, args_grad = {a = ga, b = gb},
    grad_req = {a = 'add', b = 'null'}}
  for _ = 1, 2 do
    exe:forward{is_train = true}
    exe:backward(mx.nd.ones({2}))
  end
  close(ga, {16, 18})
  close(gb, {7, 7})
  assert_error(function() s:bind{args = {a = a}} end, 'bind')
end)

test('reshape shares unchanged arguments, copy_params_from', function()
  local s = mx.sym.broadcast_add(mx.sym.dot(V('x'), V('w')), V('b'))
  local exe = s:simple_bind{x = {4, 3}, w = {3, 2}, b = {1, 2}}
  exe:copy_params_from({w = mx.nd.ones({3, 2}), b = mx.nd.array({{1, 2}})})
  assert_error(function() exe:copy_params_from({zz = mx.nd.ones({1})}) end, 'zz')
  exe:copy_params_from({zz = mx.nd.ones({1})}, nil, true)
  local small = exe:reshape{x = {2, 3}}
  assert_eq(small.arg_dict.x.shape, {2, 3})
  small:forward{x = {{1, 1, 1}, {2, 2, 2}}}
  close(small.outputs[1], {{4, 5}, {7, 8}})
end)

test('memory plan of a 10-layer network with gradients', function()
  local net = V('data')
  local shapes = {data = {64, 128}, grad_req = {}}
  for i = 1, 10 do
    net = mx.sym.relu(mx.sym.broadcast_add(mx.sym.dot(net, V('w' .. i)), V('b' .. i)))
    shapes['w' .. i], shapes['b' .. i] = {128, 128}, {1, 128}
    shapes.grad_req['w' .. i], shapes.grad_req['b' .. i] = 'write', 'write'
  end
  local exe = mx.sym.log_softmax(net):simple_bind(shapes)
  local planned, unshared = exe:memory_bytes()
  print(('  10-layer plan: %d bytes planned, %d bytes without sharing (%.1f%%)'):format(
    planned, unshared, 100 * planned / unshared))
  assert(planned <= 0.6 * unshared)
end)
