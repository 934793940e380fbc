-- L2Normalization, SVMOutput, Crop, im2col and col2im: MXNet's documented
-- values and rules, identities (im2col against Convolution), gradients of
-- every mode, and bad input named. Single-case gradients are also in
-- gradient_test.lua.

local tu = mx.test_utils
local function close(a, b, tol) tu.assert_almost_equal(a, b, {rtol = tol or 1e-5, atol = tol or 1e-6}) end

local x = mx.nd.array({{{1, 2}, {3, 4}}, {{2, 2}, {5, 6}}})

test('L2Normalization: MXNet examples of the three modes', function()
  close(mx.nd.L2Normalization(x), {{{0.18257418, 0.36514837}, {0.54772252, 0.73029673}},
                                   {{0.24077171, 0.24077171}, {0.60192931, 0.72231513}}})
  close(mx.nd.L2Normalization(x, {mode = 'channel'}),
        {{{0.31622776, 0.44721359}, {0.94868326, 0.89442718}},
         {{0.37139067, 0.31622776}, {0.92847669, 0.94868326}}})
  close(mx.nd.L2Normalization(x, {mode = 'spatial'}),
        {{{0.44721359, 0.89442718}, {0.6, 0.8}}, {{0.70710677, 0.70710677}, {0.6401844, 0.76822126}}})
  assert_error(function() mx.nd.L2Normalization(mx.nd.ones({2, 3}), {mode = 'spatial'}) end,
               'L2Normalization: data has shape %(2,3%)')
end)

test('L2Normalization: gradients of every mode', function()
  local d = mx.nd.array({{{0.5, -1.2, 0.3}, {0.8, 0.1, -0.7}}, {{1.1, 0.4, -0.2}, {-0.6, 0.9, 0.25}}},
                        {dtype = 'float64'})
  for _, mode in ipairs({'instance', 'channel', 'spatial'}) do
    tu.check_numeric_gradient(mx.sym.L2Normalization(mx.sym.Variable('d'), {mode = mode}), {d = d})
  end
end)

test('SVMOutput: identity forward, L1 and L2 hinge gradients', function()
  local data = mx.nd.array({{0.5, -0.3, 2}, {-1.5, 0.2, 0.9}})
  local label = mx.nd.array({2, 0})
  assert_eq(mx.nd.SVMOutput(data, label):totable(), data:totable())
  local function grad(params)
    local d = data:copy()
    d:attach_grad()
    local y = mx.autograd.record(function() return mx.nd.SVMOutput(d, label, params) end)
    y:backward()
    return d.grad
  end
  -- MXNet's test: l = +1 at the label, -1 elsewhere; L1: -l [1 - l x > 0];
  -- L2: -2 l max(1 - l x, 0); scaled by the coefficient.
  local l = {{-1, -1, 1}, {1, -1, -1}}
  local dv = data:totable()
  local want1, want2 = {}, {}
  for r = 1, 2 do
    want1[r], want2[r] = {}, {}
    for j = 1, 3 do
      local m = 1 - l[r][j] * dv[r][j]
      want1[r][j] = m > 0 and -l[r][j] * 0.5 or 0
      want2[r][j] = -2 * l[r][j] * math.max(m, 0) * 0.5
    end
  end
  close(grad({use_linear = true, regularization_coefficient = 0.5}), want1)
  close(grad({regularization_coefficient = 0.5}), want2)
  assert_error(function()
    local d = data:copy()
    d:attach_grad()
    mx.autograd.record(function() return mx.nd.SVMOutput(d, mx.nd.array({3, 0})) end):backward()
    d.grad:wait_to_read()
  end, 'label%[0%] = 3 is not a class')
end)

