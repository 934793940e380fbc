-- Every operator with a gradient rule against central differences, through
-- the executor (grad_req write, add and null) and through autograd (write
-- and add). A new op with a gradient and no case here fails the coverage test.

local tu = mx.test_utils
local U = {2, 3}

-- Deterministic values in [lo, hi).
local seed = 12345
local function values(n, lo, hi)
  local t = {}
  for i = 1, n do
    seed = (seed * 1103515245 + 12345) % 2147483648
    t[i] = lo + (hi - lo) * seed / 2147483648
  end
  return t
end

local function input(spec)
  local shape = spec[1]
  local n = 1
  for _, d in ipairs(shape) do n = n * d end
  local v = spec.values or values(n, spec[2] or -1, spec[3] or 1)
  return mx.nd.array(v, {dtype = 'float64'}):reshape(shape)
end

local pos = {0.5, 1.5}
local unit = {-0.8, 0.8}
local function u(lo, hi) return {U, lo, hi} end
-- A well-conditioned lower-triangular 3 x 3 factor with garbage (9) in the
-- upper triangle, which the triangular linalg ops must not read; and a
-- well-conditioned general 3 x 3 matrix.
local tri3 = {{3, 3}, values = {2, 9, 9, 0.5, 1.8, 9, -0.3, 0.4, 2.2}}
local well3 = {{3, 3}, values = {2, 0.3, -0.5, 0.1, 1.5, 0.4, -0.2, 0.6, 1.8}}

