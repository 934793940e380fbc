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