test('Crop: to h_w, like another array, centred; gradient in the window', function()
  local img = mx.nd.arange(0, 2 * 3 * 4 * 5):reshape({2, 3, 4, 5})
  local c = mx.nd.Crop(img, {num_args = 1, h_w = {2, 3}, offset = {1, 2}})
  assert_eq(c.shape, {2, 3, 2, 3})
  assert_eq(c:totable()[1][1], {{7, 8, 9}, {12, 13, 14}})
  local like = mx.nd.zeros({1, 1, 2, 2})
  local cc = mx.nd.Crop({img, like}, {num_args = 2, center_crop = true})
  assert_eq(cc:totable()[2][3], {{106, 107}, {111, 112}})
  local d = mx.nd.ones({1, 1, 3, 3})
  d:attach_grad()
  mx.autograd.record(function() return mx.nd.Crop(d, {num_args = 1, h_w = {2, 2}}) end)
    :backward(mx.nd.array({{{{1, 2}, {3, 4}}}}))
  assert_eq(d.grad:totable(), {{{{1, 2, 0}, {3, 4, 0}, {0, 0, 0}}}})
  assert_error(function() mx.nd.Crop(img, {num_args = 1, h_w = {2, 3}, offset = {3, 0}}) end,
               'outside the 4x5 images')
  assert_error(function() mx.nd.Crop(img, {num_args = 1, h_w = {5, 3}}) end, 'does not fit')
end)

test('im2col: a convolution is a GEMM of the weight and the columns', function()
  local data = mx.nd.random.uniform(-1, 1, {2, 3, 7, 6}, {dtype = 'float64'})
  local weight = mx.nd.random.uniform(-1, 1, {4, 3, 3, 2}, {dtype = 'float64'})
  local params = {kernel = {3, 2}, stride = {2, 1}, dilate = {1, 2}, pad = {1, 0}}
  local col = mx.nd.im2col(data, params)
  -- o = (in + 2 pad - dilate (k - 1) - 1) / stride + 1: (7 + 2 - 2 - 1) / 2 + 1 = 4,
  -- (6 - 2 - 1) / 1 + 1 = 4.
  assert_eq(col.shape, {2, 18, 16})
  local conv = mx.nd.Convolution({data, weight}, {kernel = {3, 2}, stride = {2, 1},
    dilate = {1, 2}, pad = {1, 0}, num_filter = 4, no_bias = true})
  local w2 = weight:reshape({4, 18})
  for n = 1, 2 do
    close(mx.nd.dot(w2, col[n]), conv[n]:reshape({4, 16}), 1e-12)
  end
  -- col2im(im2col(x)) = col2im(im2col(ones)) * x: each element times its patch count.
  local p2 = {kernel = {3, 2}, stride = {2, 1}, dilate = {1, 2}, pad = {1, 0}, output_size = {7, 6}}
  local count = mx.nd.col2im(mx.nd.im2col(mx.nd.ones({2, 3, 7, 6}, {dtype = 'float64'}), params), p2)
  close(mx.nd.col2im(col, p2), count * data, 1e-12)
  -- 1-D and 3-D.
  assert_eq(mx.nd.im2col(mx.nd.ones({1, 2, 5}), {kernel = {3}}).shape, {1, 6, 3})
  assert_eq(mx.nd.im2col(mx.nd.ones({1, 1, 3, 4, 5}), {kernel = {2, 2, 2}}).shape, {1, 8, 24})
  assert_error(function() mx.nd.im2col(data, {kernel = {9, 2}}) end, 'exceeds the padded image')
  assert_error(function() mx.nd.col2im(col, {kernel = {3, 2}, output_size = {7, 6}}) end,
               'col2im: data has shape %(2,18,16%) but an image')
end)

test('im2col and col2im: gradients (each the other)', function()
  local params = {kernel = {2, 2}, stride = {1, 2}, pad = {1, 0}}
  tu.check_numeric_gradient(mx.sym.im2col(mx.sym.Variable('d'), params),
                            {d = mx.nd.random.uniform(-1, 1, {1, 2, 3, 4}, {dtype = 'float64'})})
  local p2 = {kernel = {2, 2}, stride = {1, 2}, pad = {1, 0}, output_size = {3, 4}}
  tu.check_numeric_gradient(mx.sym.col2im(mx.sym.Variable('c'), p2),
                            {c = mx.nd.random.uniform(-1, 1, {1, 8, 8}, {dtype = 'float64'})})
end)

