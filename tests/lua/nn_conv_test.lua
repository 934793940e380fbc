-- Convolution, Pooling and BatchNorm from Lua: argument and auxiliary names,
-- shape inference of a small network, values, moving statistics through
-- mx.nd and the executor, the 1-based BatchNorm axis, errors.

local function close(a, b, tol) mx.test_utils.assert_almost_equal(a, b, {rtol = tol or 1e-5, atol = tol or 1e-5}) end

local function lenet()
  local data = mx.sym.Variable('data')
  local c1 = mx.sym.Convolution{data = data, kernel = {5, 5}, num_filter = 20, name = 'conv1'}
  local b1 = mx.sym.BatchNorm{data = c1, name = 'bn1'}
  local p1 = mx.sym.Pooling{data = b1, pool_type = 'max', kernel = {2, 2}, stride = {2, 2},
    name = 'pool1'}
  local c2 = mx.sym.Convolution{data = p1, kernel = {3, 3}, num_filter = 8, num_group = 4,
    no_bias = true, name = 'conv2'}
  return mx.sym.Pooling{data = c2, pool_type = 'avg', kernel = {3, 3}, stride = {2, 2},
    pooling_convention = 'full', name = 'pool2'}
end

test('argument and auxiliary names, shape inference', function()
  local net = lenet()
  assert_eq(net:list_arguments(), {'data', 'conv1_weight', 'conv1_bias', 'bn1_gamma', 'bn1_beta',
    'conv2_weight'})
  assert_eq(net:list_auxiliary_states(), {'bn1_moving_mean', 'bn1_moving_var'})
  local args, outs, aux = net:infer_shape{data = {7, 1, 28, 28}}
  assert_eq(args, {{7, 1, 28, 28}, {20, 1, 5, 5}, {20}, {20}, {20}, {8, 5, 3, 3}})
  -- 24 -> pool 12 -> conv 10 -> full pool ceil((10 - 3) / 2) + 1 = 5
  assert_eq(outs, {{7, 8, 5, 5}})
  assert_eq(aux, {{20}, {20}})
end)

test('float32 forward and backward through the executor', function()
  local net = lenet()
  local exe = net:simple_bind{ctx = mx.cpu(), data = {2, 1, 28, 28}}
  for name, a in pairs(exe.arg_dict) do
    mx.nd.random.uniform(-0.5, 0.5, a.shape):copyto(a)
  end
  mx.nd.ones({20}):copyto(exe.aux_dict.bn1_moving_var)
  exe:forward{is_train = true}
  assert_eq(exe.outputs[1].shape, {2, 8, 5, 5})
  exe:backward({mx.nd.ones({2, 8, 5, 5})})
  local g = exe.grad_dict.conv1_weight:totable()
  assert(type(g[1][1][1][1]) == 'number')
  -- Training moved the moving statistics towards the batch's.
  local mv = exe.aux_dict.bn1_moving_var:totable()
  local moved = false
  for _, v in ipairs(mv) do moved = moved or math.abs(v - 1) > 1e-6 end
  assert(moved, 'moving_var unchanged after a training forward')
end)

