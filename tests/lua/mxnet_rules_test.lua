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

test("MakeLoss 'valid' gives every element grad_scale / max(1, count)", function()
  -- src/operator/make_loss-inl.h: the count of elements above valid_thresh
  -- divides grad_scale, and the quotient goes to every element.
  local x = mx.nd.array({0.5, -1, 2, 0, 3, -4})
  local function grad(params)
    x:attach_grad()
    local y = mx.autograd.record(function() return mx.nd.MakeLoss(x, params) end)
    y:backward()
    return x.grad:totable()
  end
  assert_eq(grad({grad_scale = 3, normalization = 'valid'}), {1, 1, 1, 1, 1, 1})
  assert_eq(grad({normalization = 'valid', valid_thresh = 1}), {0.5, 0.5, 0.5, 0.5, 0.5, 0.5})
  assert_eq(grad({grad_scale = 2, normalization = 'valid', valid_thresh = 9}), {2, 2, 2, 2, 2, 2})
end)

test('argmax and argmin return indices in the input dtype', function()
  -- src/operator/tensor/broadcast_reduce_op_index.cc: ElemwiseType<1, 1>.
  for _, dtype in ipairs({'int32', 'int64', 'uint8', 'float64', 'float16'}) do
    local x = mx.nd.array({{1, 5, 3}, {4, 2, 6}}, {dtype = dtype})
    local am = mx.nd.argmax(x, {axis = 2})
    assert_eq(am.dtype, dtype)
    assert_eq(am:totable(), {1, 2})
    local an = mx.nd.argmin(x)
    assert_eq(an.dtype, dtype)
    assert_eq(an:totable(), {0})
  end
end)

test('shapes flow backwards through Convolution, Deconvolution and Pooling', function()
  -- MXNet's test_incomplete_infer_convolution: the batch from the output,
  -- the spatial sizes where the stride is 1 (src/operator/nn/convolution-inl.h).
  local a = mx.sym.Variable('a', {shape = {0, 10, 0, 0}})
  local b = mx.sym.Convolution{data = a, num_filter = 21, kernel = {3, 3}, dilate = {1, 1},
                               pad = {1, 1}, name = 'conv'}
  local c = mx.sym.Variable('c', {shape = {5, 21, 32, 32}})
  local args = (b + c):infer_shape()
  assert_eq(args, {{5, 10, 32, 32}, {21, 10, 3, 3}, {21}, {5, 21, 32, 32}})
  -- a dilated kernel without padding: in = out + dilate * (kernel - 1)
  local d = mx.sym.Convolution{data = mx.sym.Variable('x'), num_filter = 2, kernel = {3, 3},
                               dilate = {2, 2}, name = 'd'}
  args = (d + mx.sym.Variable('y')):infer_shape{x = {0, 3, 0, 0}, y = {4, 2, 6, 7}}
  assert_eq(args[1], {4, 3, 10, 11})
  -- a stride other than 1 leaves the size unknown, as in MXNet
  local s = mx.sym.Convolution{data = mx.sym.Variable('x'), num_filter = 2, kernel = {3, 3},
                               stride = {2, 2}, name = 's'}
  assert_eq((s + mx.sym.Variable('y')):infer_shape{x = {0, 3, 0, 0}, y = {4, 2, 6, 7}}, nil)
  local partial = (s + mx.sym.Variable('y')):infer_shape_partial{x = {0, 3, 0, 0}, y = {4, 2, 6, 7}}
  assert_eq(partial[1], {4, 3, 0, 0})
  -- Pooling: stride 1 and padding; the channels come from the output too
  local p = mx.sym.Pooling{data = mx.sym.Variable('x'), kernel = {3, 3}, pad = {1, 1},
                           pool_type = 'max', name = 'p'}
  args = (p + mx.sym.Variable('y')):infer_shape{y = {2, 3, 9, 8}}
  assert_eq(args[1], {2, 3, 9, 8})
  p = mx.sym.Pooling{data = mx.sym.Variable('x'), kernel = {2, 2}, pool_type = 'avg', name = 'q'}
  args = (p + mx.sym.Variable('y')):infer_shape{y = {2, 3, 4, 5}}
  assert_eq(args[1], {2, 3, 5, 6})
  -- Deconvolution: out = stride * (in - 1) + kernel - 2 pad + adj; the
  -- channels from the weight
  local dc = mx.sym.Deconvolution{data = mx.sym.Variable('x'), num_filter = 4, kernel = {4, 4},
                                  stride = {2, 2}, pad = {1, 1}, no_bias = true, name = 'dc'}
  args = (dc + mx.sym.Variable('y')):infer_shape{dc_weight = {6, 4, 4, 4}, y = {3, 4, 16, 12}}
  assert_eq(args[1], {3, 6, 8, 6})
  assert_error(function()
    (dc + mx.sym.Variable('y')):infer_shape{dc_weight = {6, 4, 4, 4}, y = {3, 4, 15, 12}}
  end, 'no input gives the output of shape %(3,4,15,12%)')
end)