test('AdaptiveAvgPooling2D: dividing sizes as avg pooling, overlapping bins', function()
  local x = mx.nd.random.uniform(-1, 1, {2, 3, 4, 6})
  close(mx.nd.contrib.AdaptiveAvgPooling2D(x, {output_size = {2, 3}}),
        mx.nd.Pooling(x, {kernel = {2, 2}, stride = {2, 2}, pool_type = 'avg'}))
  close(mx.nd.contrib.AdaptiveAvgPooling2D(x), mx.nd.mean(x, {axis = {3, 4}, keepdims = true}))
  -- 3 rows into 2 bins: rows [0, 2) and [1, 3).
  local y = mx.nd.array({{{{1}, {2}, {4}}}})
  close(mx.nd.contrib.AdaptiveAvgPooling2D(y, {output_size = {2, 1}}), {{{{1.5}, {3}}}})
  assert_eq(mx.nd.contrib.AdaptiveAvgPooling2D(x, {output_size = {5}}).shape, {2, 3, 5, 5})
  assert_error(function() mx.nd.contrib.AdaptiveAvgPooling2D(mx.nd.ones({2, 3})) end, 'NCHW')
end)

test('BilinearResize2D: corners aligned or not, the size modes', function()
  local x = mx.nd.array({{{{1, 2}, {3, 4}}}})
  close(mx.nd.contrib.BilinearResize2D(x, {height = 3, width = 3}),
        {{{{1, 1.5, 2}, {2, 2.5, 3}, {3, 3.5, 4}}}})
  -- Not aligned: source (dst + 0.5) * in / out - 0.5, clamped at 0.
  close(mx.nd.contrib.BilinearResize2D(mx.nd.array({{{{1, 2}}}}),
                                       {height = 1, width = 4, align_corners = false}),
        {{{{1, 1.25, 1.75, 2}}}})
  local big = mx.nd.random.uniform(0, 1, {1, 2, 5, 6})
  assert_eq(mx.nd.contrib.BilinearResize2D(big, {scale_height = 2, scale_width = 0.5}).shape,
            {1, 2, 10, 3})
  assert_eq(mx.nd.contrib.BilinearResize2D(big, {mode = 'odd_scale', scale_height = 2,
    scale_width = 2}).shape, {1, 2, 9, 12})
  assert_eq(mx.nd.contrib.BilinearResize2D(big, {mode = 'to_even_down'}).shape, {1, 2, 4, 6})
  assert_eq(mx.nd.contrib.BilinearResize2D(big, {mode = 'to_odd_up'}).shape, {1, 2, 5, 7})
  local like = mx.nd.contrib.BilinearResize2D({big, mx.nd.zeros({1, 1, 7, 8})}, {mode = 'like'})
  assert_eq(like.shape, {1, 2, 7, 8})
  -- The same size is the identity.
  close(mx.nd.contrib.BilinearResize2D(big, {height = 5, width = 6}), big)
end)

-- The data gradient is a thread per (image, channel) plane taking its boxes
-- in order (roi_ops-inl.h): checked with boxes on two images, overlapping
-- boxes, a padding box, position-sensitive pooling, and ROIPooling's routing.
test('ROIAlign and ROIPooling gradients: two images, overlaps, padding, position-sensitive',
  function()
  local tu = mx.test_utils
  local x = mx.nd.random.uniform(-1, 1, {2, 8, 5, 6}, {dtype = 'float64'})
  local boxes = mx.nd.array({{1, 0.2, 0.3, 3.6, 4.1}, {0, 1.1, 0.4, 4.7, 3.2},
    {1, 0.5, 0.6, 3.5, 3.9}, {-1, 0, 0, 1, 1}}, {dtype = 'float64'})
  local V = mx.sym.Variable
  for _, ps in ipairs({false, true}) do
    local net = mx.sym.contrib.ROIAlign{data = V('data'), rois = V('rois'), pooled_size = {2, 2},
      spatial_scale = 1, sample_ratio = 2, position_sensitive = ps}
    tu.check_numeric_gradient(net, {data = x, rois = boxes}, {grad_nodes = {'data'}})
  end
  -- ROIPooling routes each bin's gradient to its maximum: distinct values,
  -- so no ties move under the finite differences.
  local distinct = mx.nd.arange(0, 2 * 8 * 5 * 6, {dtype = 'float64'}):reshape({2, 8, 5, 6})
  local net = mx.sym.ROIPooling{data = V('data'), rois = V('rois'), pooled_size = {2, 2},
    spatial_scale = 1}
  tu.check_numeric_gradient(net, {data = distinct * 0.01, rois = mx.nd.array({{1, 0, 0, 3, 4},
    {0, 1, 0, 5, 3}, {1, 1, 1, 4, 4}}, {dtype = 'float64'})}, {grad_nodes = {'data'}})
end)

