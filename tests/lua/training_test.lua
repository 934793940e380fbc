-- A two-layer network (dot, broadcast add, relu, log_softmax) trained with
-- plain SGD written in Lua, through the executor and through autograd: the
-- loss goes down. Data: 64 points in 8 dimensions, labelled by a random
-- linear teacher with 3 classes.

local N, D, H, C = 64, 8, 16, 3

local seed = 4242
local function rand()
  seed = (seed * 1103515245 + 12345) % 2147483648
  return seed / 2147483648 * 2 - 1
end
local function rand_table(n, scale)
  local t = {}
  for i = 1, n do t[i] = rand() * (scale or 1) end
  return t
end

local function dataset()
  local x = rand_table(N * D)
  local teacher = rand_table(D * C)
  local labels = {}
  for i = 0, N - 1 do
    local best, arg = -math.huge, 0
    for c = 0, C - 1 do
      local s = 0
      for d = 0, D - 1 do s = s + x[i * D + d + 1] * teacher[d * C + c + 1] end
      if s > best then best, arg = s, c end
    end
    labels[i + 1] = arg
  end
  return mx.nd.array(x):reshape({N, D}), mx.nd.array(labels)
end

local function init_params()
  return {
    w1 = mx.nd.array(rand_table(D * H, 0.5)):reshape({D, H}),
    b1 = mx.nd.zeros({1, H}),
    w2 = mx.nd.array(rand_table(H * C, 0.5)):reshape({H, C}),
    b2 = mx.nd.zeros({1, C}),
  }
end

local lr, steps = 0.5, 30

test('two-layer network trains through the executor', function()
  local x, label = dataset()
  local data, y = mx.sym.Variable('data'), mx.sym.Variable('label')
  local h = mx.sym.relu(mx.sym.broadcast_add(mx.sym.dot(data, mx.sym.Variable('w1')),
    mx.sym.Variable('b1')))
  local out = mx.sym.log_softmax(mx.sym.broadcast_add(mx.sym.dot(h, mx.sym.Variable('w2')),
    mx.sym.Variable('b2')), {axis = -1})
  local loss = mx.sym.mean(mx.sym.pick(out, y, {axis = -1})) * -1
  -- dot infers no weight shapes (FullyConnected will): give them.
  local exe = loss:simple_bind{data = {N, D}, label = {N}, w1 = {D, H}, b1 = {1, H},
    w2 = {H, C}, b2 = {1, C}, grad_req = {w1 = 'write', b1 = 'write', w2 = 'write', b2 = 'write'}}
  assert_eq(exe.grad_dict.data, nil)
  exe:copy_params_from(init_params())
  local first, last
  for step = 1, steps do
    exe:forward{is_train = true, data = x, label = label}
    exe:backward()
    local l = exe.outputs[1]:asscalar()
    first = first or l
    last = l
    for name, g in pairs(exe.grad_dict) do exe.arg_dict[name]:sub_(g * lr) end
  end
  assert(last < first * 0.6, ('loss %.4f -> %.4f'):format(first, last))
end)

test('two-layer network trains through autograd', function()
  local x, label = dataset()
  local p = init_params()
  for _, v in pairs(p) do v:attach_grad() end
  local first, last
  for step = 1, steps do
    local l = mx.autograd.record(function()
      local h = mx.nd.relu(mx.nd.broadcast_add(mx.nd.dot(x, p.w1), p.b1))
      local out = mx.nd.log_softmax(mx.nd.broadcast_add(mx.nd.dot(h, p.w2), p.b2), {axis = -1})
      return mx.nd.mean(mx.nd.pick(out, label, {axis = -1})) * -1
    end)
    l:backward()
    local v = l:asscalar()
    first = first or v
    last = v
    for _, w in pairs(p) do w:sub_(w.grad * lr) end
  end
  assert(last < first * 0.6, ('loss %.4f -> %.4f'):format(first, last))
end)

test('executor and autograd agree on one step', function()
  local x, label = dataset()
  local p = init_params()
  local data, y = mx.sym.Variable('data'), mx.sym.Variable('label')
  local out = mx.sym.log_softmax(mx.sym.broadcast_add(mx.sym.dot(data, mx.sym.Variable('w1')),
    mx.sym.Variable('b1')))
  local exe = out:simple_bind{data = {N, D}, w1 = {D, H}, b1 = {1, H},
    grad_req = {w1 = 'write', b1 = 'write'}}
  exe:copy_params_from({w1 = p.w1, b1 = p.b1})
  exe:forward{is_train = true, data = x}
  local head = mx.nd.ones({N, H})
  exe:backward(head)
  p.w1:attach_grad()
  p.b1:attach_grad()
  local o = mx.autograd.record(function()
    return mx.nd.log_softmax(mx.nd.broadcast_add(mx.nd.dot(x, p.w1), p.b1))
  end)
  o:backward(head)
  mx.test_utils.assert_almost_equal(exe.outputs[1], o)
  mx.test_utils.assert_almost_equal(exe.grad_dict.w1, p.w1.grad)
  mx.test_utils.assert_almost_equal(exe.grad_dict.b1, p.b1.grad)
end)