test('a shape given to infer_shape or bind wins over a __shape__ hint', function()
  -- nnvm's InferShape pass: a variable's hint fills only what is unknown.
  local x = mx.sym.Variable('x', {shape = {1, 5}})
  local fc = mx.sym.FullyConnected{data = x, num_hidden = 3, name = 'fc'}
  local args, outs = fc:infer_shape{x = {8, 5}}
  assert_eq(args[1], {8, 5})
  assert_eq(outs, {{8, 3}})
  args = fc:infer_shape()
  assert_eq(args[1], {1, 5})
  args = fc:infer_shape{x = {0, 5}}
  assert_eq(args[1], {1, 5})
  local exe = fc:simple_bind{ctx = mx.cpu(), x = {4, 5}}
  assert_eq(exe.arg_arrays[1].shape, {4, 5})
  local t = mx.sym.Variable('t', {dtype = 'float64'})
  local _, touts = (t * 2):infer_type{t = 'float32'}
  assert_eq(touts, {'float32'})
end)

test('assignment broadcasts the value, leading axes added (docs/shell.md)', function()
  local a = mx.nd.array({{1, 2, 3}, {4, 5, 6}})
  a[1] = 0
  a[{1, 2}] = mx.nd.array({7})
  assert_eq(a:totable(), {{7, 7, 7}, {7, 7, 7}})
  local b = mx.nd.zeros({2, 2, 3})
  b[1] = mx.nd.array({1, 2, 3})
  assert_eq(b:totable(), {{{1, 2, 3}, {1, 2, 3}}, {{0, 0, 0}, {0, 0, 0}}})
  assert_error(function() b[2] = mx.nd.array({1, 2}) end, 'broadcast_to')
end)

test('degrees, radians (MXNet docstrings), log_sigmoid and mish (their formulas), every float dtype', function()
  local pi = math.pi
  local function close(a, b, tol)
    mx.test_utils.assert_almost_equal(a, b, { rtol = tol or 1e-5, atol = tol or 1e-5 })
  end
  close(mx.nd.degrees(mx.nd.array({ 0, pi / 2, pi, 3 * pi / 2, 2 * pi })), mx.nd.array({ 0, 90, 180, 270, 360 }), 1e-4)
  close(mx.nd.radians(mx.nd.array({ 0, 90, 180, 270, 360 })), mx.nd.array({ 0, pi / 2, pi, 3 * pi / 2, 2 * pi }))
  local xs = { -30, -2, -0.5, 0, 0.5, 2, 30 }
  local ls, ms = {}, {}
  for i, x in ipairs(xs) do
    ls[i] = -math.log(1 + math.exp(-x))
    local sp = math.log(1 + math.exp(x))
    ms[i] = x * math.tanh(sp)
  end
  for _, dtype in ipairs({ 'float32', 'float64', 'float16' }) do
    local tol = dtype == 'float16' and 2e-2 or 1e-5
    local x = mx.nd.array(xs, { dtype = dtype })
    close(mx.nd.log_sigmoid(x):astype('float64'), mx.nd.array(ls, { dtype = 'float64' }), tol)
    close(mx.nd.mish(x):astype('float64'), mx.nd.array(ms, { dtype = 'float64' }), tol)
  end
  -- no overflow far out: log_sigmoid(-100) = -100, mish(100) = 100
  assert_eq(mx.nd.log_sigmoid(mx.nd.array({ -100 })):totable()[1], -100)
  assert_eq(mx.nd.mish(mx.nd.array({ 100 })):totable()[1], 100)
  assert_error(function() mx.nd.degrees(mx.nd.array({ 1 }, { dtype = 'int32' })) end, 'degrees')
end)

test('hard_sigmoid: max(0, min(1, alpha x + beta)); the gradient alpha inside the ramp only', function()
  assert_eq(mx.nd.hard_sigmoid(mx.nd.array({ -3, 0, 1, 3 })):totable()[3] - 0.7 < 1e-6, true)
  mx.test_utils.assert_almost_equal(mx.nd.hard_sigmoid(mx.nd.array({ -3, 0, 1, 3 })),
    mx.nd.array({ 0, 0.5, 0.7, 1 }))
  mx.test_utils.assert_almost_equal(mx.nd.hard_sigmoid(mx.nd.array({ -1, 1 }), { alpha = 1, beta = 0 }),
    mx.nd.array({ 0, 1 }))
  local x = mx.nd.array({ -3, 0, 1, 3 })
  x:attach_grad()
  local y
  mx.autograd.record(function() y = mx.nd.hard_sigmoid(x) end)
  y:backward()
  mx.test_utils.assert_almost_equal(x.grad, mx.nd.array({ 0, 0.2, 0.2, 0 }))
  assert_error(function() mx.nd.hard_sigmoid(mx.nd.array({ 1 }), { gamma = 1 }) end, 'gamma')
end)