test('ROIPooling and ROIAlign: known bins, padding boxes, position-sensitive', function()
  local x = mx.nd.arange(0, 16):reshape({1, 1, 4, 4})
  local rois = mx.nd.array({{0, 0, 0, 3, 3}, {-1, 0, 0, 3, 3}})
  local p = mx.nd.ROIPooling(x, rois, {pooled_size = {2, 2}, spatial_scale = 1})
  assert_eq(p:totable(), {{{{5, 7}, {13, 15}}}, {{{0, 0}, {0, 0}}}})
  -- Its gradient reaches the maxima only.
  x:attach_grad()
  mx.autograd.record(function()
    return mx.nd.ROIPooling(x, rois, {pooled_size = {2, 2}, spatial_scale = 1})
  end):backward()
  assert_eq(x.grad:totable()[1][1], {{0, 0, 0, 0}, {0, 1, 0, 1}, {0, 0, 0, 0}, {0, 1, 0, 1}})
  -- ROIAlign on a linear map 4y + x is exact: the bin's centre.
  local a = mx.nd.contrib.ROIAlign(x, mx.nd.array({{0, 0, 0, 2, 2}}),
                                   {pooled_size = {1, 1}, spatial_scale = 1, sample_ratio = 2})
  close(a, {{{{5}}}})
  local b = mx.nd.contrib.ROIAlign(x, mx.nd.array({{0, 0, 2, 2}}),
                                   {pooled_size = {2, 2}, spatial_scale = 1, sample_ratio = 2})
  close(b, {{{{2.5, 3.5}, {6.5, 7.5}}}})
  local c = mx.nd.contrib.ROIAlign(x, mx.nd.array({{0, 0, 0, 2, 2}}),
    {pooled_size = {2, 2}, spatial_scale = 1, sample_ratio = 2, aligned = true})
  -- Corners shifted by -0.5: samples at -0.25 are clamped to 0.
  close(c, {{{{0.625, 1.5}, {4.125, 5}}}})
  local four = mx.nd.tile(x, {reps = {1, 4, 1, 1}}) * mx.nd.array({1, 10, 100, 1000}):reshape({1, 4, 1, 1})
  local ps = mx.nd.contrib.ROIAlign(four, mx.nd.array({{0, 0, 0, 2, 2}}),
    {pooled_size = {2, 2}, spatial_scale = 1, sample_ratio = 2, position_sensitive = true})
  close(ps, {{{{2.5, 35}, {650, 7500}}}})
  assert_error(function()
    mx.nd.ROIPooling(x, mx.nd.array({{1, 0, 0, 3, 3}}), {pooled_size = {2, 2}, spatial_scale = 1})
      :wait_to_read()
  end, 'box 0 names image 1 of a batch of 1')
  assert_error(function() mx.nd.ROIPooling(x, mx.nd.ones({2, 4}), {pooled_size = {2, 2},
    spatial_scale = 1}) end, 'rois has shape %(2,4%)')
end)

test('resize and ROI gradients', function()
  local d = mx.nd.random.uniform(-1, 1, {1, 2, 5, 4}, {dtype = 'float64'})
  for _, align in ipairs({true, false}) do
    tu.check_numeric_gradient(mx.sym.contrib.BilinearResize2D(mx.sym.Variable('d'),
      {height = 7, width = 3, align_corners = align}), {d = d})
  end
  tu.check_numeric_gradient(mx.sym.contrib.AdaptiveAvgPooling2D(mx.sym.Variable('d'),
    {output_size = {3, 3}}), {d = d})
  local rois = mx.nd.array({{0, 0.5, 0.2, 3.1, 4.2}, {0, 1, 1, 2.5, 2}}, {dtype = 'float64'})
  local sym = mx.sym.contrib.ROIAlign({mx.sym.Variable('d'), mx.sym.Variable('r')},
    {pooled_size = {2, 2}, spatial_scale = 1, sample_ratio = 2})
  tu.check_numeric_gradient(sym, {d = d, r = rois}, {grad_nodes = {'d'}})
end)

