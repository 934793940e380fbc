-- Work on gpu(0): copies, autograd, an MLP checked against the CPU in
-- float32 and float16 (mx.test_utils.check_consistency), and training a
-- Module on the GPU step for step with the CPU. Each test says it skipped
-- where there is no GPU.

local function no_gpu()
  if mx.context.num_gpus() > 0 then return false end
  print('  skipped: no GPU')
  return true
end

local function mlp(hidden, classes)
  local net = mx.sym.FullyConnected{data = mx.sym.Variable('data'), num_hidden = hidden, name = 'fc1'}
  net = mx.sym.Activation{data = net, act_type = 'relu', name = 'relu1'}
  net = mx.sym.FullyConnected{data = net, num_hidden = classes, name = 'fc2'}
  return mx.sym.SoftmaxOutput{data = net, name = 'softmax'}
end

-- Each case {sym, {input = shape, ...}} through check_consistency: float64
-- on the CPU against float32 on the GPU, outputs and gradients.
local function consistent_cases(cases)
  for i, c in ipairs(cases) do
    local cpu = {ctx = mx.cpu(0), type_dict = {}}
    local gpu = {ctx = mx.gpu(0), type_dict = {}}
    for name, shape in pairs(c[2]) do
      cpu[name], gpu[name] = shape, shape
      cpu.type_dict[name], gpu.type_dict[name] = 'float64', 'float32'
    end
    local ok, err = pcall(mx.test_utils.check_consistency, c[1], {cpu, gpu})
    assert(ok, ('case %d: %s'):format(i, tostring(err)))
  end
end

test('copies to the GPU and back are exact, views too', function()
  if no_gpu() then return end
  local a = mx.nd.array({{1, 2, 3}, {4, 5, 6}})
  local g = a:copyto(mx.gpu(0))
  assert_eq(tostring(g.context), 'gpu(0)')
  assert_eq(g:copyto(mx.cpu()):totable(), a:totable())
  assert_eq(g[2]:totable(), {4, 5, 6})
  assert_eq(g:astype('float64'):as_in_context(mx.cpu()):totable(), a:totable())
  local z = mx.nd.zeros({3, 2}, {ctx = mx.gpu(0)})
  assert_eq(z:totable(), {{0, 0}, {0, 0}, {0, 0}})
end)

test('autograd records and differentiates GPU arrays', function()
  if no_gpu() then return end
  local x = mx.nd.array({1, 2, 3}, {ctx = mx.gpu(0)})
  x:attach_grad()
  mx.autograd.record(function()
    local y = (x * x + x):sum()
    y:backward()
  end)
  assert_eq(x.grad:totable(), {3, 5, 7})
  assert_eq(tostring(x.grad.context), 'gpu(0)')
end)

test('an MLP on the GPU matches the CPU, float32 and float16', function()
  if no_gpu() then return end
  mx.test_utils.check_consistency(mlp(32, 10), {
    {ctx = mx.cpu(0), data = {16, 20}, type_dict = {data = 'float64'}},
    {ctx = mx.gpu(0), data = {16, 20}, type_dict = {data = 'float32'}},
  })
  mx.test_utils.check_consistency(mlp(32, 10), {
    {ctx = mx.cpu(0), data = {16, 20}, type_dict = {data = 'float64'}},
    {ctx = mx.gpu(0), data = {16, 20}, type_dict = {data = 'float16'}},
  }, {scale = 0.5})
end)

test('dot and batch_dot on the GPU match the CPU, with their gradients', function()
  if no_gpu() then return end
  local a, b = mx.sym.Variable('a'), mx.sym.Variable('b')
  for _, t in ipairs({{false, false}, {true, false}, {false, true}, {true, true}}) do
    local net = mx.sym.dot{lhs = a, rhs = b, transpose_a = t[1], transpose_b = t[2]}
    local sa = t[1] and {7, 5} or {5, 7}
    local sb = t[2] and {3, 7} or {7, 3}
    mx.test_utils.check_consistency(net, {{ctx = mx.cpu(0), a = sa, b = sb,
      type_dict = {a = 'float64', b = 'float64'}}, {ctx = mx.gpu(0), a = sa, b = sb}})
  end
  local net = mx.sym.batch_dot{lhs = a, rhs = b, transpose_b = true}
  mx.test_utils.check_consistency(net, {{ctx = mx.cpu(0), a = {4, 5, 6}, b = {4, 3, 6},
    type_dict = {a = 'float64', b = 'float64'}}, {ctx = mx.gpu(0), a = {4, 5, 6}, b = {4, 3, 6}}})
end)