test('erfinv: the inverse of erf; +-inf at +-1, NaN outside', function()
  -- reference values: SciPy's special.erfinv
  local x = mx.nd.array({ 0, 0.5, -0.9, 0.999, 1, -1, 1.5 }, { dtype = 'float64' })
  local y = mx.nd.erfinv(x):totable()
  assert_near(y[1], 0, 1e-15)
  assert_near(y[2], 0.4769362762044699, 1e-13)
  assert_near(y[3], -1.1630871536766743, 1e-13)
  assert_near(y[4], 2.3267537655135246, 1e-12)
  assert_eq(y[5], math.huge)
  assert_eq(y[6], -math.huge)
  assert_eq(y[7] ~= y[7], true)
  local f = mx.nd.erfinv(mx.nd.array({ 0.5, -0.9 })):totable()
  assert_near(f[1], 0.4769362762, 1e-6)
  assert_near(f[2], -1.1630871537, 1e-5)
  mx.test_utils.assert_almost_equal(mx.nd.erf(mx.nd.erfinv(mx.nd.array({ -0.7, 0.2, 0.95 }))),
    mx.nd.array({ -0.7, 0.2, 0.95 }), { rtol = 1e-5, atol = 1e-6 })
end)

test('broadcast_axis / broadcast_axes: axes of size 1 grow (MXNet docstring), 1-based axes in Lua', function()
  local x = mx.nd.array({ { { 1 }, { 2 } } })  -- (1, 2, 1)
  assert_eq(mx.nd.broadcast_axis(x, { axis = 3, size = 2 }):totable(), { { { 1, 1 }, { 2, 2 } } })
  assert_eq(mx.nd.broadcast_axes(x, { axis = { 1, 3 }, size = { 2, 2 } }):totable(),
    { { { 1, 1 }, { 2, 2 } }, { { 1, 1 }, { 2, 2 } } })
  assert_eq(mx.nd.broadcast_axis(x, { axis = -1, size = 3 }).shape, { 1, 2, 3 })
  assert_error(function() mx.nd.broadcast_axis(x, { axis = 2, size = 3 }) end,
    'only axes of size 1 are broadcast')
  assert_error(function() mx.nd.broadcast_axis(x, { axis = { 1, 3 }, size = { 2 } }) end,
    'must have the same length')
  -- a symbol takes Lua's axes too; its JSON keeps MXNet's 0-based ones
  local s = mx.sym.broadcast_axis { data = mx.sym.Variable('x'), axis = 3, size = 5 }
  local _, outs = s:infer_shape { x = { 1, 2, 1 } }
  assert_eq(outs[1], { 1, 2, 5 })
  assert_eq(s:tojson():find('"axis": "%(2,?%)"') ~= nil or s:tojson():find('"axis": "2"') ~= nil, true, s:tojson())
end)

test('shape_array and size_array: int64, on the array device; no gradient through them', function()
  local a = mx.nd.ones({ 2, 3, 4 })
  local s = mx.nd.shape_array(a)
  assert_eq(s.dtype, 'int64')
  assert_eq(s:totable(), { 2, 3, 4 })
  assert_eq(mx.nd.size_array(a):totable(), { 24 })
  local x = mx.sym.Variable('x')
  local _, outs, _ = mx.sym.shape_array { data = x }:infer_shape { x = { 5, 7 } }
  assert_eq(outs[1], { 2 })
  local _, touts = mx.sym.size_array { data = x }:infer_type { x = 'float64' }
  assert_eq(touts[1], 'int64')
  local v = mx.nd.ones({ 3 })
  v:attach_grad()
  local y
  mx.autograd.record(function()
    y = mx.nd.sum(mx.nd.shape_array(v)):astype('float32') * 0 + mx.nd.sum(v)
  end)
  y:backward()
  assert_eq(v.grad:totable(), { 1, 1, 1 })
end)