test('Pooling: lp pooling and the same convention', function()
  local x = mx.nd.array({{{{1, 2}, {3, 4}}}})
  local function lp(p) return mx.nd.Pooling(x, {kernel = {2, 2}, pool_type = 'lp', p_value = p}) end
  close(lp(1), {{{{10}}}})
  close(lp(2), {{{{math.sqrt(30)}}}})
  close(lp(3), {{{{100 ^ (1 / 3)}}}})
  assert_error(function() mx.nd.Pooling(x, {kernel = {2, 2}, pool_type = 'lp'}) end,
               "'lp' needs p_value 1, 2 or 3")
  -- 'same': ceil(in / stride) outputs, the last window clipped at the end.
  local v = mx.nd.array({{{1, 5, 2, 4, 3}}})
  assert_eq(mx.nd.Pooling(v, {kernel = {2}, stride = {2}, pooling_convention = 'same'}):totable(),
            {{{5, 4, 3}}})
  close(mx.nd.Pooling(v, {kernel = {2}, stride = {2}, pooling_convention = 'same',
                          pool_type = 'avg'}), {{{3, 3, 3}}})
  local img = mx.nd.random.uniform(-1, 1, {2, 3, 5, 7})
  assert_eq(mx.nd.Pooling(img, {kernel = {3, 3}, stride = {2, 2},
                                pooling_convention = 'same'}).shape, {2, 3, 3, 4})
  assert_error(function()
    mx.nd.Pooling(v, {kernel = {2}, pad = {1}, pooling_convention = 'same'})
  end, "'same' takes no pad")
end)

test('Pooling: lp and same gradients', function()
  local d = mx.nd.random.uniform(0.2, 1.5, {1, 2, 4, 5}, {dtype = 'float64'})
  for _, p in ipairs({1, 2, 3}) do
    tu.check_numeric_gradient(mx.sym.Pooling(mx.sym.Variable('d'), {kernel = {2, 3},
      stride = {1, 2}, pool_type = 'lp', p_value = p}), {d = d})
  end
  for _, t in ipairs({'max', 'avg', 'sum'}) do
    tu.check_numeric_gradient(mx.sym.Pooling(mx.sym.Variable('d'), {kernel = {3, 2},
      stride = {2, 2}, pool_type = t, pooling_convention = 'same'}), {d = d})
  end
end)