-- op = {inputs, params, grad = input positions checked (default all),
--       aux = {auxiliary state specs}, check = function() ... end}
-- `check` replaces the numeric checks for ops whose backward is not the
-- gradient of their output (the loss layers: SoftmaxOutput's backward is
-- softmax - label); it must test the backward against known values.
local cases = {
  _contrib_box_nms = {{{{3, 5}, values = {0.9, 0.1, 0.1, 0.4, 0.5, 0.8, 0.6, 0.6, 0.9, 0.8, 0.3,
    0.12, 0.1, 0.42, 0.5}}}, {coord_start = 1, score_index = 0}},
  _contrib_AdaptiveAvgPooling2D = {{{{1, 2, 5, 4}}}, {output_size = {2, 3}}},
  _contrib_BilinearResize2D = {{{{1, 2, 3, 4}}}, {height = 5, width = 2}},
  ROIPooling = {{{{1, 2, 4, 5}}, {{2, 5}, values = {0, 0, 0, 3, 2, 0, 1, 1, 4, 3}}},
    {pooled_size = {2, 2}, spatial_scale = 1}, grad = {1}},
  _contrib_ROIAlign = {{{{1, 2, 4, 5}}, {{1, 5}, values = {0, 0.3, 0.6, 3.2, 2.7}}},
    {pooled_size = {2, 2}, spatial_scale = 1, sample_ratio = 2}, grad = {1}},
  Correlation = {{{{1, 2, 3, 4}}, {{1, 2, 3, 4}}}, {max_displacement = 1, pad_size = 1}},
  GridGenerator = {{{{2, 6}}}, {transform_type = 'affine', target_shape = {2, 3}}},
  -- Grid points off the 3 x 4 pixel lattice, where the sampler is smooth.
  BilinearSampler = {{{{1, 2, 3, 4}}, {{1, 2, 2, 3}, values = {-0.8, -0.5, 0.1, 0.6, 0.85, -0.1,
    -0.7, 0.4, 0.65, -0.3, 0.2, 0.9}}}},
  SpatialTransformer = {{{{1, 2, 3, 4}}, {{1, 6}, values = {0.9, 0.1, 0.05, -0.08, 0.8, 0.03}}},
    {target_shape = {2, 2}, transform_type = 'affine', sampler_type = 'bilinear'}},
  L2Normalization = {{{{2, 3, 2}}}, {mode = 'channel'}},
  im2col = {{{{1, 2, 3, 3}}}, {kernel = {2, 2}, pad = {1, 0}}},
  col2im = {{{{1, 8, 8}}}, {kernel = {2, 2}, pad = {1, 0}, output_size = {3, 3}}},
  Crop = {{{{1, 2, 4, 3}}}, {num_args = 1, h_w = {2, 2}, offset = {1, 1}}},
  _np_cumsum = {{{{2, 3, 2}}}, {axis = 2}},
  moments = {{{{2, 3, 2}}}, {axes = {1, 3}}},
  _contrib_index_copy = {{{{4, 2}}, {{2}, values = {3, 1}}, {{2, 2}}}, grad = {1, 3}},
  scatter_nd = {{{{3}}, {{2, 3}, values = {1, 0, 2, 0, 1, 1}}}, {shape = {3, 2}}, grad = {1}},
  _linalg_gemm = {{{{2, 3}}, {{3, 4}}, {{2, 4}}}, {alpha = 0.7, beta = -1.5}},
  _linalg_gemm2 = {{{{2, 2, 3}}, {{2, 4, 3}}}, {transpose_b = true, alpha = 2}},
  _linalg_trmm = {{tri3, {{3, 2}}}, {alpha = 1.5}},
  _linalg_trsm = {{tri3, {{2, 3}}}, {rightside = true, transpose = true, alpha = 0.5}},
  _linalg_syrk = {{{{2, 3}}}, {alpha = 0.5}},
  _linalg_potri = {{tri3}},
  _linalg_gelqf = {{{{2, 3}}}},
  _linalg_inverse = {{well3}}, _linalg_det = {{well3}}, _linalg_slogdet = {{well3}},
  _linalg_sumlogdiag = {{{{2, 2, 2}, 0.5, 1.5}}},
  _linalg_extractdiag = {{{{2, 3, 3}}}, {offset = 1}},
  _linalg_makediag = {{{{2, 3}}}, {offset = -1}},
  _linalg_extracttrian = {{{{2, 3, 3}}}, {offset = -1}},
  _linalg_maketrian = {{{{2, 6}}}, {lower = false}},
  Cast = {{u()}, {dtype = 'float64'}},
  zeros_like = {{u()}}, ones_like = {{u()}},
  concat = {{{{2, 3}}, {{2, 2}}}, {dim = 2}},
  _rnn_param_concat = {{{{2, 3}}, {{4}}, {{3, 1}}}, {dim = 1}},
  stack = {{u(), u()}, {axis = 1}},
  split = {{{{2, 4}}}, {num_outputs = 2, axis = 2}},
  dot = {{{{2, 3}}, {{3, 4}}}},
  batch_dot = {{{{2, 2, 3}}, {{2, 3, 2}}}},
  elemwise_add = {{u(), u()}}, elemwise_sub = {{u(), u()}},
  elemwise_mul = {{u(), u()}}, elemwise_div = {{u(), u(0.5, 1.5)}},
  broadcast_add = {{u(), {{1, 3}}}}, broadcast_sub = {{u(), {{1, 3}}}},
  broadcast_mul = {{u(), {{1, 3}}}}, broadcast_div = {{u(), {{1, 3}, 0.5, 1.5}}},
  broadcast_mod = {{u(0.1, 0.9), {{1, 3}, 1.1, 1.9}}},
  broadcast_power = {{u(0.5, 1.5), {{1, 3}}}},
  broadcast_maximum = {{u(), {{1, 3}}}}, broadcast_minimum = {{u(), {{1, 3}}}},
  broadcast_hypot = {{u(0.2, 1), {{1, 3}, 0.2, 1}}},
  add_n = {{u(), u(), u()}, {num_args = 3}},
  _plus_scalar = {{u()}, {scalar = 0.5}}, _minus_scalar = {{u()}, {scalar = 0.5}},
  _rminus_scalar = {{u()}, {scalar = 0.5}}, _mul_scalar = {{u()}, {scalar = 3}},
  _div_scalar = {{u()}, {scalar = 3}}, _rdiv_scalar = {{u(0.5, 1.5)}, {scalar = 2}},
  _mod_scalar = {{u(0.1, 1.9)}, {scalar = 2}}, _rmod_scalar = {{u(0.7, 0.95)}, {scalar = 2}},
  _power_scalar = {{u(0.5, 1.5)}, {scalar = 3}}, _rpower_scalar = {{u()}, {scalar = 2}},
  _maximum_scalar = {{u()}, {scalar = 0.05}}, _minimum_scalar = {{u()}, {scalar = 0.05}},
  _hypot_scalar = {{u()}, {scalar = 0.5}},
  identity = {{u()}}, negative = {{u()}}, square = {{u()}}, abs = {{u(0.1, 1)}},
  relu = {{{U, values = {-0.9, -0.2, 0.3, 0.7, -0.5, 0.6}}}},
  sign = {{u(0.1, 1)}}, floor = {{u(0.1, 0.4)}}, ceil = {{u(0.1, 0.4)}},
  round = {{u(0.1, 0.4)}}, rint = {{u(0.1, 0.4)}}, trunc = {{u(0.1, 0.4)}},
  fix = {{u(0.1, 0.4)}}, logical_not = {{u(0.1, 0.9)}},
  reciprocal = {{u(0.5, 1.5)}}, sqrt = {{u(0.5, 1.5)}}, rsqrt = {{u(0.5, 1.5)}},
  cbrt = {{u(0.5, 1.5)}}, exp = {{u()}}, expm1 = {{u()}}, log = {{u(0.5, 1.5)}},
  log1p = {{u(0.5, 1.5)}}, log2 = {{u(0.5, 1.5)}}, log10 = {{u(0.5, 1.5)}},
  sin = {{u()}}, cos = {{u()}}, tan = {{u()}}, arcsin = {{u(-0.8, 0.8)}},
  arccos = {{u(-0.8, 0.8)}}, arctan = {{u()}}, sinh = {{u()}}, cosh = {{u()}}, tanh = {{u()}},
  arcsinh = {{u()}}, arccosh = {{u(1.2, 2)}}, arctanh = {{u(-0.8, 0.8)}},
  sigmoid = {{u()}}, softsign = {{u()}}, erf = {{u()}}, gamma = {{u(0.5, 2)}},
  gammaln = {{u(0.5, 2)}}, clip = {{u()}, {a_min = -0.5, a_max = 0.5}},
  degrees = {{u()}}, radians = {{u()}}, log_sigmoid = {{u(-3, 3)}}, mish = {{u(-3, 3)}},
  hard_sigmoid = {{u(-2, 2)}, {alpha = 0.3, beta = 0.4}}, erfinv = {{u(-0.8, 0.8)}},
  broadcast_axis = {{{{2, 1, 3}}}, {axis = 2, size = 4}}, diag = {{u()}, {k = 1}},
  depth_to_space = {{{{1, 8, 2, 3}}}, {block_size = 2}}, space_to_depth = {{{{1, 2, 4, 2}}}, {block_size = 2}},
  take = {{{{4, 3}}, {{2}, values = {3, 1}}}, {}, grad = {1}},
  pick = {{{{3, 4}}, {{3}, values = {0, 3, 2}}}, {axis = 2}, grad = {1}},
  batch_take = {{{{3, 4}}, {{3}, values = {0, 3, 2}}}, {}, grad = {1}},
  SequenceMask = {{{{4, 3, 2}}, {{3}, values = {2, 4, 0}}}, {use_sequence_length = true, value = -1},
                  grad = {1}},
  SequenceLast = {{{{3, 4, 2}}, {{3}, values = {1, 4, 2}}}, {use_sequence_length = true, axis = 2},
                  grad = {1}},
  SequenceReverse = {{{{4, 3, 2}}, {{3}, values = {3, 1, 4}}}, {use_sequence_length = true},
                     grad = {1}},
  gather_nd = {{{{3, 4}}, {{2, 2}, values = {0, 2, 1, 3}}}, {}, grad = {1}},
  where = {{{U, values = {1, 0, 1, 1, 0, 0}}, u(), u()}, {}, grad = {2, 3}},
  one_hot = {{{{3}, values = {0.3, 1.3, 2.3}}}, {depth = 4}},
  quadratic = {{u()}, {a = 1, b = 2, c = 3}},
  argmax = {{u()}, {axis = 2}}, argmin = {{u()}, {axis = 2}}, argmax_channel = {{u()}},
  norm = {{u()}}, sum = {{u()}, {axis = 2}}, mean = {{u()}, {axis = 1}},
  prod = {{u(0.5, 1.5)}, {axis = 2}}, nansum = {{u()}, {axis = 2}},
  nanprod = {{u(0.5, 1.5)}, {axis = 2}}, max = {{u()}, {axis = 2}}, min = {{u()}, {axis = 2}},
  broadcast_to = {{{{1, 3}}}, {shape = {2, 3}}},
  broadcast_like = {{{{1, 3}}, u()}, {}, grad = {1}},
  reshape = {{u()}, {shape = {3, 2}}}, flatten = {{{{2, 3, 2}}}},
  reshape_like = {{{{6}}, {{3, 2}}}, {}, grad = {1}},
  expand_dims = {{u()}, {axis = 2}}, squeeze = {{{{2, 1, 3}}}},
  tile = {{u()}, {reps = {2, 1}}}, ['repeat'] = {{u()}, {repeats = 2, axis = 1}},
  flip = {{u()}, {axis = 2}}, transpose = {{u()}},
  slice = {{{{3, 4}}}, {begin = {0, 1}, ['end'] = {2, 3}}},
  slice_axis = {{{{3, 4}}}, {axis = 2, begin = 1, ['end'] = 3}},
  slice_like = {{{{3, 4}}, u()}, {}, grad = {1}},
  smooth_l1 = {{u(-2, 2)}, {scalar = 1}},
  softmax = {{u()}, {axis = -1}}, log_softmax = {{u()}, {axis = -1}},
  softmin = {{u()}, {axis = 2}},
  sort = {{u()}, {axis = 2}}, argsort = {{u()}, {axis = 2}},
  topk = {{u()}, {axis = 2, k = 2, ret_typ = 'value'}},
  SwapAxis = {{{{2, 3, 2}}}, {dim1 = 1, dim2 = 3}},
}
-- Neural-network operators (ops/nn): fully connected, activations, losses.
-- (cases.Name = {...} lines go here)
cases.FullyConnected = {{{{2, 3, 2}}, {{4, 6}}, {{4}}}, {num_hidden = 4}}
cases.Activation = {{{U, values = {-0.9, -0.2, 0.3, 0.7, -0.5, 0.6}}}, {act_type = 'relu'}}
cases.LeakyReLU = {{{{2, 3, 2}, values = {-0.9, -0.2, 0.3, 0.7, -0.5, 0.6, 0.4, -0.3, 0.8,
  -0.7, 0.2, -0.6}}, {{3}, 0.1, 0.5}}, {act_type = 'prelu'}}