test('argmax_channel: argmax over the last axis (MXNet docstring), indices in the input dtype', function()
  assert_eq(mx.nd.argmax_channel(mx.nd.array({ { 0, 1, 2 }, { 3, 4, 5 } })):totable(), { 2, 2 })
  local x = mx.nd.array({ { { 1, 9 }, { 7, 2 } } }, { dtype = 'int32' })
  local y = mx.nd.argmax_channel(x)
  assert_eq(y.dtype, 'int32')
  assert_eq(y:totable(), { { 1, 0 } })
  assert_error(function() mx.nd.argmax_channel(x, { axis = 1 }) end, 'takes no parameters')
end)

test('diag: MXNet docstring values, NumPy diagonal on 3 axes, gradients by finite differences', function()
  assert_eq(mx.nd.diag(mx.nd.array({ 1, 2 })):totable(), { { 1, 0 }, { 0, 2 } })
  assert_eq(mx.nd.diag(mx.nd.array({ 1, 2 }), { k = -1 }):totable(), { { 0, 0, 0 }, { 1, 0, 0 }, { 0, 2, 0 } })
  local m = mx.nd.array({ { 1, 2, 3 }, { 4, 5, 6 } })
  assert_eq(mx.nd.diag(m):totable(), { 1, 5 })
  assert_eq(mx.nd.diag(m, { k = 1 }):totable(), { 2, 6 })
  assert_eq(mx.nd.diag(m, { k = -1 }):totable(), { 4 })
  -- numpy.diagonal(arange(24).reshape(2, 3, 4), 0, 1, 2) and (1, 2, 0) (0-based axes)
  local x = mx.nd.arange(0, 24):reshape({ 2, 3, 4 })
  assert_eq(mx.nd.diag(x, { axis1 = 2, axis2 = 3 }):totable(), { { 0, 5, 10 }, { 12, 17, 22 } })
  assert_eq(mx.nd.diag(x, { axis1 = 3, axis2 = 1, k = 1 }):totable(), { { 12 }, { 16 }, { 20 } })
  assert_error(function() mx.nd.diag(m, { k = 3 }) end, 'outside the 2x3 plane')
  assert_error(function() mx.nd.diag(x, { axis1 = 2, axis2 = 2 }) end, 'the same axis')
  local tu = mx.test_utils
  local v = mx.sym.Variable('v')
  tu.check_numeric_gradient(mx.sym.diag { data = v, k = -1 }, { mx.nd.array({ 0.5, -1, 2 }) })
  tu.check_numeric_gradient(mx.sym.diag { data = v, axis1 = 3, axis2 = 1, k = 1 },
    { mx.nd.random.uniform(-1, 1, { 2, 3, 4 }) })
end)

test('depth_to_space and space_to_depth: the MXNet docstring example, each the inverse of the other', function()
  local x = mx.nd.arange(0, 24):reshape({ 1, 4, 2, 3 })
  local y = mx.nd.depth_to_space(x, { block_size = 2 })
  assert_eq(y:totable(), { { { { 0, 6, 1, 7, 2, 8 }, { 12, 18, 13, 19, 14, 20 }, { 3, 9, 4, 10, 5, 11 },
    { 15, 21, 16, 22, 17, 23 } } } })
  assert_eq(mx.nd.space_to_depth(y, { block_size = 2 }):totable(), x:totable())
  local z = mx.nd.random.uniform(-1, 1, { 2, 3, 6, 4 })
  mx.test_utils.assert_almost_equal(mx.nd.depth_to_space(mx.nd.space_to_depth(z, { block_size = 2 }),
    { block_size = 2 }), z)
  assert_error(function() mx.nd.depth_to_space(x, { block_size = 3 }) end, 'not a multiple of block_size')
  assert_error(function() mx.nd.space_to_depth(x, { block_size = 2 }) end, 'not multiples of block_size 2')
  assert_error(function() mx.nd.depth_to_space(mx.nd.ones({ 4, 4 }), { block_size = 2 }) end, '4 axes')
end)

test('batch_take: one element per row (MXNet docstring), indices clipped; gradient to a only', function()
  local a = mx.nd.array({ { 1, 2 }, { 3, 4 }, { 5, 6 } })
  assert_eq(mx.nd.batch_take(a, mx.nd.array({ 0, 1, 0 })):totable(), { 1, 4, 5 })
  assert_eq(mx.nd.batch_take(a, mx.nd.array({ 7, -2, 1 })):totable(), { 2, 3, 6 })
  assert_error(function() mx.nd.batch_take(mx.nd.ones({ 2, 2, 2 }), mx.nd.array({ 0, 1 })) end,
    'a must be a matrix')
  assert_error(function() mx.nd.batch_take(a, mx.nd.array({ 0, 1 })) end, 'index has shape')
  assert_error(function() mx.nd.batch_take(a, mx.nd.array({ 0, 1, 0 }), { axis = 1 }) end,
    'takes no parameters')
end)