test('LeakyReLU rrelu: random slopes in training, their mean otherwise', function()
  local x = mx.nd.array({{-1, 2, -3, 4}, {-0.5, -2, 1, -4}})
  local lo, hi = 0.2, 0.4
  close(mx.nd.LeakyReLU(x, {act_type = 'rrelu', lower_bound = lo, upper_bound = hi}),
        {{-0.3, 2, -0.9, 4}, {-0.15, -0.6, 1, -1.2}})
  x:attach_grad()
  local y = mx.autograd.record(function()
    return mx.nd.LeakyReLU(x, {act_type = 'rrelu', lower_bound = lo, upper_bound = hi})
  end)
  y:backward()
  local xv, yv, gv = x:totable(), y:totable(), x.grad:totable()
  local slopes = {}
  for r = 1, 2 do
    for c = 1, 4 do
      if xv[r][c] > 0 then
        assert_eq({yv[r][c], gv[r][c]}, {xv[r][c], 1})
      else
        local a = yv[r][c] / xv[r][c]
        assert(a >= lo - 1e-6 and a <= hi + 1e-6, 'slope within the bounds')
        assert_near(gv[r][c], a, 1e-6)  -- the gradient is the slope drawn
        slopes[#slopes + 1] = a
      end
    end
  end
  assert(slopes[1] ~= slopes[2] or slopes[2] ~= slopes[3], 'slopes differ per element')
end)

test('UpSampling bilinear: a depthwise Deconvolution by a bilinear kernel', function()
  local w = mx.nd.zeros({2, 1, 4, 4})
  mx.init.Bilinear()('up_weight', w)
  local k = w:totable()[1][1]
  close(mx.nd.array(k[1]), {0.0625, 0.1875, 0.1875, 0.0625})
  close(mx.nd.array(k[2]), {0.1875, 0.5625, 0.5625, 0.1875})
  local x = mx.nd.array({{{{1, 2}, {3, 4}}, {{0, 0}, {0, 8}}}})
  local y = mx.nd.UpSampling({x, w}, {scale = 2, sample_type = 'bilinear', num_filter = 2})
  assert_eq(y.shape, {1, 2, 4, 4})
  local want = mx.nd.Deconvolution({x, w}, {kernel = {4, 4}, stride = {2, 2}, pad = {1, 1},
    num_filter = 2, num_group = 2, no_bias = true})
  close(y, want)
  -- Interior pixels interpolate at sources 0.25 and 0.75 (the border ones
  -- see the zero padding, as MXNet's): row 0.25 of [[1, 2], [3, 4]] is [1.5, 2.5].
  local row = y:totable()[1][1][2]
  close(mx.nd.array({row[2], row[3]}), {1.75, 2.25})
  -- Gradients reach the data and the kernel, through the executor.
  local sym = mx.sym.UpSampling({mx.sym.Variable('data'), mx.sym.Variable('weight')},
    {scale = 2, sample_type = 'bilinear', num_filter = 2})
  tu.check_numeric_gradient(sym, {data = x:astype('float64'), weight = w:astype('float64')})
  assert_error(function() mx.nd.UpSampling({x, w}, {scale = 2, sample_type = 'bilinear'}) end,
               'needs num_filter')
end)

test('GridGenerator, BilinearSampler, SpatialTransformer: identity, shifts, warps', function()
  local ident = mx.nd.array({{1, 0, 0, 0, 1, 0}})
  local grid = mx.nd.GridGenerator(ident, {transform_type = 'affine', target_shape = {3, 4}})
  assert_eq(grid.shape, {1, 2, 3, 4})
  close(grid[1][1][1], {-1, -1 / 3, 1 / 3, 1})
  close(mx.nd.array({grid:totable()[1][2][1][1], grid:totable()[1][2][2][1]}), {-1, 0})
  local data = mx.nd.random.uniform(-1, 1, {1, 2, 3, 4})
  close(mx.nd.BilinearSampler(data, grid), data)
  close(mx.nd.SpatialTransformer(data, ident, {target_shape = {3, 4}, transform_type = 'affine',
                                               sampler_type = 'bilinear'}), data)
  -- One pixel to the right: x + 2 / (W - 1); the last column reads outside: 0.
  local shift = mx.nd.array({{1, 0, 2 / 3, 0, 1, 0}})
  local shifted = mx.nd.BilinearSampler(data, mx.nd.GridGenerator(shift,
    {transform_type = 'affine', target_shape = {3, 4}})):totable()
  local dv = data:totable()
  for c = 1, 2 do
    for r = 1, 3 do
      for j = 1, 3 do assert_near(shifted[1][c][r][j], dv[1][c][r][j + 1], 1e-5) end
      assert_near(shifted[1][c][r][4], 0, 1e-6)
    end
  end
  -- A zero flow warps to the identity grid; a flow of one pixel shifts.
  local warp = mx.nd.GridGenerator(mx.nd.zeros({1, 2, 3, 4}), {transform_type = 'warp'})
  close(warp, grid)
  assert_error(function()
    mx.nd.GridGenerator(mx.nd.ones({1, 5}), {transform_type = 'affine', target_shape = {2, 2}})
  end,
               'affine needs %(N, 6%)')
  assert_error(function() mx.nd.BilinearSampler(data, mx.nd.ones({1, 3, 2, 2})) end,
               'grid has shape')
end)

test('spatial transformer gradients: data, grid, loc', function()
  local data = mx.nd.random.uniform(-1, 1, {1, 2, 4, 5}, {dtype = 'float64'})
  -- A grid off the pixel lattice (bilinear weights are smooth there).
  local grid = mx.nd.random.uniform(-0.9, 0.9, {1, 2, 3, 3}, {dtype = 'float64'})
  tu.check_numeric_gradient(mx.sym.BilinearSampler({mx.sym.Variable('d'), mx.sym.Variable('g')}),
                            {d = data, g = grid})
  local loc = mx.nd.array({{0.9, 0.1, 0.05, -0.08, 0.8, 0.03}}, {dtype = 'float64'})
  tu.check_numeric_gradient(mx.sym.GridGenerator(mx.sym.Variable('l'),
    {transform_type = 'affine', target_shape = {3, 4}}), {l = loc})
  tu.check_numeric_gradient(mx.sym.GridGenerator(mx.sym.Variable('f'), {transform_type = 'warp'}),
                            {f = mx.nd.random.uniform(-1, 1, {1, 2, 3, 4}, {dtype = 'float64'})})
  tu.check_numeric_gradient(mx.sym.SpatialTransformer({mx.sym.Variable('d'), mx.sym.Variable('l')},
    {target_shape = {3, 3}, transform_type = 'affine', sampler_type = 'bilinear'}),
    {d = data, l = loc})
end)

test('Correlation: displacements, padding, absolute differences, gradients', function()
  -- Seeded: with is_multiply = false the op is |a - b| (b padded with
  -- zeros), and central differences across a kink would disagree with the
  -- gradient; these values keep every difference away from one.
  mx.random.seed(7)
  local a = mx.nd.random.uniform(-1, 1, {1, 2, 3, 4})
  local b = mx.nd.random.uniform(-1, 1, {1, 2, 3, 4})
  local c = mx.nd.Correlation(a, b, {max_displacement = 1, pad_size = 1})
  assert_eq(c.shape, {1, 9, 3, 4})
  local av, bv, cv = a:totable()[1], b:totable()[1], c:totable()[1]
  local function prod(y1, x1, y2, x2)
    if y2 < 1 or y2 > 3 or x2 < 1 or x2 > 4 then return 0 end
    return (av[1][y1][x1] * bv[1][y2][x2] + av[2][y1][x1] * bv[2][y2][x2]) / 2
  end
  for y = 1, 3 do
    for x = 1, 4 do
      assert_near(cv[5][y][x], prod(y, x, y, x), 1e-5)          -- no displacement
      assert_near(cv[6][y][x], prod(y, x, y, x + 1), 1e-5)      -- one to the right
      assert_near(cv[1][y][x], prod(y, x, y - 1, x - 1), 1e-5)  -- up and left
    end
  end
  local d = mx.nd.Correlation(a, b, {max_displacement = 0, is_multiply = false})
  close(d, mx.nd.mean(mx.nd.abs(a - b), {axis = 2, keepdims = true}))
  for _, mul in ipairs({true, false}) do
    tu.check_numeric_gradient(mx.sym.Correlation({mx.sym.Variable('a'), mx.sym.Variable('b')},
      {max_displacement = 2, stride2 = 2, kernel_size = 1, pad_size = 2, is_multiply = mul}),
      {a = a:astype('float64'), b = b:astype('float64')})
  end
  -- A 3 x 3 patch and positions two apart: each input element is read by
  -- several patch offsets of several outputs (the backward gathers them).
  local a5 = mx.nd.random.uniform(-1, 1, {2, 3, 6, 7}, {dtype = 'float64'})
  local b5 = mx.nd.random.uniform(-1, 1, {2, 3, 6, 7}, {dtype = 'float64'})
  tu.check_numeric_gradient(mx.sym.Correlation({mx.sym.Variable('a'), mx.sym.Variable('b')},
    {max_displacement = 1, stride1 = 2, kernel_size = 3, pad_size = 2}), {a = a5, b = b5})
  assert_error(function() mx.nd.Correlation(a, b, {max_displacement = 3}) end, 'too small')
end)