test('Convolution on cuDNN matches the CPU: 1-D to 3-D, groups, strides, dilation', function()
  if no_gpu() then return end
  local data = mx.sym.Variable('data')
  local cases = {
    {shape = {2, 3, 9, 9}, kernel = {3, 3}, num_filter = 4, pad = {1, 1}},
    {shape = {2, 4, 10, 8}, kernel = {3, 2}, num_filter = 6, stride = {2, 1}, num_group = 2},
    {shape = {1, 2, 11, 11}, kernel = {3, 3}, num_filter = 2, dilate = {2, 2}, no_bias = true},
    {shape = {3, 2, 15}, kernel = {4}, num_filter = 3, stride = {2}, pad = {1}},
    {shape = {1, 2, 5, 6, 7}, kernel = {2, 3, 2}, num_filter = 3},
    {shape = {2, 4, 7, 7}, kernel = {3, 3}, num_filter = 4, num_group = 4, pad = {1, 1}},
  }
  for i, c in ipairs(cases) do
    local args = {data = data, name = 'conv'}
    for k, v in pairs(c) do if k ~= 'shape' then args[k] = v end end
    local net = mx.sym.Convolution(args)
    local ok, err = pcall(mx.test_utils.check_consistency, net, {
      {ctx = mx.cpu(0), data = c.shape, type_dict = {data = 'float64'}},
      {ctx = mx.gpu(0), data = c.shape, type_dict = {data = 'float32'}},
    })
    assert(ok, ('case %d: %s'):format(i, tostring(err)))
  end
  -- float16 on tensor cores, and cudnn_tune = 'off' (cuDNN's heuristic).
  for _, extra in ipairs({{dtype = 'float16', tune = nil}, {dtype = 'float32', tune = 'off'}}) do
    local net = mx.sym.Convolution{data = data, kernel = {3, 3}, num_filter = 8, pad = {1, 1},
      cudnn_tune = extra.tune, name = 'conv'}
    mx.test_utils.check_consistency(net, {
      {ctx = mx.cpu(0), data = {2, 8, 8, 8}, type_dict = {data = 'float64'}},
      {ctx = mx.gpu(0), data = {2, 8, 8, 8}, type_dict = {data = extra.dtype}},
    }, {scale = 0.5})
  end
  local x = mx.nd.ones({1, 1, 4, 4}, {ctx = mx.gpu(0)})
  assert_error(function()
    mx.nd.Convolution(x, mx.nd.ones({1, 1, 3, 3}, {ctx = mx.gpu(0)}),
      {kernel = {3, 3}, num_filter = 1, no_bias = true, cudnn_off = true}):wait_to_read()
  end, 'cudnn_off')
end)

test('Deconvolution on cuDNN matches the CPU: bias, groups, strides, adj, target_shape',
  function()
  if no_gpu() then return end
  local data = mx.sym.Variable('data')
  local cases = {
    {shape = {2, 3, 5, 5}, kernel = {3, 3}, num_filter = 4, no_bias = false},
    {shape = {2, 4, 4, 6}, kernel = {4, 4}, num_filter = 6, stride = {2, 2}, pad = {1, 1},
     num_group = 2},
    {shape = {1, 2, 5, 5}, kernel = {3, 3}, num_filter = 2, stride = {2, 2}, adj = {1, 1},
     dilate = {1, 2}},
    {shape = {1, 3, 4, 4}, kernel = {4, 4}, num_filter = 2, stride = {2, 2},
     target_shape = {8, 8}, no_bias = false},
    {shape = {3, 2, 7}, kernel = {3}, num_filter = 3, stride = {3}},
    {shape = {1, 2, 3, 4, 3}, kernel = {2, 2, 2}, num_filter = 2, stride = {2, 1, 2}},
  }
  for i, c in ipairs(cases) do
    local args = {data = data, name = 'deconv'}
    for k, v in pairs(c) do if k ~= 'shape' then args[k] = v end end
    local ok, err = pcall(mx.test_utils.check_consistency, mx.sym.Deconvolution(args), {
      {ctx = mx.cpu(0), data = c.shape, type_dict = {data = 'float64'}},
      {ctx = mx.gpu(0), data = c.shape, type_dict = {data = 'float32'}},
    })
    assert(ok, ('case %d: %s'):format(i, tostring(err)))
  end
  -- UpSampling's bilinear mode is a Deconvolution: now on the GPU too.
  local up = mx.sym.UpSampling{data = data, scale = 2, sample_type = 'bilinear', num_filter = 3,
    name = 'up'}
  mx.test_utils.check_consistency(up, {
    {ctx = mx.cpu(0), data = {2, 3, 5, 5}, type_dict = {data = 'float64'}},
    {ctx = mx.gpu(0), data = {2, 3, 5, 5}, type_dict = {data = 'float32'}},
  })
  local x = mx.nd.ones({1, 1, 4, 4}, {ctx = mx.gpu(0)})
  assert_error(function()
    mx.nd.Deconvolution(x, mx.nd.ones({1, 1, 3, 3}, {ctx = mx.gpu(0)}),
      {kernel = {3, 3}, num_filter = 1, cudnn_off = true}):wait_to_read()
  end, 'cudnn_off')
end)

test('Pooling on the GPU matches the CPU: every type and convention', function()
  if no_gpu() then return end
  local data = mx.sym.Variable('data')
  local cases = {
    {shape = {2, 3, 8, 8}, kernel = {2, 2}, stride = {2, 2}, pool_type = 'max'},
    {shape = {2, 3, 9, 9}, kernel = {3, 3}, stride = {2, 2}, pad = {1, 1}, pool_type = 'max'},
    {shape = {2, 3, 9, 9}, kernel = {3, 3}, stride = {2, 2}, pool_type = 'avg',
     pooling_convention = 'full'},
    {shape = {1, 2, 7, 7}, kernel = {3, 3}, pad = {1, 1}, pool_type = 'avg',
     count_include_pad = false},
    {shape = {1, 2, 7, 5}, kernel = {2, 3}, stride = {2, 2}, pool_type = 'sum'},
    {shape = {1, 2, 6, 6}, kernel = {2, 2}, stride = {2, 2}, pool_type = 'lp', p_value = 2},
    {shape = {1, 2, 6, 6}, kernel = {3, 3}, stride = {2, 2}, pool_type = 'lp', p_value = 3},
    {shape = {2, 4, 5, 5}, global_pool = true, pool_type = 'avg'},
    {shape = {2, 4, 5, 5}, global_pool = true, pool_type = 'max', kernel = {1, 1}},
    {shape = {2, 3, 10}, kernel = {3}, stride = {2}, pool_type = 'max', pooling_convention = 'full'},
    {shape = {1, 2, 4, 6, 6}, kernel = {2, 2, 2}, stride = {2, 2, 2}, pool_type = 'avg'},
    {shape = {1, 2, 7, 7}, kernel = {3, 3}, stride = {2, 2}, pool_type = 'max',
     pooling_convention = 'same'},
  }
  for i, c in ipairs(cases) do
    local args = {data = data, name = 'pool'}
    for k, v in pairs(c) do if k ~= 'shape' then args[k] = v end end
    local ok, err = pcall(mx.test_utils.check_consistency, mx.sym.Pooling(args), {
      {ctx = mx.cpu(0), data = c.shape, type_dict = {data = 'float64'}},
      {ctx = mx.gpu(0), data = c.shape, type_dict = {data = 'float32'}},
    })
    assert(ok, ('case %d: %s'):format(i, tostring(err)))
  end
end)

test('BatchNorm on the GPU matches the CPU: training, inference, moving statistics', function()
  if no_gpu() then return end
  local data = mx.sym.Variable('data')
  local cases = {
    {shape = {4, 3, 5, 5}, fix_gamma = false},
    {shape = {6, 4}, fix_gamma = true},
    {shape = {2, 5, 3}, axis = -1, fix_gamma = false, momentum = 0.5},
  }
  for i, c in ipairs(cases) do
    local args = {data = data, name = 'bn'}
    for k, v in pairs(c) do if k ~= 'shape' then args[k] = v end end
    local net = mx.sym.BatchNorm(args)
    for _, req in ipairs({'write', 'null'}) do
      local ok, exes = pcall(mx.test_utils.check_consistency, net, {
        {ctx = mx.cpu(0), data = c.shape, type_dict = {data = 'float64'}},
        {ctx = mx.gpu(0), data = c.shape, type_dict = {data = 'float32'}},
      }, {grad_req = req})
      assert(ok, ('case %d (%s): %s'):format(i, req, tostring(exes)))
      for _, name in ipairs({'bn_moving_mean', 'bn_moving_var'}) do
        mx.test_utils.assert_almost_equal(exes[2].aux_dict[name], exes[1].aux_dict[name],
          {names = {name .. ' on gpu(0)', 'on cpu(0)'}})
      end
    end
  end
end)

test('Dropout on the GPU draws the same mask as the CPU for one seed', function()
  if no_gpu() then return end
  local x = mx.nd.random.uniform(1, 2, {8, 33})
  local function masked(ctx, axes)
    mx.random.seed(11)
    local xc = x:as_in_context(ctx)
    xc:attach_grad()
    local y
    mx.autograd.record(function()
      y = mx.nd.Dropout(xc, {p = 0.3, axes = axes})
      y:backward(mx.nd.ones(y.shape, {ctx = ctx}))
    end)
    return y:as_in_context(mx.cpu()), xc.grad:as_in_context(mx.cpu())
  end
  for _, axes in ipairs({{}, {1}}) do
    local yc, gc = masked(mx.cpu(), axes)
    local yg, gg = masked(mx.gpu(0), axes)
    mx.test_utils.assert_almost_equal(yg, yc, {names = {'Dropout on gpu(0)', 'on cpu(0)'}})
    mx.test_utils.assert_almost_equal(gg, gc, {names = {'its gradient on gpu(0)', 'on cpu(0)'}})
  end
end)

test('Embedding and the regression outputs on the GPU match the CPU', function()
  if no_gpu() then return end
  local idx = mx.nd.array({{0, 3, 9, 3}, {12, -1, 2.5, 3}})  -- repeats, and clipped ones
  local emb = mx.sym.Embedding{data = mx.sym.Variable('data'), input_dim = 10, output_dim = 5,
    name = 'emb'}
  mx.test_utils.check_consistency(emb, {
    {ctx = mx.cpu(0), data = {2, 4}}, {ctx = mx.gpu(0), data = {2, 4}},
  }, {arg_params = {data = idx}})
  for _, op in ipairs({'LinearRegressionOutput', 'MAERegressionOutput',
                       'LogisticRegressionOutput'}) do
    local net = mx.sym[op]{data = mx.sym.Variable('data'), grad_scale = 2, name = 'reg'}
    mx.test_utils.check_consistency(net, {
      {ctx = mx.cpu(0), data = {6, 3}, type_dict = {data = 'float64'}},
      {ctx = mx.gpu(0), data = {6, 3}},
    })
  end
end)

test('LayerNorm, InstanceNorm and GroupNorm on the GPU match the CPU', function()
  if no_gpu() then return end
  local data = mx.sym.Variable('data')
  local cases = {
    {op = 'LayerNorm', shape = {4, 6, 10}},
    {op = 'LayerNorm', shape = {3, 5, 7}, axis = 1},
    {op = 'InstanceNorm', shape = {2, 3, 4, 5}},
    {op = 'GroupNorm', shape = {2, 6, 3, 3}, num_groups = 3},
  }
  for i, c in ipairs(cases) do
    local args = {data = data, name = 'norm'}
    for k, v in pairs(c) do if k ~= 'shape' and k ~= 'op' then args[k] = v end end
    local ok, err = pcall(mx.test_utils.check_consistency, mx.sym[c.op](args), {
      {ctx = mx.cpu(0), data = c.shape, type_dict = {data = 'float64'}},
      {ctx = mx.gpu(0), data = c.shape, type_dict = {data = 'float32'}},
    })
    assert(ok, ('case %d (%s): %s'):format(i, c.op, tostring(err)))
  end
end)

test('LeakyReLU on the GPU matches the CPU, the slopes rrelu draws included', function()
  if no_gpu() then return end
  local data = mx.sym.Variable('data')
  for _, act in ipairs({'leaky', 'elu', 'selu', 'gelu', 'prelu'}) do
    local net = mx.sym.LeakyReLU{data = data, act_type = act, slope = 0.3, name = 'act'}
    local ok, err = pcall(mx.test_utils.check_consistency, net, {
      {ctx = mx.cpu(0), data = {4, 3, 5}, type_dict = {data = 'float64'}},
      {ctx = mx.gpu(0), data = {4, 3, 5}, type_dict = {data = 'float32'}},
    })
    assert(ok, act .. ': ' .. tostring(err))
  end
  local x = mx.nd.random.uniform(-1, 1, {6, 7})
  local function rrelu(ctx, train)
    mx.random.seed(5)
    local xc = x:as_in_context(ctx)
    xc:attach_grad()
    local y
    mx.autograd.record(function()
      y = mx.nd.LeakyReLU(xc, {act_type = 'rrelu'})
      y:backward(mx.nd.ones(y.shape, {ctx = ctx}))
    end, train)
    return y:as_in_context(mx.cpu()), xc.grad:as_in_context(mx.cpu())
  end
  for _, train in ipairs({true, false}) do
    local yc, gc = rrelu(mx.cpu(), train)
    local yg, gg = rrelu(mx.gpu(0), train)
    mx.test_utils.assert_almost_equal(yg, yc, {names = {'rrelu on gpu(0)', 'on cpu(0)'}})
    mx.test_utils.assert_almost_equal(gg, gc, {names = {'its gradient on gpu(0)', 'on cpu(0)'}})
  end
end)

test('SequenceMask, SequenceLast and SequenceReverse on the GPU match the CPU', function()
  if no_gpu() then return end
  local data, len = mx.sym.Variable('data'), mx.sym.Variable('len')
  local lengths = mx.nd.array({3, 1, 4})
  for _, op in ipairs({'SequenceMask', 'SequenceLast', 'SequenceReverse'}) do
    for _, axis in ipairs({0, 1}) do
      if not (op == 'SequenceReverse' and axis == 1) then
        local shape = axis == 0 and {4, 3, 2} or {3, 4, 2}
        for _, use in ipairs({false, true}) do
          local args = {data = data, axis = axis + 1, use_sequence_length = use, value = -2,
            name = 'seq'}
          if op ~= 'SequenceMask' then args.value = nil end
          if use then args.sequence_length = len end
          local entry = {data = shape}
          if use then entry.len = {3} end
          local cpu, gpu = {ctx = mx.cpu(0), type_dict = {data = 'float64'}}, {ctx = mx.gpu(0)}
          if use then cpu.type_dict.len = 'float64' end
          for k, v in pairs(entry) do cpu[k], gpu[k] = v, v end
          local ok, err = pcall(mx.test_utils.check_consistency, mx.sym[op](args), {cpu, gpu},
            {arg_params = use and {len = lengths} or nil})
          assert(ok, ('%s axis %d lengths %s: %s'):format(op, axis, tostring(use), tostring(err)))
        end
      end
    end
  end
end)

test('a Gluon network trains on the GPU step for step with the CPU, hybridized or not', function()
  if no_gpu() then return end
  local gluon, nn = mx.gluon, mx.gluon.nn
  local x = mx.nd.random.uniform(0, 1, {8, 3, 8, 8})
  local y = mx.nd.array({0, 1, 2, 3, 0, 1, 2, 3})
  local function make()
    local net = nn.HybridSequential()
    net:add(nn.Conv2D(6, 3, {padding = 1}), nn.BatchNorm(), nn.Activation('relu'),
      nn.MaxPool2D(2, {strides = 2}), nn.Flatten(), nn.Dense(4))
    return net
  end
  for _, hybrid in ipairs({false, true}) do
    mx.random.seed(7)
    local nets, params, start = {}, {}, nil
    for i, ctx in ipairs({mx.cpu(), mx.gpu(0)}) do
      local net = make()
      net:initialize(mx.init.Xavier(), mx.cpu())
      net(x)  -- the shapes, then the same values on both
      if i == 2 then  -- the CPU network's initial values, in the same order
        local mine = net:collect_params():values()
        for k, a in ipairs(start) do mine[k]:set_data(a) end
        net:collect_params():reset_ctx(ctx)
      else
        start = {}
        for _, p in ipairs(net:collect_params():values()) do start[#start + 1] = p:data():copy() end
      end
      if hybrid then net:hybridize() end
      local trainer = gluon.Trainer(net:collect_params(), 'sgd',
        {learning_rate = 0.1, momentum = 0.9})
      local loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
      local xc, yc = x:as_in_context(ctx), y:as_in_context(ctx)
      for _ = 1, 3 do
        local loss = mx.autograd.record(function() return loss_fn(net(xc), yc) end)
        loss:backward()
        trainer:step(8)
      end
      nets[i] = net
      params[i] = {}
      for _, p in ipairs(net:collect_params():values()) do
        params[i][#params[i] + 1] = p:data():as_in_context(mx.cpu())
      end
    end
    for k, a in ipairs(params[1]) do
      mx.test_utils.assert_almost_equal(params[2][k], a, {rtol = 1e-3, atol = 1e-4,
        names = {('parameter %d on gpu(0) (hybrid %s)'):format(k, tostring(hybrid)), 'on cpu(0)'}})
    end
  end
end)

test('softmax_cross_entropy on the GPU matches the CPU; a bad label is an error', function()
  if no_gpu() then return end
  local net = mx.sym.softmax_cross_entropy{data = mx.sym.Variable('data'),
    label = mx.sym.Variable('label')}
  mx.test_utils.check_consistency(net, {
    {ctx = mx.cpu(0), data = {5, 7}, label = {5}, type_dict = {data = 'float64', label = 'float64'}},
    {ctx = mx.gpu(0), data = {5, 7}, label = {5}},
  }, {arg_params = {label = mx.nd.array({0, 6, 3, 3, 1})}})
  local x = mx.nd.ones({2, 3}, {ctx = mx.gpu(0)})
  assert_error(function()
    mx.nd.softmax_cross_entropy(x, mx.nd.array({1, 3}, {ctx = mx.gpu(0)})):wait_to_read()
  end, 'row 1')
end)

test('Pad on the GPU matches the CPU in every mode', function()
  if no_gpu() then return end
  for _, mode in ipairs({'constant', 'edge', 'reflect'}) do
    local net = mx.sym.Pad{data = mx.sym.Variable('data'), mode = mode, constant_value = 0.5,
      pad_width = {0, 0, 1, 0, 2, 1, 1, 2}}
    local ok, err = pcall(mx.test_utils.check_consistency, net, {
      {ctx = mx.cpu(0), data = {2, 2, 4, 3}, type_dict = {data = 'float64'}},
      {ctx = mx.gpu(0), data = {2, 2, 4, 3}},
    })
    assert(ok, mode .. ': ' .. tostring(err))
  end
end)

test('cumsum and Crop on the GPU match the CPU, with their gradients', function()
  if no_gpu() then return end
  local data = mx.sym.Variable('data')
  local nets = {
    cumsum_flat = mx.sym.cumsum{a = data},
    cumsum_axis1 = mx.sym.cumsum{a = data, axis = 1},
    cumsum_axis3 = mx.sym.cumsum{a = data, axis = 3},
    crop = mx.sym.Crop{data, num_args = 1, h_w = {2, 3}, offset = {1, 2}},
    crop_centre = mx.sym.Crop{data, num_args = 1, h_w = {3, 3}, center_crop = true},
  }
  for name, net in pairs(nets) do
    local ok, err = pcall(mx.test_utils.check_consistency, net, {
      {ctx = mx.cpu(0), data = {2, 3, 4, 6}, type_dict = {data = 'float64'}},
      {ctx = mx.gpu(0), data = {2, 3, 4, 6}},
    })
    assert(ok, name .. ': ' .. tostring(err))
  end
  local a = mx.nd.array({{1, 2, 3}, {4, 5, 6}}, {ctx = mx.gpu(0), dtype = 'int32'})
  assert_eq(mx.nd.cumsum(a, {axis = 2}):totable(), {{1, 3, 6}, {4, 9, 15}})
  assert_eq(mx.nd.cumsum(a, {dtype = 'float64'}):totable(), {1, 3, 6, 10, 15, 21})
  -- Floats into an integer dtype wrap as Cast's do (NumPy's), on both devices.
  local f = mx.nd.array({-1.5, 2.7, -3.2})
  assert_eq(mx.nd.cumsum(f:as_in_context(mx.gpu(0)), {dtype = 'uint8'}):totable(),
    mx.nd.cumsum(f, {dtype = 'uint8'}):totable())
  assert_eq(mx.nd.cumsum(f, {dtype = 'uint8'}):totable(), {255, 1, 254})
end)

test('gather_nd and scatter_nd on the GPU match the CPU, repeated tuples too', function()
  if no_gpu() then return end
  mx.random.seed(3)
  local data = mx.nd.random.uniform(-1, 1, {4, 3, 5})
  local idx = mx.nd.array({{0, 3, 3, 1, -1}, {2, 0, 0, 1, 2}})   -- (3, 0) twice; -1 counts back
  local slices = mx.nd.random.uniform(-1, 1, {5, 5})
  local function run(ctx)
    local d = data:as_in_context(ctx)
    d:attach_grad()
    local y
    mx.autograd.record(function()
      y = mx.nd.gather_nd(d, idx:as_in_context(ctx))
      y:backward(mx.nd.ones({5, 5}, {ctx = ctx}) * 2)
    end)
    local s = mx.nd.scatter_nd(slices:as_in_context(ctx), idx:as_in_context(ctx), {shape = {4, 3, 5}})
    return y:copyto(mx.cpu()), d.grad:copyto(mx.cpu()), s:copyto(mx.cpu())
  end
  local gy, gd, gs = run(mx.gpu(0))
  local cy, cd, cs = run(mx.cpu())
  mx.test_utils.assert_almost_equal(gy, cy, {names = {'gather_nd on gpu(0)', 'on cpu(0)'}})
  mx.test_utils.assert_almost_equal(gd, cd, {names = {'its gradient on gpu(0)', 'on cpu(0)'}})
  mx.test_utils.assert_almost_equal(gs, cs, {names = {'scatter_nd on gpu(0)', 'on cpu(0)'}})
  assert_error(function()
    mx.nd.gather_nd(data:as_in_context(mx.gpu(0)),
      mx.nd.array({{4}, {0}}, {ctx = mx.gpu(0)})):wait_to_read()
  end, 'out of range')
end)

test('take\'s gradient on the GPU adds repeated rows in the CPU\'s order, every mode and axis',
  function()
  if no_gpu() then return end
  mx.random.seed(4)
  local data = mx.nd.random.uniform(-1, 1, {3, 4, 5})
  local idx = mx.nd.array({{1, 3, 1}, {-1, 7, 1}})   -- 1 three times; -1 and 7 clip or wrap
  for _, c in ipairs({{'clip', 1}, {'wrap', 2}, {'clip', 3}}) do
    local mode, axis = c[1], c[2]
    local function run(ctx)
      local d = data:as_in_context(ctx)
      d:attach_grad()
      local y
      mx.autograd.record(function()
        y = mx.nd.take(d, idx:as_in_context(ctx), {axis = axis, mode = mode})
        y:backward(mx.nd.arange(0, y.size, 1, {ctx = ctx}):reshape(y.shape))
      end)
      return y:copyto(mx.cpu()), d.grad:copyto(mx.cpu())
    end
    local gy, gd = run(mx.gpu(0))
    local cy, cd = run(mx.cpu())
    local what = ('take (mode %s, axis %d)'):format(mode, axis)
    mx.test_utils.assert_almost_equal(gy, cy, {names = {what .. ' on gpu(0)', 'on cpu(0)'}})
    mx.test_utils.assert_almost_equal(gd, cd, {names = {'its gradient on gpu(0)', 'on cpu(0)'}})
  end
  assert_error(function()
    local d = data:as_in_context(mx.gpu(0))
    d:attach_grad()
    mx.autograd.record(function()
      local y = mx.nd.take(d, mx.nd.array({0, 1}, {ctx = mx.gpu(0)}), {mode = 'raise'})
      y:backward(mx.nd.ones(y.shape, {ctx = mx.gpu(0)}))
    end)
    mx.nd.take(d, mx.nd.array({3}, {ctx = mx.gpu(0)}), {mode = 'raise'}):wait_to_read()
  end, 'out of range')
end)

test('SVMOutput on the GPU matches the CPU, L1 and L2; a bad label is an error', function()
  if no_gpu() then return end
  mx.random.seed(5)
  local data = mx.nd.random.uniform(-2, 2, {6, 4})
  local label = mx.nd.array({0, 3, 1, 2, 2, 0})
  for _, linear in ipairs({false, true}) do
    local function run(ctx)
      local x = data:as_in_context(ctx)
      x:attach_grad()
      local y
      mx.autograd.record(function()
        y = mx.nd.SVMOutput(x, label:as_in_context(ctx), {margin = 0.7, use_linear = linear,
          regularization_coefficient = 1.5})
        y:backward()
      end)
      return y:copyto(mx.cpu()), x.grad:copyto(mx.cpu())
    end
    local gy, gg = run(mx.gpu(0))
    local cy, cg = run(mx.cpu())
    mx.test_utils.assert_almost_equal(gy, cy, {names = {'SVMOutput on gpu(0)', 'on cpu(0)'}})
    mx.test_utils.assert_almost_equal(gg, cg, {names = {'its gradient on gpu(0)', 'on cpu(0)'}})
  end
  assert_error(function()
    local x = data:as_in_context(mx.gpu(0))
    x:attach_grad()
    mx.autograd.record(function()
      mx.nd.SVMOutput(x, mx.nd.array({0, 4, 1, 2, 2, 0}, {ctx = mx.gpu(0)})):backward()
    end)
    x.grad:wait_to_read()
  end, 'label%[1%] = 4 is not a class')
end)

test('BlockGrad, MakeLoss and SoftmaxActivation on the GPU match the CPU', function()
  if no_gpu() then return end
  local data = mx.sym.Variable('data')
  local nets = {
    mx.sym.BlockGrad{data = data} * data,
    mx.sym.MakeLoss{data = data, grad_scale = 2},
    mx.sym.MakeLoss{data = data, normalization = 'batch'},
    mx.sym.MakeLoss{data = data, normalization = 'valid', valid_thresh = 0.1},
    mx.sym.SoftmaxActivation{data = data},
    mx.sym.SoftmaxActivation{data = data, mode = 'channel'},
  }
  for i, net in ipairs(nets) do
    local ok, err = pcall(mx.test_utils.check_consistency, net, {
      {ctx = mx.cpu(0), data = {3, 4, 5}, type_dict = {data = 'float64'}},
      {ctx = mx.gpu(0), data = {3, 4, 5}},
    })
    assert(ok, ('net %d: %s'):format(i, tostring(err)))
  end
end)

test('a Module trains on the GPU step for step with the CPU', function()
  if no_gpu() then return end
  mx.random.seed(3)
  local n, d, c = 64, 12, 4
  local x = mx.nd.random.uniform(-1, 1, {n, d})
  local y = mx.nd.array((function()
    local t = {}
    for i = 1, n do t[i] = (i * 7) % c end
    return t
  end)())
  local function run(ctx, init)
    local it = mx.io.NDArrayIter{data = x, label = y, batch_size = 16}
    local mod = mx.mod.Module(mlp(16, c), {context = ctx})
    mod:bind{data_shapes = it.provide_data, label_shapes = it.provide_label}
    if init then
      mod:set_params(init)
    else
      mod:init_params{initializer = mx.init.Xavier()}
    end
    mod:init_optimizer{optimizer = 'sgd', optimizer_params = {learning_rate = 0.2, momentum = 0.9}}
    local start = mod:get_params()
    for _ = 1, 3 do
      it:reset()
      for batch in function() return it:next() end do
        mod:forward(batch, true)
        mod:backward()
        mod:update()
      end
    end
    return mod:get_params(), start
  end
  local cpu_params, start = run(mx.cpu())
  local gpu_params = run(mx.gpu(0), start)
  for name, arr in pairs(cpu_params) do
    mx.test_utils.assert_almost_equal(gpu_params[name], arr, {rtol = 1e-4, atol = 1e-5,
      names = {name .. ' on gpu(0)', 'on cpu(0)'}})
  end
end)

test('host_syncs: a Module step on data already on the GPU waits for no stream; take does',
  function()
  if no_gpu() then return end
  local ctx = mx.gpu(0)
  local mod = mx.mod.Module(mlp(16, 4), {context = ctx})
  mod:bind{data_shapes = {{name = 'data', shape = {16, 12}}},
    label_shapes = {{name = 'softmax_label', shape = {16}}}}
  mod:init_params{initializer = mx.init.Xavier()}
  mod:init_optimizer{optimizer = 'sgd', optimizer_params = {learning_rate = 0.1, momentum = 0.9}}
  local labels = {}
  for i = 1, 16 do labels[i] = i % 4 end
  local batch = {data = {mx.nd.random.uniform(-1, 1, {16, 12}):as_in_context(ctx)},
    label = {mx.nd.array(labels):as_in_context(ctx)}}
  local function step()
    mod:forward(batch, true)
    mod:backward()
    mod:update()
  end
  step()
  mx.nd.waitall()
  local before = mx.profiler.host_syncs()
  for _ = 1, 3 do step() end
  mx.nd.waitall()
  assert_eq(mx.profiler.host_syncs(), before)
  -- take in mode 'raise' checks its indices on the host: a wait, in the trace.
  local a = mx.nd.ones({4, 3}, {ctx = ctx})
  local idx = mx.nd.array({0, 2}, {ctx = ctx})
  mx.profiler.set_state('run')
  mx.nd.take(a, idx, {mode = 'raise'}):wait_to_read()
  mx.profiler.set_state('stop')
  assert(mx.profiler.host_syncs() > before, 'take did not count its wait')
  local trace = mx.profiler.dumps_trace()
  mx.profiler.clear()
  assert(trace:find('host sync: op values to the host', 1, true), 'no host sync span in the trace')
end)

test('L2Normalization, LRN, UpSampling and moments on the GPU match the CPU, with gradients',
  function()
  if no_gpu() then return end
  local data = mx.sym.Variable('data')
  local cases = {
    {mx.sym.L2Normalization{data = data, mode = 'instance'}, {3, 4, 5, 6}},
    {mx.sym.L2Normalization{data = data, mode = 'channel'}, {3, 4, 5, 6}},
    {mx.sym.L2Normalization{data = data, mode = 'spatial', eps = 1e-4}, {3, 4, 5, 6}},
    {mx.sym.L2Normalization{data = data, mode = 'instance'}, {2, 70000}},  -- long rows
    {mx.sym.LRN{data = data, nsize = 5, alpha = 0.3, beta = 0.6, knorm = 1.5}, {2, 7, 3, 5}},
    {mx.sym.LRN{data = data, nsize = 4}, {2, 6, 9}},
    {mx.sym.UpSampling{data = data, scale = 3, sample_type = 'nearest'}, {2, 3, 4, 5}},
    {mx.sym.moments{data = data, axes = {1, 3}}, {4, 3, 5, 2}},
    {mx.sym.moments{data = data, axes = {2}, keepdims = true}, {3, 3000}},
  }
  for i, c in ipairs(cases) do
    local ok, err = pcall(mx.test_utils.check_consistency, c[1], {
      {ctx = mx.cpu(0), data = c[2], type_dict = {data = 'float64'}},
      {ctx = mx.gpu(0), data = c[2], type_dict = {data = 'float32'}},
    })
    assert(ok, ('case %d: %s'):format(i, tostring(err)))
  end
  -- float16 LRN and UpSampling: the CPU's float16 kernels, summing in float.
  local x = mx.nd.random.uniform(-2, 2, {2, 5, 4, 4}):astype('float16')
  for _, f in ipairs({function(a) return mx.nd.LRN(a, {nsize = 3}) end,
                      function(a) return mx.nd.UpSampling(a, {scale = 2, sample_type = 'nearest'}) end}) do
    mx.test_utils.assert_almost_equal(f(x:copyto(mx.gpu(0))):copyto(mx.cpu()), f(x),
      {rtol = 1e-3, atol = 1e-3})
  end
end)

test('GridGenerator, BilinearSampler and SpatialTransformer on the GPU match the CPU',
  function()
  if no_gpu() then return end
  local V = mx.sym.Variable
  local cases = {
    {mx.sym.GridGenerator{data = V('data'), transform_type = 'affine', target_shape = {5, 7}},
     {data = {3, 6}}},
    {mx.sym.GridGenerator{data = V('data'), transform_type = 'warp'}, {data = {2, 2, 4, 5}}},
    {mx.sym.BilinearSampler{data = V('data'), grid = V('grid')},
     {data = {2, 3, 6, 5}, grid = {2, 2, 4, 7}}},
    {mx.sym.SpatialTransformer{data = V('data'), loc = V('loc'), target_shape = {4, 6},
      transform_type = 'affine', sampler_type = 'bilinear'}, {data = {2, 3, 5, 5}, loc = {2, 6}}},
  }
  consistent_cases(cases)
end)

test('AdaptiveAvgPooling2D, BilinearResize2D, im2col, col2im and Correlation on the GPU',
  function()
  if no_gpu() then return end
  local data = mx.sym.Variable('data')
  local cases = {
    mx.sym.contrib.AdaptiveAvgPooling2D{data = data, output_size = {3, 4}},  -- overlapping bins
    mx.sym.contrib.AdaptiveAvgPooling2D{data = data},
    mx.sym.contrib.BilinearResize2D{data = data, height = 9, width = 4},
    mx.sym.contrib.BilinearResize2D{data = data, height = 3, width = 11, align_corners = false},
    mx.sym.im2col{data = data, kernel = {3, 2}, stride = {2, 1}, dilate = {1, 2}, pad = {1, 0}},
    mx.sym.col2im{data = mx.sym.im2col{data = data, kernel = {2, 2}, stride = {1, 2}},
      kernel = {2, 2}, stride = {1, 2}, output_size = {7, 5}},
    mx.sym.Correlation{data1 = data, data2 = data * 0.5 + 0.1, max_displacement = 1,
      stride1 = 2, kernel_size = 3, pad_size = 2},
    mx.sym.Correlation{data1 = data, data2 = data * 0.5 + 0.1, max_displacement = 2,
      stride2 = 2, pad_size = 2, is_multiply = false},
  }
  for i, net in ipairs(cases) do
    local ok, err = pcall(mx.test_utils.check_consistency, net, {
      {ctx = mx.cpu(0), data = {2, 3, 7, 5}, type_dict = {data = 'float64'}},
      {ctx = mx.gpu(0), data = {2, 3, 7, 5}, type_dict = {data = 'float32'}},
    })
    assert(ok, ('case %d: %s'):format(i, tostring(err)))
  end
end)

test('CTCLoss on the GPU matches the CPU: lengths, both blanks, repeats; bad labels are errors',
  function()
  if no_gpu() then return end
  local T, N, C = 12, 4, 6
  local data = mx.nd.random.uniform(-2, 2, {T, N, C})
  local cases = {
    {{{1, 2, 2, 0}, {3, 0, 0, 0}, {5, 4, 3, 2}, {1, 1, 1, 1}}, {}},
    {{{1, 2, 2, -1}, {3, -1, -1, -1}, {0, 4, 3, 2}, {1, 1, -1, -1}}, {blank_label = 'last'}},
    {{{1, 2, 2, 5}, {3, 3, 3, 3}, {5, 4, 3, 2}, {1, 1, 1, 1}},
     {use_data_lengths = true, use_label_lengths = true},
     {12, 7, 9, 1}, {3, 1, 4, 4}},  -- the last label too long for its one step: infinite
  }
  for i, c in ipairs(cases) do
    local function run(ctx)
      local x = data:copyto(ctx)
      x:attach_grad()
      local inputs = {x, mx.nd.array(c[1], {ctx = ctx})}
      if c[3] then
        inputs[3] = mx.nd.array(c[3], {ctx = ctx})
        inputs[4] = mx.nd.array(c[4], {ctx = ctx})
      end
      local loss = mx.autograd.record(function() return mx.nd.CTCLoss(inputs, c[2]) end)
      loss:backward(mx.nd.array({1, 0.5, 2, 1}, {ctx = ctx}))
      return loss:copyto(mx.cpu()), x.grad:copyto(mx.cpu())
    end
    local lc, gc = run(mx.cpu(0))
    local lg, gg = run(mx.gpu(0))
    mx.test_utils.assert_almost_equal(lg, lc, {rtol = 1e-5, atol = 1e-5,
      names = {('case %d loss on gpu(0)'):format(i), 'on cpu(0)'}})
    mx.test_utils.assert_almost_equal(gg, gc, {rtol = 1e-5, atol = 1e-5,
      names = {('case %d gradient on gpu(0)'):format(i), 'on cpu(0)'}})
  end
  assert_error(function()
    mx.nd.CTCLoss({data:copyto(mx.gpu(0)), mx.nd.array({{1, 9}, {1, 1}, {1, 1}, {1, 1}},
      {ctx = mx.gpu(0)})}):wait_to_read()
  end, 'is not a class of 6')
end)

test('ROIPooling and ROIAlign on the GPU match the CPU, gradients too; a bad box is an error',
  function()
  if no_gpu() then return end
  local x = mx.nd.random.uniform(-1, 1, {2, 8, 5, 6})
  local boxes = mx.nd.array({{1, 0.2, 0.3, 3.6, 4.1}, {0, 1.1, 0.4, 4.7, 3.2},
    {1, 0.5, 0.6, 3.5, 3.9}, {-1, 0, 0, 1, 1}})
  local calls = {
    function(d, r) return mx.nd.ROIPooling(d, r, {pooled_size = {2, 3}, spatial_scale = 1}) end,
    function(d, r) return mx.nd.contrib.ROIAlign(d, r, {pooled_size = {2, 2}, spatial_scale = 1,
      sample_ratio = 2}) end,
    function(d, r) return mx.nd.contrib.ROIAlign(d, r, {pooled_size = {2, 2}, spatial_scale = 0.5,
      position_sensitive = true, aligned = true}) end,
  }
  for i, f in ipairs(calls) do
    local function run(ctx)
      local d = x:copyto(ctx)
      d:attach_grad()
      local y = mx.autograd.record(function() return f(d, boxes:copyto(ctx)) end)
      y:backward(mx.nd.ones(y.shape, {ctx = ctx}) * 0.5)
      return y:copyto(mx.cpu()), d.grad:copyto(mx.cpu())
    end
    local yc, gc = run(mx.cpu(0))
    local yg, gg = run(mx.gpu(0))
    mx.test_utils.assert_almost_equal(yg, yc, {names = {('call %d on gpu(0)'):format(i), 'cpu(0)'}})
    mx.test_utils.assert_almost_equal(gg, gc, {names = {('call %d gradient on gpu(0)'):format(i),
      'cpu(0)'}})
  end
  assert_error(function()
    mx.nd.contrib.ROIAlign(x:copyto(mx.gpu(0)), mx.nd.array({{2, 0, 0, 1, 1}}, {ctx = mx.gpu(0)}),
      {pooled_size = {2, 2}, spatial_scale = 1}):wait_to_read()
  end, 'names image 2')
end)

test('sample_multinomial on the GPU draws the CPU\'s classes for one seed, gradients too',
  function()
  if no_gpu() then return end
  local prob = mx.nd.softmax(mx.nd.random.uniform(-2, 2, {5, 7}))
  local function draw(ctx)
    mx.random.seed(23)
    local p = prob:as_in_context(ctx)
    p:attach_grad()
    local cls, lp
    mx.autograd.record(function()
      cls, lp = mx.nd.sample_multinomial(p, {shape = {40}, get_prob = true, dtype = 'int64'})
      lp:backward(mx.nd.ones(lp.shape, {ctx = ctx}))
    end)
    return cls:as_in_context(mx.cpu()), lp:as_in_context(mx.cpu()), p.grad:as_in_context(mx.cpu())
  end
  local cc, lc, gc = draw(mx.cpu())
  local cg, lg, gg = draw(mx.gpu(0))
  assert_eq(cg:totable(), cc:totable())
  mx.test_utils.assert_almost_equal(lg, lc, {names = {'log-probabilities on gpu(0)', 'cpu(0)'}})
  mx.test_utils.assert_almost_equal(gg, gc, {names = {'gradient on gpu(0)', 'cpu(0)'}})
  assert_error(function()
    mx.nd.sample_multinomial(mx.nd.array({{0.5, -0.1, 0.6}}, {ctx = mx.gpu(0)})):wait_to_read()
  end, 'is negative')
end)

test('the samplers on the GPU draw the CPU\'s values for one seed, and check their parameters',
  function()
  if no_gpu() then return end
  local scalar = {
    {'random_exponential', {lam = 2}}, {'random_gamma', {alpha = 0.5, beta = 2}},
    {'random_gamma', {alpha = 3, beta = 0.5}}, {'random_poisson', {lam = 3}},
    {'random_poisson', {lam = 50}}, {'random_negative_binomial', {k = 3, p = 0.4}},
    {'random_generalized_negative_binomial', {mu = 2, alpha = 0.5}},
  }
  local function draw(ctx, f)
    mx.random.seed(31)
    return f(ctx):as_in_context(mx.cpu())
  end
  local function same(name, f)
    local c, g = draw(mx.cpu(), f), draw(mx.gpu(0), f)
    mx.test_utils.assert_almost_equal(g, c, {rtol = 1e-9, atol = 1e-12,
                                             names = {name .. ' on gpu(0)', 'on cpu(0)'}})
  end
  for _, c in ipairs(scalar) do
    for _, dtype in ipairs({'float64', 'float32'}) do
      same(c[1] .. ' ' .. dtype, function(ctx)
        local kw = {shape = {3000}, dtype = dtype, ctx = tostring(ctx)}
        for k, v in pairs(c[2]) do kw[k] = v end
        return mx.nd[c[1]](kw)
      end)
    end
  end
  local rows = {
    {'sample_uniform', {{0, -1, 2}, {1, 1, 2.5}}}, {'sample_normal', {{0, 3, -1}, {1, 0.5, 2}}},
    {'sample_exponential', {{1, 4, 0.5}}}, {'sample_gamma', {{0.5, 2, 9}, {1, 0.5, 3}}},
    {'sample_poisson', {{0, 4, 40}}}, {'sample_negative_binomial', {{2, 5, 1}, {0.3, 0.9, 1}}},
    {'sample_generalized_negative_binomial', {{3, 12, 0}, {0.2, 0, 1}}},
  }
  for _, c in ipairs(rows) do
    same(c[1], function(ctx)
      local args = {}
      for i, v in ipairs(c[2]) do args[i] = mx.nd.array(v, {ctx = ctx, dtype = 'float64'}) end
      args[#args + 1] = {shape = {2, 400}}
      return mx.nd[c[1]](unpack(args))
    end)
  end
  assert_error(function()
    mx.nd.sample_gamma(mx.nd.array({1, -2}, {ctx = mx.gpu(0)}),
                       mx.nd.array({1, 1}, {ctx = mx.gpu(0)})):wait_to_read()
  end, 'in parameter row 1')
  assert_error(function()
    mx.nd.sample_poisson(mx.nd.array({1, 0 / 0}, {ctx = mx.gpu(0)})):wait_to_read()
  end, 'parameters must be finite')
end)

test('box_iou on the GPU matches the CPU in both formats', function()
  if no_gpu() then return end
  local a = mx.nd.random.uniform(0, 1, {2, 3, 4})
  local b = mx.nd.random.uniform(0, 1, {5, 4})
  for _, format in ipairs({'corner', 'center'}) do
    local want = mx.nd.contrib.box_iou(a, b, {format = format})
    local got = mx.nd.contrib.box_iou(a:copyto(mx.gpu(0)), b:copyto(mx.gpu(0)), {format = format})
    mx.test_utils.assert_almost_equal(got:copyto(mx.cpu()), want,
      {names = {'box_iou ' .. format .. ' on gpu(0)', 'cpu(0)'}})
  end
end)

-- Runs f with its array arguments on the CPU and on gpu(0); every output
-- must agree (the detection ops' sorts and suppressions included).
local function same_on_gpu(what, f, args, opts)
  local on_gpu = {}
  for i, a in ipairs(args) do on_gpu[i] = a:copyto(mx.gpu(0)) end
  local want, got = {f(unpack(args))}, {f(unpack(on_gpu))}
  assert_eq(#got, #want)
  for i = 1, #want do
    assert_eq(tostring(got[i].context), 'gpu(0)')
    mx.test_utils.assert_almost_equal(got[i]:copyto(mx.cpu()), want[i], {rtol = 1e-5,
      atol = 1e-6, names = {what .. ' output ' .. i .. ' on gpu(0)', 'cpu(0)'}})
  end
end

test('box_nms and the SSD and Faster R-CNN ops on the GPU match the CPU', function()
  if no_gpu() then return end
  mx.random.seed(12)
  -- box_nms: ties in score, classes, every option; its gradient too.
  local bt = mx.nd.random.uniform(0, 1, {2, 200, 6}):totable()
  for _, image in ipairs(bt) do
    for _, row in ipairs(image) do
      row[1], row[2] = math.floor(row[1] * 4), math.floor(row[2] * 20) / 20  -- class, score
    end
  end
  local boxes = mx.nd.array(bt)
  for _, o in ipairs({{overlap_thresh = 0.5}, {overlap_thresh = 0.3, id_index = 0, topk = 40},
                      {overlap_thresh = 0.3, id_index = 0, force_suppress = true,
                       out_format = 'center', valid_thresh = 0.2}}) do
    o.coord_start, o.score_index = 2, 1
    same_on_gpu('box_nms', function(x) return mx.nd.contrib.box_nms(x, o) end, {boxes})
    local grads = {}
    for _, ctx in ipairs({mx.cpu(), mx.gpu(0)}) do
      local x = boxes:copyto(ctx)
      x:attach_grad()
      mx.autograd.record(function()
        local y = mx.nd.contrib.box_nms(x, o)
        y:backward(mx.nd.arange(0, y.size, 1, {ctx = ctx}):reshape(y.shape))
      end)
      grads[#grads + 1] = x.grad:copyto(mx.cpu())
    end
    mx.test_utils.assert_almost_equal(grads[2], grads[1],
                                      {names = {'box_nms gradient on gpu(0)', 'cpu(0)'}})
  end
  -- SSD: priors, targets (with and without mining), detections.
  local feat = mx.nd.zeros({1, 3, 6, 6})
  same_on_gpu('MultiBoxPrior', function(x)
    return mx.nd.contrib.MultiBoxPrior(x, {sizes = {0.3, 0.6}, ratios = {1, 2, 0.5}, clip = true})
  end, {feat})
  local anchors = mx.nd.contrib.MultiBoxPrior(feat, {sizes = {0.3, 0.6}, ratios = {1, 2, 0.5}})
  local n = anchors.shape[2]
  local label = mx.nd.array({{{1, 0.1, 0.1, 0.4, 0.5}, {3, 0.5, 0.4, 0.9, 0.8}, {-1, -1, -1, -1, -1}},
                             {{0, 0.2, 0.3, 0.6, 0.6}, {-1, -1, -1, -1, -1}, {-1, -1, -1, -1, -1}}})
  local cls_pred = mx.nd.random.uniform(-2, 2, {2, 5, n})
  for _, ratio in ipairs({-1, 3}) do
    same_on_gpu('MultiBoxTarget', function(a, l, c)
      return mx.nd.contrib.MultiBoxTarget(a, l, c, {negative_mining_ratio = ratio})
    end, {anchors, label, cls_pred})
  end
  local prob = mx.nd.softmax(mx.nd.random.uniform(-3, 3, {2, 5, n}), {axis = 2})
  local loc = mx.nd.random.uniform(-0.5, 0.5, {2, n * 4})
  for _, o in ipairs({{nms_threshold = 0.5}, {nms_threshold = 0.3, force_suppress = true,
                                              nms_topk = 30}}) do
    same_on_gpu('MultiBoxDetection', function(c, l, a)
      return mx.nd.contrib.MultiBoxDetection(c, l, a, o)
    end, {prob, loc, anchors})
  end
  -- Faster R-CNN's proposals, both regressions; an image larger than the map.
  local na = 12
  local cls = mx.nd.random.uniform(0, 1, {2, 2 * na, 7, 9})
  local bbox = mx.nd.random.uniform(-0.3, 0.3, {2, 4 * na, 7, 9})
  local info = mx.nd.array({{110, 140, 1}, {90, 120, 0.8}})
  for _, iou_loss in ipairs({false, true}) do
    same_on_gpu('Proposal', function(c, b, i)
      return mx.nd.contrib.Proposal(c, b, i, {iou_loss = iou_loss, rpn_post_nms_top_n = 40,
                                             output_score = true})
    end, {cls, bbox, info})
  end
  assert_error(function()
    mx.nd.contrib.Proposal(cls:copyto(mx.gpu(0)), bbox:copyto(mx.gpu(0)),
      mx.nd.array({{110, 140, 1}, {200, 120, 1}}, {ctx = mx.gpu(0)})):wait_to_read()
  end, 'im_info of image 1')
end)

test('index_copy on the GPU matches the CPU, repeated rows and gradients too', function()
  if no_gpu() then return end
  local old = mx.nd.random.uniform(-1, 1, {6, 2, 3})
  local new = mx.nd.random.uniform(-1, 1, {4, 2, 3})
  local idx = mx.nd.array({5, 0, 5, 2}, {dtype = 'int64'})
  local function run(ctx)
    local o, n = old:copyto(ctx), new:copyto(ctx)
    o:attach_grad()
    n:attach_grad()
    local y = mx.autograd.record(function()
      return mx.nd.contrib.index_copy(o, idx:copyto(ctx), n)
    end)
    y:backward(mx.nd.arange(0, 36, {ctx = ctx}):reshape({6, 2, 3}))
    return y:copyto(mx.cpu()), o.grad:copyto(mx.cpu()), n.grad:copyto(mx.cpu())
  end
  local a = {run(mx.cpu(0))}
  local b = {run(mx.gpu(0))}
  for i = 1, 3 do assert_eq(b[i]:totable(), a[i]:totable()) end
  assert_error(function()
    mx.nd.contrib.index_copy(old:copyto(mx.gpu(0)), mx.nd.array({0, 6, 1, 1}, {ctx = mx.gpu(0)}),
      new:copyto(mx.gpu(0))):wait_to_read()
  end, 'is not a row of old_tensor')
end)

test('linalg gemm and gemm2 on the GPU match the CPU: transposes, rows on another axis',
  function()
  if no_gpu() then return end
  local V = mx.sym.Variable
  local cases = {
    {mx.sym.linalg_gemm{A = V('A'), B = V('B'), C = V('C'), alpha = 2, beta = 0.5,
      transpose_b = true}, {A = {3, 4, 5}, B = {3, 6, 5}, C = {3, 4, 6}}},
    {mx.sym.linalg_gemm2{A = V('A'), B = V('B'), transpose_a = true, alpha = -1.5},
      {A = {2, 3, 5, 4}, B = {2, 3, 5, 6}}},
    -- Rows on the first axis: each leading index's matrices interleave.
    {mx.sym.linalg_gemm2{A = V('A'), B = V('B'), axis = 1}, {A = {4, 3, 5}, B = {5, 3, 2}}},
    {mx.sym.linalg_gemm{A = V('A'), B = V('B'), C = V('C'), axis = 2},
      {A = {2, 4, 3, 5}, B = {2, 5, 3, 6}, C = {2, 4, 3, 6}}},
  }
  consistent_cases(cases)
end)

test('linalg diagonal and triangle ops on the GPU match the CPU, gradients too', function()
  if no_gpu() then return end
  local V = mx.sym.Variable
  local cases = {
    {mx.sym.linalg_extractdiag{A = V('A'), offset = -1}, {A = {3, 4, 4}}},
    {mx.sym.linalg_makediag{A = V('A'), offset = 2}, {A = {2, 3, 3}}},
    {mx.sym.linalg_extracttrian{A = V('A')}, {A = {2, 5, 5}}},
    {mx.sym.linalg_extracttrian{A = V('A'), lower = false}, {A = {5, 5}}},
    {mx.sym.linalg_extracttrian{A = V('A'), offset = 2}, {A = {3, 6, 6}}},
    {mx.sym.linalg_maketrian{A = V('A'), offset = -1}, {A = {2, 10}}},
    {mx.sym.linalg_maketrian{A = V('A'), lower = false}, {A = {3, 6}}},
  }
  consistent_cases(cases)
  -- sumlogdiag needs a positive diagonal.
  local a = mx.nd.random.uniform(0.5, 2, {3, 4, 4})
  local res = {}
  for _, ctx in ipairs({mx.cpu(), mx.gpu(0)}) do
    local x = a:as_in_context(ctx)
    x:attach_grad()
    local y
    mx.autograd.record(function()
      y = mx.nd.linalg_sumlogdiag(x)
      y:backward(mx.nd.array({1, -2, 0.5}, {ctx = ctx}))
    end)
    res[#res + 1] = {y:copyto(mx.cpu()), x.grad:copyto(mx.cpu())}
  end
  for i, what in ipairs({'sumlogdiag', 'its gradient'}) do
    mx.test_utils.assert_almost_equal(res[2][i], res[1][i],
                                      {names = {what .. ' on gpu(0)', 'on cpu(0)'}})
  end
end)

test('khatri_rao, ravel_multi_index and unravel_index on the GPU match the CPU', function()
  if no_gpu() then return end
  local mats = {mx.nd.random.uniform(-1, 1, {2, 4}), mx.nd.random.uniform(-1, 1, {3, 4}),
                mx.nd.random.uniform(-1, 1, {5, 4})}
  local on_gpu = {}
  for i, m in ipairs(mats) do on_gpu[i] = m:copyto(mx.gpu(0)) end
  mx.test_utils.assert_almost_equal(mx.nd.khatri_rao(on_gpu):copyto(mx.cpu()),
                                    mx.nd.khatri_rao(mats), {names = {'khatri_rao on gpu(0)', 'on cpu(0)'}})
  local tuples = mx.nd.array({{3, 6, 6, 0}, {4, 5, 1, 0}, {0, 2, 7, 9}}, {dtype = 'int64'})
  local g = tuples:copyto(mx.gpu(0))
  local flat = mx.nd.ravel_multi_index(g, {shape = {7, 8, 10}})
  assert_eq(flat:copyto(mx.cpu()):totable(),
            mx.nd.ravel_multi_index(tuples, {shape = {7, 8, 10}}):totable())
  assert_eq(mx.nd.unravel_index(flat, {shape = {-1, 8, 10}}):copyto(mx.cpu()):totable(),
            tuples:totable())
  assert_error(function()
    mx.nd.ravel_multi_index(mx.nd.array({{7}, {0}}, {ctx = mx.gpu(0)}), {shape = {7, 6}})
      :wait_to_read()
  end, 'position 0 is 7')
  assert_error(function()
    mx.nd.unravel_index(mx.nd.array({1.5}, {ctx = mx.gpu(0)}), {shape = {7, 6}}):wait_to_read()
  end, 'flat position 0 is 1.5')
end)

test('linalg trmm, trsm and syrk on the GPU match the CPU: every side, triangle, transpose',
  function()
  if no_gpu() then return end
  local V = mx.sym.Variable
  -- A well conditioned: a unit-scale random matrix plus 3 on the diagonal.
  local A = mx.nd.random.normal(0, 1, {2, 4, 4}, {dtype = 'float64'}) +
            mx.nd.eye(4, {dtype = 'float64'}) * 3
  for _, op in ipairs({'linalg_trmm', 'linalg_trsm'}) do
    for _, right in ipairs({false, true}) do
      for _, lower in ipairs({true, false}) do
        for _, transpose in ipairs({false, true}) do
          local sym = mx.sym[op]{A = V('A'), B = V('B'), rightside = right, lower = lower,
                                 transpose = transpose, alpha = 1.5}
          local bshape = right and {2, 3, 4} or {2, 4, 3}
          local ok, err = pcall(mx.test_utils.check_consistency, sym, {
            {ctx = mx.cpu(0), A = {2, 4, 4}, B = bshape, type_dict = {A = 'float64', B = 'float64'}},
            {ctx = mx.gpu(0), A = {2, 4, 4}, B = bshape, type_dict = {A = 'float32', B = 'float32'}},
          }, {arg_params = {A = A}})
          assert(ok, ('%s rightside=%s lower=%s transpose=%s: %s'):format(op, tostring(right),
                 tostring(lower), tostring(transpose), tostring(err)))
        end
      end
    end
  end
  consistent_cases({
    {mx.sym.linalg_syrk{A = V('A'), alpha = 0.5}, {A = {3, 4, 5}}},
    {mx.sym.linalg_syrk{A = V('A'), transpose = true}, {A = {2, 4, 3}}},
  })
end)

-- An update op on CPU arrays and on their GPU copies: its outputs and the
-- inputs it updates in place must agree.
local function same_update_on_gpu(op, inputs, params, states)
  local on_cpu, on_gpu = {}, {}
  for i, a in ipairs(inputs) do
    on_cpu[i] = a:copy()
    on_gpu[i] = a:copyto(mx.gpu(0))
  end
  local out_c = {mx.nd[op](on_cpu, params)}
  local out_g = {mx.nd[op](on_gpu, params)}
  assert_eq(#out_g, #out_c)
  for i = 1, #out_c do
    mx.test_utils.assert_almost_equal(out_g[i]:copyto(mx.cpu()), out_c[i], {rtol = 1e-5,
      atol = 1e-6, names = {op .. ' output ' .. i .. ' on gpu(0)', 'on cpu(0)'}})
  end
  for _, k in ipairs(states) do
    mx.test_utils.assert_almost_equal(on_gpu[k]:copyto(mx.cpu()), on_cpu[k], {rtol = 1e-5,
      atol = 1e-6, names = {op .. ' input ' .. k .. ' on gpu(0)', 'on cpu(0)'}})
  end
end

test('ftml, mixed-precision and multi-weight SGD updates on the GPU match the CPU', function()
  if no_gpu() then return end
  local function r(shape, dtype)
    return mx.nd.random.uniform(-1, 1, shape):astype(dtype or 'float32')
  end
  local pos = mx.nd.random.uniform(0.1, 1, {50})
  same_update_on_gpu('ftml_update', {r({50}), r({50}), pos, pos * 0.5, r({50})},
    {lr = 0.1, t = 3, wd = 0.01, rescale_grad = 0.5, clip_grad = 0.3}, {3, 4, 5})
  local w16, g16, w32 = r({40}, 'float16'), r({40}, 'float16'), r({40})
  same_update_on_gpu('mp_sgd_update', {w16, g16, w32}, {lr = 0.1, wd = 0.01}, {3})
  same_update_on_gpu('mp_sgd_mom_update', {w16, g16, r({40}), w32},
    {lr = 0.1, momentum = 0.9, wd = 0.01, clip_gradient = 0.5}, {3, 4})
  local lists = {
    multi_sgd_update = {{r({7}), r({7}), r({3}), r({3})}, {}},
    multi_sgd_mom_update = {{r({7}), r({7}), r({7}), r({3}), r({3}), r({3})}, {3, 6}},
    multi_mp_sgd_update = {{r({7}, 'float16'), r({7}, 'float16'), r({7}),
                            r({3}, 'float16'), r({3}, 'float16'), r({3})}, {3, 6}},
    multi_mp_sgd_mom_update = {{r({7}, 'float16'), r({7}, 'float16'), r({7}), r({7}),
                                r({3}, 'float16'), r({3}, 'float16'), r({3}), r({3})},
                               {3, 4, 7, 8}},
  }
  for op, c in pairs(lists) do
    same_update_on_gpu(op, c[1], {lrs = {0.1, 0.2}, wds = {0.01, 0}, clip_gradient = 0.75,
      num_weights = 2, momentum = op:find('mom') and 0.9 or nil}, c[2])
  end
end)

-- The fused RNN op: float64 on the CPU (its loop) against float32 (or a
-- 16-bit float) on the GPU, outputs, final states and every gradient, for
-- each mode with layers, both directions, sequence lengths, the LSTM's clip
-- and projection.
local function rnn_case(params, T, N, I, lengths, gpu_dtype)
  local V = mx.sym.Variable
  local args = {data = V('data'), parameters = V('parameters'), state = V('state')}
  if params.mode == 'lstm' then args.state_cell = V('state_cell') end
  if lengths then args.sequence_length = V('sequence_length') end
  for k, v in pairs(params) do args[k] = v end
  args.state_outputs = true
  args.use_sequence_length = lengths ~= nil
  local sym = mx.sym.RNN(args)
  local arg_shapes = sym:infer_shape({data = {T, N, I}})
  local names = sym:list_arguments()
  local cpu = {ctx = mx.cpu(0), type_dict = {}}
  local gpu = {ctx = mx.gpu(0), type_dict = {}}
  local arg_params = {parameters = mx.nd.random.uniform(-0.4, 0.4, arg_shapes[2],
                                                        {dtype = 'float64'})}
  for i, name in ipairs(names) do
    cpu[name], gpu[name] = arg_shapes[i], arg_shapes[i]
    cpu.type_dict[name], gpu.type_dict[name] = 'float64', gpu_dtype or 'float32'
  end
  if lengths then arg_params.sequence_length = mx.nd.array(lengths, {dtype = 'float64'}) end
  local ok, err = pcall(mx.test_utils.check_consistency, sym, {cpu, gpu},
                        {arg_params = arg_params})
  local desc = {}
  for k, v in pairs(params) do desc[#desc + 1] = k .. '=' .. tostring(v) end
  table.sort(desc)
  assert(ok, ('RNN %s: %s'):format(table.concat(desc, ' '), tostring(err)))
end

test('the fused RNN op on the GPU matches the CPU: every mode, layers, directions', function()
  if no_gpu() then return end
  for _, mode in ipairs({'lstm', 'gru', 'rnn_tanh', 'rnn_relu'}) do
    rnn_case({mode = mode, state_size = 6, num_layers = 1}, 5, 3, 4)
    rnn_case({mode = mode, state_size = 5, num_layers = 2, bidirectional = true}, 4, 2, 3)
  end
end)

test('the fused RNN op on the GPU: sequence lengths, clip and projection as the CPU', function()
  if no_gpu() then return end
  rnn_case({mode = 'gru', state_size = 4, num_layers = 2, bidirectional = true}, 5, 3, 3,
           {5, 2, 0})
  rnn_case({mode = 'lstm', state_size = 6, num_layers = 1, bidirectional = true,
            lstm_state_clip_min = -0.3, lstm_state_clip_max = 0.4}, 4, 2, 3, {3, 4})
  rnn_case({mode = 'lstm', state_size = 6, num_layers = 2, projection_size = 3}, 5, 3, 4,
           {5, 1, 3})
  rnn_case({mode = 'rnn_tanh', state_size = 4, num_layers = 1}, 6, 4, 2, {6, 0, 2, 5})
end)

test('the fused RNN op on the GPU in float16 and bfloat16 (cells in float)', function()
  if no_gpu() then return end
  for _, dt in ipairs({'float16', 'bfloat16'}) do
    rnn_case({mode = 'lstm', state_size = 8, num_layers = 2, bidirectional = true}, 5, 3, 4,
             nil, dt)
    rnn_case({mode = 'gru', state_size = 8, num_layers = 1}, 5, 3, 4, {5, 2, 4}, dt)
  end
end)

test('the fused RNN op on the GPU: dropout between layers in training only', function()
  if no_gpu() then return end
  local g = mx.gpu(0)
  local p = {state_size = 8, num_layers = 2, mode = 'gru'}
  local x = mx.nd.random.uniform(-1, 1, {6, 4, 5}, {ctx = g})
  local np = 3 * 8 * (5 + 8) + 3 * 8 * (8 + 8) + 2 * 2 * 3 * 8
  local w = mx.nd.random.uniform(-0.3, 0.3, {np}, {ctx = g})
  local h = mx.nd.zeros({2, 4, 8}, {ctx = g})
  local plain = mx.nd.RNN({x, w, h}, p)
  local dp = {state_size = 8, num_layers = 2, mode = 'gru', p = 0.5}
  -- Not training: no mask, the same output to the last bit.
  assert_eq(mx.nd.RNN({x, w, h}, dp):copyto(mx.cpu()):totable(), plain:copyto(mx.cpu()):totable())
  -- Training: masked, and the gradient flows (finite, nonzero) through the mask.
  w:attach_grad()
  local y
  mx.autograd.record(function()
    y = mx.nd.RNN({x, w, h}, dp)
    y:sum():backward()
  end)
  local diff = (y - plain):abs():sum():asscalar()
  assert(diff > 0, 'dropout changed nothing in training')
  local gw = w.grad:copyto(mx.cpu())
  local s = gw:abs():sum():asscalar()
  assert(s > 0 and s == s and s < math.huge, 'parameter gradient ' .. tostring(s))
end)

test('Gluon RNN layers train on the GPU as on the CPU (_rnn_param_concat included)', function()
  if no_gpu() then return end
  for _, make in ipairs({function() return mx.gluon.rnn.LSTM(6, {num_layers = 2}) end,
                         function() return mx.gluon.rnn.GRU(5, {bidirectional = true}) end}) do
    local outs, grads = {}, {}
    for k, ctx in ipairs({mx.cpu(0), mx.gpu(0)}) do
      mx.random.seed(7)  -- the same weights and data on both, drawn on the CPU
      local layer = make()
      layer:initialize(mx.init.Uniform(0.3), mx.cpu(0))
      layer:reset_ctx(ctx)
      local x = mx.nd.random.uniform(-1, 1, {5, 3, 4}):copyto(ctx)
      local y
      mx.autograd.record(function()
        y = layer(x)
        y:sum():backward()
      end)
      outs[k] = y:copyto(mx.cpu())
      grads[k] = {}
      for _, prm in ipairs(layer:collect_params():values()) do
        grads[k][#grads[k] + 1] = prm:grad(ctx):copyto(mx.cpu())
      end
    end
    mx.test_utils.assert_almost_equal(outs[2], outs[1], {rtol = 1e-4, atol = 1e-5})
    for i = 1, #grads[1] do
      mx.test_utils.assert_almost_equal(grads[2][i], grads[1][i], {rtol = 1e-3, atol = 1e-5})
    end
  end
end)

test('linalg gelqf and syevd on the GPU match the CPU, gradients too', function()
  if no_gpu() then return end
  local V = mx.sym.Variable
  local S = mx.nd.random.normal(0, 1, {2, 4, 4}, {dtype = 'float64'})
  S = S + mx.nd.swapaxes(S, {dim1 = 2, dim2 = 3})
  for _, c in ipairs({{mx.sym.linalg.gelqf(V('A')), {2, 3, 5}, nil},
                      {mx.sym.linalg.syevd(V('A')), {2, 4, 4}, S}}) do
    local ok, err = pcall(mx.test_utils.check_consistency, c[1], {
      {ctx = mx.cpu(0), A = c[2], type_dict = {A = 'float64'}},
      {ctx = mx.gpu(0), A = c[2], type_dict = {A = 'float32'}},
    }, {arg_params = c[3] and {A = c[3]} or nil})
    assert(ok, tostring(err))
  end
end)

test('linalg potrf and potri on the GPU match the CPU, both triangles; bad input is an error',
  function()
  if no_gpu() then return end
  local V = mx.sym.Variable
  local B = mx.nd.random.normal(0, 1, {2, 4, 4}, {dtype = 'float64'})
  local A = mx.nd.linalg_gemm2(B, B, {transpose_b = true}) + mx.nd.eye(4, {dtype = 'float64'})
  local L = mx.nd.linalg_potrf(A)
  for _, lower in ipairs({true, false}) do
    for _, c in ipairs({{mx.sym.linalg_potrf{A = V('A'), lower = lower}, A},
                        {mx.sym.linalg_potri{A = V('A'), lower = lower},
                         lower and L or mx.nd.swapaxes(L, {dim1 = 2, dim2 = 3})}}) do
      local ok, err = pcall(mx.test_utils.check_consistency, c[1], {
        {ctx = mx.cpu(0), A = {2, 4, 4}, type_dict = {A = 'float64'}},
        {ctx = mx.gpu(0), A = {2, 4, 4}, type_dict = {A = 'float32'}},
      }, {arg_params = {A = c[2]}})
      assert(ok, ('lower=%s: %s'):format(tostring(lower), tostring(err)))
    end
  end
  assert_error(function()
    mx.nd.linalg_potrf(mx.nd.array({{{4, 1}, {1, 4}}, {{1, 2}, {2, 1}}}, {ctx = mx.gpu(0)}))
      :wait_to_read()
  end, 'matrix 1 of the batch is not positive definite')
  assert_error(function()
    mx.nd.linalg_potri(mx.nd.array({{{2, 0}, {1, 0}}}, {ctx = mx.gpu(0)})):wait_to_read()
  end, 'matrix 0 of the batch has a zero on its diagonal')
end)

test('linalg inverse, det and slogdet on the GPU match the CPU; singular matrices too', function()
  if no_gpu() then return end
  local V = mx.sym.Variable
  local A = mx.nd.random.normal(0, 1, {3, 4, 4}, {dtype = 'float64'}) +
            mx.nd.eye(4, {dtype = 'float64'}) * 3
  for _, sym in ipairs({mx.sym.linalg_inverse{A = V('A')}, mx.sym.linalg_det{A = V('A')},
                        mx.sym.linalg_slogdet{A = V('A')}}) do
    local ok, err = pcall(mx.test_utils.check_consistency, sym, {
      {ctx = mx.cpu(0), A = {3, 4, 4}, type_dict = {A = 'float64'}},
      {ctx = mx.gpu(0), A = {3, 4, 4}, type_dict = {A = 'float32'}},
    }, {arg_params = {A = A}})
    assert(ok, tostring(err))
  end
  -- A singular matrix: det 0, slogdet (0, -inf), a zero gradient; inverse an error.
  local sing = mx.nd.array({{{1, 2}, {2, 4}}, {{2, 1}, {1, 3}}}, {ctx = mx.gpu(0)})
  local x = sing:copy()
  x:attach_grad()
  mx.autograd.record(function()
    local d = mx.nd.linalg_det(x)
    d:backward(mx.nd.ones({2}, {ctx = mx.gpu(0)}))
    mx.test_utils.assert_almost_equal(d:copyto(mx.cpu()), mx.nd.array({0, 5}))
  end)
  mx.test_utils.assert_almost_equal(x.grad:copyto(mx.cpu()),
                                    mx.nd.array({{{0, 0}, {0, 0}}, {{3, -1}, {-1, 2}}}))
  local sign, logabs = mx.nd.linalg_slogdet(sing)
  assert_eq(sign:copyto(mx.cpu()):totable(), {0, 1})
  assert_eq(logabs:copyto(mx.cpu()):totable()[1], -math.huge)
  assert_error(function() mx.nd.linalg_inverse(sing):wait_to_read() end,
               'matrix 0 of the batch is singular')
end)

test('sort, argsort and topk on the GPU give the CPU\'s stable order, NaN and ties included',
  function()
  if no_gpu() then return end
  local nan = 0 / 0
  local x = mx.nd.array({{3, 1, nan, 1, 2, 3, 0, 1, 2}, {1, 1, 1, 0, 0, 0, nan, nan, 5}})
  local big = mx.nd.random.uniform(0, 8, {3, 1500}):floor()  -- long rows of ties
  local calls = {
    function(a) return {mx.nd.sort(a)} end,
    function(a) return {mx.nd.sort(a, {is_ascend = false})} end,
    function(a) return {mx.nd.sort(a, {axis = 1})} end,
    function(a) return {mx.nd.argsort(a, {dtype = 'int32'})} end,
    function(a) return {mx.nd.argsort(a, {axis = 'None', is_ascend = false})} end,
    function(a) return {mx.nd.topk(a, {k = 3})} end,
    function(a) return {mx.nd.topk(a, {k = 2, ret_typ = 'both', is_ascend = true})} end,
    function(a) return {mx.nd.topk(a, {k = 2, ret_typ = 'mask', axis = 1})} end,
  }
  for _, data in ipairs({x, big, x:astype('float16'), big:astype('int32')}) do
    for i, f in ipairs(calls) do
      local want, got = f(data), f(data:copyto(mx.gpu(0)))
      for j = 1, #want do
        mx.test_utils.assert_almost_equal(got[j]:copyto(mx.cpu()), want[j], {rtol = 0, atol = 0,
          equal_nan = true, names = {('call %d output %d, %s, gpu(0)'):format(i, j, data.dtype),
          'cpu(0)'}})
      end
    end
  end
  -- The gradient of the kept values, through autograd.
  local a, ag = big:copy(), big:copyto(mx.gpu(0))
  for _, v in ipairs({a, ag}) do v:attach_grad() end
  for _, v in ipairs({a, ag}) do
    mx.autograd.record(function() return mx.nd.topk(v, {k = 5, ret_typ = 'value'}) end):backward()
  end
  assert_eq(ag.grad:copyto(mx.cpu()):totable(), a.grad:totable())
end)

-- GPU ops complete once their kernels are queued (docs/engine.md): chains of
-- dependent ops across both compute streams, host reads in the middle, and
-- arrays freed (their memory back in the pool) while kernels behind them may
-- still run, all must give what the CPU gives.
test('long chains of queued GPU work, freed arrays and host reads match the CPU', function()
  if no_gpu() then return end
  local function run(ctx)
    mx.random.seed(7)
    local a = mx.nd.random.uniform(-1, 1, {256, 256}):as_in_context(ctx)
    local acc = mx.nd.zeros({256, 256}, {ctx = ctx})
    local sums = {}
    for i = 1, 60 do
      local t = mx.nd.dot(a, a * (1 / i)) + i   -- temporaries freed by the GC
      acc = acc * 0.5 + mx.nd.tanh(t)
      if i % 15 == 0 then
        sums[#sums + 1] = acc:sum():asscalar()   -- a host read mid-chain
        collectgarbage()
      end
    end
    local big = mx.nd.ones({4096, 1024}, {ctx = ctx})
    for _ = 1, 20 do big = big * 1.01 end         -- each step frees the last
    sums[#sums + 1] = big:mean():asscalar()
    return sums, acc:copyto(mx.cpu()):totable()
  end
  local gs, gacc = run(mx.gpu(0))
  local cs, cacc = run(mx.cpu())
  mx.test_utils.assert_almost_equal(gs, cs, {rtol = 1e-3, atol = 1e-3,
    names = {'sums on gpu(0)', 'on cpu(0)'}})
  mx.test_utils.assert_almost_equal(mx.nd.array(gacc), mx.nd.array(cacc),
    {rtol = 1e-4, atol = 1e-4, names = {'the chain on gpu(0)', 'on cpu(0)'}})
end)