cases.Embedding = {{{{4}, values = {2, 0, 2, 1}}, {{3, 2}}},
  {input_dim = 3, output_dim = 2, dtype = 'float64'}, grad = {2}}
cases.Dropout = {check = function()
  -- Training drops: the backward is ograd * mask, mask = 0 or 1 / (1 - p).
  local x = mx.nd.ones({20, 30}, {dtype = 'float64'})
  x:attach_grad()
  local y = mx.autograd.record(function() return mx.nd.Dropout(x, {p = 0.4}) end)
  local g = mx.nd.array(values(600, -1, 1), {dtype = 'float64'}):reshape({20, 30})
  y:backward(g)
  local yv, gv, gx = y:reshape({600}):totable(), g:reshape({600}):totable(),
    x.grad:reshape({600}):totable()
  local dropped = 0
  for i = 1, 600 do
    if yv[i] == 0 then dropped = dropped + 1 end
    local want = yv[i] == 0 and 0 or gv[i] / 0.6
    assert(math.abs(gx[i] - want) < 1e-6, 'Dropout backward at ' .. i)  -- p is a float
  end
  assert(dropped > 180 and dropped < 300, 'dropped ' .. dropped .. ' of 600 at p = 0.4')
  -- p = 0 is the identity: numeric gradients through both paths.
  local inputs = {input({{2, 3}})}
  tu.check_numeric_gradient(mx.sym.Dropout({mx.sym.Variable('in1')}, {p = 0}), inputs)
  tu.check_autograd_gradient(function(a) return mx.nd.Dropout(a, {p = 0}) end, inputs)
  -- Outside training the symbol shows one output and passes values through.
  local s = mx.sym.Dropout({mx.sym.Variable('d')}, {p = 0.5})
  assert_eq(#s:list_outputs(), 1)
  assert_eq(mx.nd.Dropout(x, {p = 0.5}):totable(), x:totable())
end}
cases.BlockGrad = {check = function()
  -- y = BlockGrad(x) * x: dy/dx = x, not 2x.
  local x = mx.nd.array({1, -2, 3}, {dtype = 'float64'})
  x:attach_grad()
  local y = mx.autograd.record(function() return mx.nd.BlockGrad(x) * x end)
  y:backward(mx.nd.ones({3}, {dtype = 'float64'}))
  assert_eq(x.grad:totable(), {1, -2, 3})
  local v = mx.sym.Variable('v')
  local exe = mx.sym.stop_gradient({v}):simple_bind{ctx = mx.cpu(), v = {3}}
  mx.nd.array({4, 5, 6}):copyto(exe.arg_arrays[1])
  exe:forward{is_train = true}
  exe:backward({mx.nd.ones({3})})
  assert_eq(exe.outputs[1]:totable(), {4, 5, 6})
  assert_eq(exe.grad_arrays[1]:totable(), {0, 0, 0})
end}
cases.MakeLoss = {check = function()
  -- The head gradient is ignored: grad_scale, normalised.
  local function grad(params, vals)
    local v = mx.sym.Variable('v')
    local exe = mx.sym.MakeLoss({v}, params):simple_bind{ctx = mx.cpu(), v = {2, 3}}
    mx.nd.array(vals):reshape({2, 3}):copyto(exe.arg_arrays[1])
    exe:forward{is_train = true}
    assert_eq(exe.outputs[1]:reshape({6}):totable(), vals)
    exe:backward({mx.nd.ones({2, 3}) * 7})
    return exe.grad_arrays[1]:reshape({6}):totable()
  end
  local vals = {0.5, -1, 2, 0, 3, -4}
  assert_eq(grad({}, vals), {1, 1, 1, 1, 1, 1})
  assert_eq(grad({grad_scale = 3, normalization = 'batch'}, vals), {1.5, 1.5, 1.5, 1.5, 1.5, 1.5})
  -- 'valid' (MXNet's make_loss-inl.h): grad_scale / max(1, count above
  -- valid_thresh), given to every element.
  assert_eq(grad({grad_scale = 3, normalization = 'valid'}, vals), {1, 1, 1, 1, 1, 1})
  assert_eq(grad({normalization = 'valid', valid_thresh = 1}, vals), {0.5, 0.5, 0.5, 0.5, 0.5, 0.5})
  assert_eq(grad({grad_scale = 2, normalization = 'valid', valid_thresh = 9}, vals), {2, 2, 2, 2, 2, 2})
end}

-- Loss layers: the backward ignores the head gradient (any is given) and is
-- MXNet's formula, checked through the executor and autograd.
local function loss_layer_check(name, params, data, label, want_out, want_grad)
  return function()
    local sym = mx.sym[name]({mx.sym.Variable('data'), mx.sym.Variable('label')}, params)
    local loc = {data = data, label = label}
    tu.check_symbolic_forward(sym, loc, {want_out})
    local out = mx.nd.array(want_out, {dtype = 'float64'})
    local head = mx.nd.ones(out.shape, {dtype = 'float64'}) * 7
    tu.check_symbolic_backward(sym, loc, {head}, {data = want_grad})
    local x = mx.nd.array(data, {dtype = 'float64'})
    x:attach_grad()
    local l = mx.nd.array(label, {dtype = 'float64'})
    local y = mx.autograd.record(function() return mx.nd[name]({x, l}, params) end)
    y:backward(head)
    tu.assert_almost_equal(x.grad, want_grad)
  end
end
do
  local function sm(row)
    local s, out = 0, {}
    for _, v in ipairs(row) do s = s + math.exp(v) end
    for i, v in ipairs(row) do out[i] = math.exp(v) / s end
    return out
  end
  local p1, p2 = sm({1, 2, 3}), sm({1, 1, 1})
  -- grad_scale 2, normalization 'batch' (2 labels): (softmax - one_hot) * 1.
  cases.SoftmaxOutput = {check = loss_layer_check('SoftmaxOutput',
    {grad_scale = 2, normalization = 'batch'}, {{1, 2, 3}, {1, 1, 1}}, {2, 0}, {p1, p2},
    {{p1[1], p1[2], p1[3] - 1}, {p2[1] - 1, p2[2], p2[3]}})}
  local s1 = 1 / (1 + math.exp(-1))
  cases.LinearRegressionOutput = {check = loss_layer_check('LinearRegressionOutput',
    {grad_scale = 0.5}, {{1}, {2}}, {0, 4}, {{1}, {2}}, {{0.5}, {-1}})}
  -- sign(out - label) / 2 values per instance; -1 at a tie as in MXNet.
  cases.MAERegressionOutput = {check = loss_layer_check('MAERegressionOutput', {},
    {{1, 2}, {3, 4}}, {{0, 3}, {3, 5}}, {{1, 2}, {3, 4}}, {{0.5, -0.5}, {-0.5, -0.5}})}
  cases.LogisticRegressionOutput = {check = loss_layer_check('LogisticRegressionOutput', {},
    {{0}, {1}}, {1, 0}, {{0.5}, {s1}}, {{-0.5}, {s1}})}
end
cases.SoftmaxActivation = {{{{2, 3, 2}}}, {mode = 'channel'}}
cases.softmax_cross_entropy = {{{{3, 4}}, {{3}, values = {0, 3, 1}}}, {}, grad = {1}}

-- Neural-network operators (ops/nn): convolution, pooling, normalisation.
-- (cases.Name = {...} lines go here)
cases.Convolution = {{{{2, 4, 5, 4}}, {{6, 2, 3, 2}}, {{6}}},
  {kernel = {3, 2}, num_filter = 6, num_group = 2, pad = {1, 1}, stride = {2, 1}}}
cases.Pooling = {{{{2, 2, 5, 5}}}, {kernel = {3, 3}, stride = {2, 2}, pad = {1, 1},
  pool_type = 'avg', pooling_convention = 'full'}}
-- Training mode: batch statistics; moving_mean and moving_var are auxiliary states.
cases.BatchNorm = {{{{4, 3, 2}}, {{3}, 0.5, 1.5}, {{3}}}, {fix_gamma = false},
  aux = {{{3}}, {{3}, 0.5, 1.5}}}
cases.LayerNorm = {{{{2, 3, 4}}, {{3}, 0.5, 1.5}, {{3}}}, {axis = 2}}
cases.InstanceNorm = {{{{2, 3, 2, 2}}, {{3}, 0.5, 1.5}, {{3}}}}
cases.GroupNorm = {{{{2, 4, 3}}, {{4}, 0.5, 1.5}, {{4}}}, {num_groups = 2}}
cases.Pad = {{{{1, 2, 3, 2}}}, {pad_width = {0, 0, 0, 0, 2, 1, 1, 1}, mode = 'reflect'}}
cases.Deconvolution = {{{{2, 2, 3, 3}}, {{2, 2, 3, 2}}, {{4}}},
  {kernel = {3, 2}, stride = {2, 1}, pad = {1, 0}, adj = {1, 0}, num_filter = 4, num_group = 2,
   no_bias = false}}
cases.LRN = {{{{2, 5, 2, 2}}}, {nsize = 3, alpha = 0.1, beta = 0.75, knorm = 2}}
cases.UpSampling = {{{{1, 2, 2, 3}}}, {scale = 2, sample_type = 'nearest'}}

-- Comparison and logical ops: zero gradients, inputs away from ties.
for _, name in ipairs({'equal', 'not_equal', 'greater', 'greater_equal', 'lesser',
    'lesser_equal', 'logical_and', 'logical_or', 'logical_xor'}) do
  cases['broadcast_' .. name] = {{u(0.1, 0.4), {{1, 3}, 0.6, 0.9}}}
  cases['_' .. name .. '_scalar'] = {{u(0.1, 0.4)}, {scalar = 0.5}}
end

-- Custom: an operator written in Lua (y = a b^2), registered here.
do
  local Op = mx.operator.CustomOp:extend()
  function Op:forward(_, req, i, o) self:assign(o[1], req[1], i[1] * i[2] * i[2]) end
  function Op:backward(req, og, i, _, ig)
    self:assign(ig[1], req[1], og[1] * i[2] * i[2])
    self:assign(ig[2], req[2], og[1] * i[1] * i[2] * 2)
  end
  mx.operator.register('gradient_test_mul_sq', {
    list_arguments = function() return {'a', 'b'} end,
    create_operator = function() return setmetatable({}, Op) end})
  cases.Custom = {{u(), u()}, {op_type = 'gradient_test_mul_sq'}}
end

local function setup(name)
  local c = cases[name]
  -- Each case's values depend on its name only, so adding a case leaves the
  -- others' inputs (and their distance from kinks and ties) as they were.
  seed = 12345
  for k = 1, #name do seed = (seed * 31 + name:byte(k)) % 2147483648 end
  local inputs, vars, grad_names = {}, {}, {}
  for i, spec in ipairs(c[1]) do
    inputs[i] = input(spec)
    vars[i] = mx.sym.Variable('in' .. i)
  end
  for _, i in ipairs(c.grad or {}) do grad_names[#grad_names + 1] = 'in' .. i end
  local params = {}
  for k, v in pairs(c[2] or {}) do params[k] = v end
  local sym = mx.sym[name](vars, params)
  local aux
  if c.aux then
    aux = {}
    for i, spec in ipairs(c.aux) do aux[i] = input(spec) end
  end
  -- mx.nd calls take the auxiliary states as trailing inputs (BatchNorm's
  -- moving_mean, moving_var), as MXNet's nd.BatchNorm.
  local fn = function(...)
    local args = {...}
    for _, a in ipairs(aux or {}) do args[#args + 1] = a end
    return mx.nd[name](args, params)
  end
  return sym, fn, inputs, c.grad and grad_names or nil, c.grad, aux
end

-- Ops whose gradient is checked in another file.
local elsewhere = {
  _CachedOp = 'gluon_test.lua: hybridized blocks against the same blocks op by op',
  _linalg_potrf = 'linalg_test.lua: through a symmetrised input (only one triangle is read)',
  _linalg_syevd = 'linalg_test.lua: through a symmetrised input (only one triangle is read)',
  SVMOutput = 'nn_layers_test.lua: a loss layer (the backward is the hinge gradient, not the '
    .. 'gradient of the output), against MXNet\'s formulas',
  _sample_multinomial = 'random_dist_test.lua: through the log-probabilities of the draws '
    .. '(get_prob), against 1 / p summed over the draws',
  _contrib_Proposal = 'detection_test.lua: zero, as MXNet\'s (proposals are not trained through)',
  _contrib_MultiBoxPrior = 'detection_test.lua: zero by definition (the anchors depend on shapes only)',
  _contrib_MultiBoxTarget = 'detection_test.lua: zero, as MXNet\'s (targets are constants to training)',
  _contrib_MultiBoxDetection = 'detection_test.lua: zero, as MXNet\'s (detections are not trained through)',
  RNN = 'rnn_test.lua: against cells unrolled from basic ops, and central differences',
  CTCLoss = 'ctc_test.lua: against PyTorch and central differences (integer labels get none)',
  shape_array = 'mxnet_rules_test.lua: an int64 output (of the shape), no gradient flows back',
  size_array = 'mxnet_rules_test.lua: an int64 output (of the size), no gradient flows back',
}

test('every operator with a gradient rule has a case here', function()
  local missing = {}
  for _, name in ipairs(mx.sym._ops_with_gradient()) do
    if not cases[name] and not elsewhere[name] then missing[#missing + 1] = name end
  end
  assert_eq(missing, {})
end)

local names = {}
for name in pairs(cases) do names[#names + 1] = name end
table.sort(names)
for _, name in ipairs(names) do
  if cases[name].check then
    test('backward of ' .. name .. ' against known values', cases[name].check)
  else
    test('gradient of ' .. name .. ' through the executor', function()
      local sym, _, inputs, grad_names, _, aux = setup(name)
      for _, req in ipairs({'write', 'add', 'null'}) do
        tu.check_numeric_gradient(sym, inputs, {grad_req = req, grad_nodes = grad_names,
          aux_states = aux})
      end
    end)
    test('gradient of ' .. name .. ' through autograd', function()
      local _, fn, inputs, _, grad_pos = setup(name)
      for _, req in ipairs({'write', 'add'}) do
        tu.check_autograd_gradient(fn, inputs, {grad_req = req, grad_nodes = grad_pos})
      end
    end)
  end
end