test('BatchNorm: mx.nd with auxiliary inputs, 1-based axis, output_mean_var', function()
  local x = mx.nd.array({{1, 2}, {3, 4}, {5, 6}})
  local gamma, beta = mx.nd.array({2, 3}), mx.nd.array({0.5, -1})
  local mm, mv = mx.nd.zeros({2}), mx.nd.ones({2})
  local y, mean, invstd = mx.autograd.train_mode(function()
    return mx.nd.BatchNorm({x, gamma, beta, mm, mv},
      {axis = 2, fix_gamma = false, output_mean_var = true, eps = 0, momentum = 0.5})
  end)
  local s = 1 / math.sqrt(8 / 3)
  close(mean, {3, 4})
  close(invstd, {s, s})
  close(y, {{-4 * s + 0.5, -6 * s - 1}, {0.5, -1}, {4 * s + 0.5, 6 * s - 1}})
  close(mm, {1.5, 2})
  close(mv, {0.5 + 4 / 3, 0.5 + 4 / 3})
  -- Outside training the moving statistics normalise and stay.
  local z = mx.nd.BatchNorm({x, gamma, beta, mm, mv}, {axis = 2})
  assert_eq(#{mx.nd.BatchNorm({x, gamma, beta, mm, mv}, {axis = 2})}, 1)
  close(mm, {1.5, 2})
  close(z, {{(1 - 1.5) / math.sqrt(0.5 + 4 / 3 + 1e-3) + 0.5, (2 - 2) - 1},
    {(3 - 1.5) / math.sqrt(0.5 + 4 / 3 + 1e-3) + 0.5, (4 - 2) / math.sqrt(0.5 + 4 / 3 + 1e-3) - 1},
    {(5 - 1.5) / math.sqrt(0.5 + 4 / 3 + 1e-3) + 0.5, (6 - 2) / math.sqrt(0.5 + 4 / 3 + 1e-3) - 1}},
    1e-4)
end)

test('Pooling conventions and global pooling', function()
  local x = mx.nd.arange(1, 17):reshape({1, 1, 4, 4})
  close(mx.nd.Pooling(x, {kernel = {3, 3}, stride = {2, 2}, pooling_convention = 'full'}),
    {{{{11, 12}, {15, 16}}}})
  assert_eq(mx.nd.Pooling(x, {kernel = {3, 3}, stride = {2, 2}}).shape, {1, 1, 1, 1})
  close(mx.nd.Pooling(x, {global_pool = true, pool_type = 'sum'}), {{{{136}}}})
end)

-- Max pooling's hidden workspace stays hidden: one output from mx.nd and
-- symbols, `out` takes the visible array (as MXNet's), and the gradient
-- through a training forward (oneDNN keeps the positions of the maxima) and
-- through an inference forward are MXNet's: each to the first max of its
-- window, here with ties.
test('max Pooling: a hidden workspace, out = the visible output, gradients with ties', function()
  local x = mx.nd.array({1, 3, 3, 2, 0, 3, 1, 3, 2, 2, 2, 2, 5, 1, 1, 5}):reshape({1, 1, 4, 4})
  local p = {kernel = {2, 2}, stride = {2, 2}}
  local y = mx.nd.zeros({1, 1, 2, 2})
  assert(mx.nd.Pooling(x, {kernel = {2, 2}, stride = {2, 2}, out = y}) == y)
  close(y, {{{{3, 3}, {5, 5}}}})
  assert_eq(mx.sym.Pooling{data = mx.sym.Variable('d'), kernel = {2, 2}, name = 'p'}:list_outputs(),
    {'p_output'})
  local want = {{{{0, 1, 2, 0}, {0, 0, 0, 0}, {0, 0, 0, 0}, {3, 0, 0, 4}}}}
  local og = mx.nd.array({1, 2, 3, 4}):reshape({1, 1, 2, 2})
  for _, train in ipairs({true, false}) do
    x:attach_grad()
    local out = mx.autograd.record(function() return mx.nd.Pooling(x, p) end, train)
    out:backward(og)
    close(x.grad, want)
  end
  local d = mx.nd.Dropout(x, {p = 0.5, out = mx.nd.zeros({1, 1, 4, 4})})
  assert_eq(d.shape, {1, 1, 4, 4})
end)

test('bad parameters raise errors naming the op and the shapes', function()
  local x = mx.nd.ones({1, 3, 4, 4})
  assert_error(function() mx.nd.Convolution({x, mx.nd.ones({2, 3, 5, 5})},
    {kernel = {5, 5}, num_filter = 2, no_bias = true}) end, 'Convolution.*kernel.*%(1,3,4,4%)')
  assert_error(function() mx.nd.Convolution({x, mx.nd.ones({2, 3, 3, 3})},
    {kernel = {3, 3}, num_filter = 2, num_group = 2, no_bias = true}) end, 'num_group')
  assert_error(function() mx.nd.Pooling(x, {kernel = {5, 5}}) end, 'Pooling.*%(1,3,4,4%)')
  assert_error(function() mx.nd.Pooling(x, {kernel = {2, 2}, pooling_convention = 'round'}) end,
    'pooling_convention')
  assert_error(function() mx.nd.BatchNorm({x, mx.nd.ones({3}), mx.nd.ones({3}), mx.nd.ones({3}),
    mx.nd.ones({4})}) end, 'BatchNorm.*moving_var')
  -- cudnn_tune is checked on every device: a graph the CPU accepts runs on a GPU.
  for op, w in pairs({Convolution = {2, 3, 2, 2}, Deconvolution = {3, 2, 2, 2}}) do
    assert_error(function() mx.nd[op]({x, mx.nd.ones(w)},
      {kernel = {2, 2}, num_filter = 2, no_bias = true, cudnn_tune = 'data'}) end,
      op .. ": parameter 'cudnn_tune' got 'data', expected one of")
    local y = mx.nd[op]({x, mx.nd.ones(w)},
      {kernel = {2, 2}, num_filter = 2, no_bias = true, cudnn_tune = 'fastest'})
    assert_eq(y.shape[2], 2)
  end
end)

test('Deconvolution: output sizes, target_shape, float32 (oneDNN) against float64', function()
  local V = mx.sym.Variable
  local tu = mx.test_utils
  local function rnd(shape) return mx.nd.random.uniform(-1, 1, shape, {dtype = 'float64'}) end
  local s = mx.sym.Deconvolution{data = V('data'), kernel = {3, 3}, stride = {2, 2}, pad = {1, 1},
    adj = {1, 1}, num_filter = 4, name = 'dc'}
  local args, outs = s:infer_shape{data = {2, 3, 5, 5}}
  assert_eq(args[2], {3, 4, 3, 3})
  assert_eq(outs[1], {2, 4, 10, 10})
  assert_eq(s:list_arguments(), {'data', 'dc_weight'})
  local t = mx.sym.Deconvolution{data = V('data'), kernel = {4, 4}, stride = {2, 2},
    target_shape = {10, 10}, num_filter = 2}
  local _, o2 = t:infer_shape{data = {1, 3, 5, 5}}
  assert_eq(o2[1], {1, 2, 10, 10})
  -- An odd total at stride 1 needs more padding on one side: a clear error
  -- at inference (it once reached the kernel as oneDNN's failure).
  assert_error(function()
    mx.nd.Deconvolution(mx.nd.ones({1, 1, 4, 4}), mx.nd.ones({1, 1, 3, 3}),
      {kernel = {3, 3}, num_filter = 1, target_shape = {5, 5}})
  end, 'needs more padding on one side than the other %(total padding 1 at stride 1%)')
  local x, w, b = rnd({2, 4, 5, 5}), rnd({4, 3, 3, 3}), rnd({3})
  local p = {kernel = {3, 3}, stride = {2, 2}, pad = {1, 1}, num_filter = 3, no_bias = false}
  local y64 = mx.nd.Deconvolution(x, w, b, p)
  local y32 = mx.nd.Deconvolution(x:astype('float32'), w:astype('float32'), b:astype('float32'), p)
  tu.assert_almost_equal(y32, y64:astype('float32'))
  local sb = mx.sym.Deconvolution{data = V('data'), weight = V('w'), bias = V('b'), kernel = {3, 2},
    stride = {2, 1}, pad = {1, 0}, num_filter = 4, num_group = 2, no_bias = false}
  local shapes = {data = {2, 2, 3, 3}, w = {2, 2, 3, 2}, b = {4}}
  local exe64 = sb:simple_bind{data = shapes.data, w = shapes.w, b = shapes.b,
    type_dict = {data = 'float64', w = 'float64', b = 'float64'}}
  local exe32 = sb:simple_bind{data = shapes.data, w = shapes.w, b = shapes.b}
  local xx, ww, bb = rnd(shapes.data), rnd(shapes.w), rnd(shapes.b)
  exe64:forward{is_train = true, data = xx, w = ww, b = bb}
  exe32:forward{is_train = true, data = xx:astype('float32'), w = ww:astype('float32'),
    b = bb:astype('float32')}
  local og = rnd(exe64.outputs[1].shape)
  exe64:backward(og)
  exe32:backward(og:astype('float32'))
  for _, n in ipairs({'data', 'w', 'b'}) do
    tu.assert_almost_equal(exe32.grad_dict[n], exe64.grad_dict[n]:astype('float32'))
  end
  assert_error(function()
    mx.nd.Deconvolution(mx.nd.ones({1, 3, 4, 4}), mx.nd.ones({3, 2, 3, 3}), {kernel = {3, 3},
      num_filter = 3})
  end, 'weight has shape')
  assert_error(function()
    mx.nd.Deconvolution(mx.nd.ones({1, 3, 4, 4}), mx.nd.ones({3, 3, 3, 3}), {kernel = {3, 3},
      stride = {2, 2}, adj = {2, 2}, num_filter = 3})
  end, 'adj')
end)

-- 3-D: Convolution against the definition summed in Lua, Deconvolution as
-- Convolution's transpose, Pooling windows, gradients by finite differences.
local function direct_conv3d(X, W, B, xs, ws, pad, stride)
  local out = {}
  local od = math.floor((xs[3] + 2 * pad[1] - ws[3]) / stride[1]) + 1
  local oh = math.floor((xs[4] + 2 * pad[2] - ws[4]) / stride[2]) + 1
  local ow = math.floor((xs[5] + 2 * pad[3] - ws[5]) / stride[3]) + 1
  for n = 1, xs[1] do
    out[n] = {}
    for f = 1, ws[1] do
      out[n][f] = {}
      for z = 1, od do
        out[n][f][z] = {}
        for y = 1, oh do
          out[n][f][z][y] = {}
          for x = 1, ow do
            local s = B[f]
            for c = 1, xs[2] do for a = 1, ws[3] do for i = 1, ws[4] do for j = 1, ws[5] do
              local iz = (z - 1) * stride[1] - pad[1] + a - 1
              local iy = (y - 1) * stride[2] - pad[2] + i - 1
              local ix = (x - 1) * stride[3] - pad[3] + j - 1
              if iz >= 0 and iz < xs[3] and iy >= 0 and iy < xs[4] and ix >= 0 and ix < xs[5] then
                s = s + X[n][c][iz + 1][iy + 1][ix + 1] * W[f][c][a][i][j]
              end
            end end end end
            out[n][f][z][y][x] = s
          end
        end
      end
    end
  end
  return out
end

test('3-D Convolution, float64 and float32, against the definition', function()
  local xs, ws = {2, 2, 4, 5, 3}, {3, 2, 2, 3, 2}
  local x = mx.nd.random.uniform(-1, 1, xs, {dtype = 'float64'})
  local w = mx.nd.random.uniform(-1, 1, ws, {dtype = 'float64'})
  local b = mx.nd.random.uniform(-1, 1, {3}, {dtype = 'float64'})
  local p = {kernel = {2, 3, 2}, num_filter = 3, pad = {1, 1, 0}, stride = {1, 2, 1}}
  local y = mx.nd.Convolution(x, w, b, p)
  assert_eq(y.shape, {2, 3, 5, 3, 2})
  close(y, direct_conv3d(x:totable(), w:totable(), b:totable(), xs, ws, {1, 1, 0}, {1, 2, 1}), 1e-10)
  close(mx.nd.Convolution(x:astype('float32'), w:astype('float32'), b:astype('float32'), p), y, 1e-5)
  local args, outs = mx.sym.Convolution{data = mx.sym.Variable('data'), kernel = {3, 3, 3},
    num_filter = 4, name = 'c'}:infer_shape{data = {1, 2, 5, 6, 7}}
  assert_eq(args[2], {4, 2, 3, 3, 3})
  assert_eq(outs[1], {1, 4, 3, 4, 5})
  assert_error(function() mx.nd.Convolution(mx.nd.ones({1, 1, 4, 4}), mx.nd.ones({1, 1, 2, 2, 2}),
    {kernel = {2, 2, 2}, num_filter = 1, no_bias = true}) end, '3%-D kernel .* needs 5%-D data %(NCDHW%)')
  assert_error(function() mx.nd.Convolution(mx.nd.ones({1, 1, 2, 2, 2, 2}), mx.nd.ones({1, 1, 1, 1, 1, 1}),
    {kernel = {1, 1, 1, 1}, num_filter = 1, no_bias = true}) end, 'only 1%-D')
end)

test('3-D Deconvolution is the transpose of 3-D Convolution; 3-D Pooling', function()
  local x = mx.nd.random.uniform(-1, 1, {1, 2, 3, 4, 3}, {dtype = 'float64'})
  local w = mx.nd.random.uniform(-1, 1, {2, 3, 2, 2, 2}, {dtype = 'float64'})
  local p = {kernel = {2, 2, 2}, stride = {2, 1, 2}, pad = {0, 1, 1}, num_filter = 3, no_bias = true}
  local y = mx.nd.Deconvolution(x, w, p)
  assert_eq(y.shape, {1, 3, 6, 3, 4})
  -- <deconv(x), u> = <x, conv(u)> with the same weight.
  local u = mx.nd.random.uniform(-1, 1, y.shape, {dtype = 'float64'})
  local cu = mx.nd.Convolution(u, w, {kernel = {2, 2, 2}, stride = {2, 1, 2}, pad = {0, 1, 1},
    num_filter = 2, no_bias = true})
  assert_near((y * u):sum():totable()[1], (x * cu):sum():totable()[1], 1e-9)
  local v = mx.nd.array({1, 5, 2, 3, 7, 0, 4, 6}):reshape({1, 1, 2, 2, 2})
  close(mx.nd.Pooling(v, {kernel = {2, 2, 2}, pool_type = 'max'}):reshape({1}), {7})
  close(mx.nd.Pooling(v, {kernel = {2, 2, 2}, pool_type = 'avg'}):reshape({1}), {3.5})
  close(mx.nd.Pooling(v, {kernel = {1, 2, 2}, pool_type = 'sum'}):reshape({2}), {11, 17})
  local big = mx.nd.random.uniform(0, 1, {2, 3, 4, 6, 6})
  assert_eq(mx.nd.Pooling(big, {kernel = {2, 3, 3}, stride = {2, 2, 2}, pad = {0, 1, 1},
    pooling_convention = 'full'}).shape, {2, 3, 2, 4, 4})
end)

test('3-D gradients against finite differences', function()
  local tu = mx.test_utils
  local function r(shape) return mx.nd.random.uniform(-1, 1, shape, {dtype = 'float64'}) end
  tu.check_numeric_gradient(mx.sym.Convolution{data = mx.sym.Variable('x'), weight = mx.sym.Variable('w'),
    bias = mx.sym.Variable('b'), kernel = {2, 2, 2}, pad = {1, 0, 1}, stride = {1, 2, 1},
    num_filter = 2}, {x = r({1, 2, 3, 4, 3}), w = r({2, 2, 2, 2, 2}), b = r({2})})
  tu.check_numeric_gradient(mx.sym.Deconvolution{data = mx.sym.Variable('x'),
    weight = mx.sym.Variable('w'), kernel = {2, 2, 2}, stride = {2, 1, 1}, num_filter = 2},
    {x = r({1, 2, 2, 3, 2}), w = r({2, 2, 2, 2, 2})})
  for _, t in ipairs({'max', 'avg', 'sum'}) do
    tu.check_numeric_gradient(mx.sym.Pooling{data = mx.sym.Variable('x'), kernel = {2, 2, 2},
      stride = {1, 2, 1}, pad = {1, 0, 0}, pool_type = t}, {x = r({1, 2, 3, 4, 3})})
  end
end)
