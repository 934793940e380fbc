-- mx.gluon.rnn: the fused layers against the RNN op, hybridized against
-- op by op, the cells unrolled against the fused layers with the same
-- weights, the modifier cells, and a small task learned.

local tu = mx.test_utils
local rnn = mx.gluon.rnn

local flat = mx.test_utils.flatten

local function close(a, b, tol, what)
  tu.assert_almost_equal(flat(a), flat(b), {rtol = tol or 1e-5, atol = tol or 1e-6,
                                            names = {what or 'got', 'expected'}})
end

local function init(block, x)
  block:initialize(mx.init.Uniform(0.3))
  return block
end

test('LSTM layer: MXNet parameter names, shapes inferred, the RNN op underneath', function()
  mx.random.seed(1)
  local layer = init(rnn.LSTM(5, {num_layers = 2, bidirectional = true}))
  local x = mx.nd.random.uniform(-1, 1, {6, 3, 4})
  local y = layer(x)
  assert_eq(y.shape, {6, 3, 10})
  local names = {}
  for _, p in ipairs(layer:collect_params():values()) do names[#names + 1] = p.name end
  assert_eq(names[1], 'lstm0_l0_i2h_weight')
  assert_eq(names[5], 'lstm0_r0_i2h_weight')
  assert_eq(#names, 16)
  assert_eq(layer.l0_i2h_weight.shape, {20, 4})
  assert_eq(layer.l1_i2h_weight.shape, {20, 10})
  -- Same as the op on the packed vector (weights, then biases).
  local p = layer:collect_params()
  local w, b = {}, {}
  for _, l in ipairs({'l0', 'r0', 'l1', 'r1'}) do
    w[#w + 1] = p[layer.prefix .. l .. '_i2h_weight']:data():reshape({-1})
    w[#w + 1] = p[layer.prefix .. l .. '_h2h_weight']:data():reshape({-1})
    b[#b + 1] = p[layer.prefix .. l .. '_i2h_bias']:data()
    b[#b + 1] = p[layer.prefix .. l .. '_h2h_bias']:data()
  end
  for _, v in ipairs(b) do w[#w + 1] = v end
  local packed = mx.nd.concat(w, {dim = 1})
  local z = mx.nd.zeros({4, 3, 5})
  local want = mx.nd.RNN({x, packed, z, z}, {state_size = 5, num_layers = 2, mode = 'lstm',
                                              bidirectional = true})
  close(y, want, 1e-6, 'layer')
  -- With states: the new states come back.
  local states = layer:begin_state(3)
  assert_eq(#states, 2)
  local y2, new = layer(x, states)
  close(y2, y, 1e-6)
  assert_eq(#new, 2)
  assert_eq(new[1].shape, {4, 3, 5})
end)

test('GRU and RNN layers: NTC layout and activations', function()
  mx.random.seed(2)
  local g = init(rnn.GRU(4, {layout = 'NTC'}))
  local x = mx.nd.random.uniform(-1, 1, {2, 7, 3})  -- batch 2, time 7
  local y = g(x)
  assert_eq(y.shape, {2, 7, 4})
  -- The same as TNC on the swapped input.
  local g2 = rnn.GRU(4, {params = g:collect_params(), prefix = g.prefix})
  local y2 = g2(mx.nd.swapaxes(x, {dim1 = 1, dim2 = 2}))
  close(y, mx.nd.swapaxes(y2, {dim1 = 1, dim2 = 2}), 1e-6)
  local r = init(rnn.RNN(3))
  assert(tostring(r):find('RNN'), tostring(r))
  local ry = r(mx.nd.random.uniform(-1, 1, {5, 2, 3}))
  assert(ry:min():asscalar() >= 0, 'the default activation is relu')
  local t = init(rnn.RNN(3, {activation = 'tanh'}))
  assert(t(mx.nd.ones({5, 2, 3}) * 10):max():asscalar() <= 1)
  assert_error(function() rnn.RNN(3, {activation = 'sigmoid'}) end, "activation must be 'relu' or 'tanh'")
  assert_error(function() rnn.LSTM(0) end, 'hidden_size must be a whole number')
  assert_error(function() rnn.LSTM(3, {layout = 'TCN'}) end, 'layout')
  assert_error(function() t(mx.nd.ones({5, 2, 3}), {}) end, 'expects 1 state')
end)

test('RNN layers: hybridized values and gradients equal op by op', function()
  for _, make in ipairs({function() return rnn.LSTM(4, {num_layers = 2}) end,
                         function() return rnn.GRU(3, {bidirectional = true, layout = 'NTC'}) end}) do
    mx.random.seed(3)
    local a = init(make())
    local x = mx.nd.random.uniform(-1, 1, {5, 2, 3})
    local function run(block)
      local xx = x:copy()
      xx:attach_grad()
      local y = mx.autograd.record(function() return block(xx) end)
      y:backward(mx.nd.ones(y.shape))
      local grads = {}
      for _, p in ipairs(block:collect_params():values()) do grads[#grads + 1] = p:grad():copy() end
      return y, xx.grad, grads
    end
    local y1, gx1, gp1 = run(a)
    a:hybridize()
    local y2, gx2, gp2 = run(a)
    close(y2, y1, 1e-6, 'hybridized output')
    close(gx2, gx1, 1e-6, 'hybridized d input')
    for i = 1, #gp1 do close(gp2[i], gp1[i], 1e-5, 'hybridized d param ' .. i) end
  end
end)

-- Copies a fused layer's l<k> (and r<k>) weights into a cell.
local function copy_weights(layer, tag, cell)
  for _, k in ipairs({'i2h_weight', 'h2h_weight', 'i2h_bias', 'h2h_bias'}) do
    layer[tag .. '_' .. k]:data():copyto(cell[k]:data())
  end
end

test('cells unrolled equal the fused layers with the same weights', function()
  mx.random.seed(4)
  local x = mx.nd.random.uniform(-1, 1, {6, 3, 4})  -- TNC
  for _, c in ipairs({{rnn.LSTM, rnn.LSTMCell, {}}, {rnn.GRU, rnn.GRUCell, {}},
                      {rnn.RNN, rnn.RNNCell, {activation = 'tanh'}}}) do
    local layer = init(c[1](5, {activation = c[3].activation}))
    local want = layer(x)
    local cell = c[2](5, {input_size = 4, activation = c[3].activation})
    cell:initialize()
    copy_weights(layer, 'l0', cell)
    local out, states = cell:unroll(6, x, {layout = 'TNC', merge_outputs = true})
    close(out, want, 1e-5, cell.name)
    close(states[1], mx.nd.slice_axis(want, {axis = 1, begin = 5, ['end'] = 6}):reshape({3, 5}),
          1e-5, cell.name .. ' last state')
  end
end)

test('SequentialRNNCell and BidirectionalCell equal two-layer and bidirectional layers', function()
  mx.random.seed(5)
  local x = mx.nd.random.uniform(-1, 1, {3, 5, 4})  -- NTC: batch 3, time 5
  local layer = init(rnn.LSTM(4, {num_layers = 2, layout = 'NTC'}))
  local want = layer(x)
  local stack = rnn.SequentialRNNCell()
  stack:add(rnn.LSTMCell(4, {input_size = 4}))
  stack:add(rnn.LSTMCell(4, {input_size = 4}))
  stack:initialize()
  copy_weights(layer, 'l0', stack:children()[1])
  copy_weights(layer, 'l1', stack:children()[2])
  local out, states = stack:unroll(5, x, {merge_outputs = true})
  close(out, want, 1e-5, 'stacked cells')
  assert_eq(#states, 4)

  local bi = init(rnn.GRU(3, {bidirectional = true, layout = 'NTC'}))
  local bi_out = bi(x)  -- completes the deferred input size
  local lengths = mx.nd.array({5, 2, 4})
  local bl = init(rnn.GRU(3, {bidirectional = true, layout = 'NTC', use_sequence_length = true,
                              params = bi:collect_params(), prefix = bi.prefix}))
  local cell = rnn.BidirectionalCell(rnn.GRUCell(3, {input_size = 4}), rnn.GRUCell(3, {input_size = 4}))
  cell:initialize()
  copy_weights(bi, 'l0', cell:children()[1])
  copy_weights(bi, 'r0', cell:children()[2])
  close(cell:unroll(5, x, {merge_outputs = true}), bi_out, 1e-5, 'bidirectional cell')
  local states0 = bl:begin_state(3)
  local masked = bl(x, states0, lengths)
  local got = cell:unroll(5, x, {merge_outputs = true, valid_length = lengths})
  close(got, masked, 1e-5, 'bidirectional cell with valid_length')
  assert_error(function() cell(mx.nd.ones({3, 4}), cell:begin_state(3)) end, 'use unroll')
end)

test('DropoutCell, ZoneoutCell, ResidualCell', function()
  mx.random.seed(6)
  local x = mx.nd.random.uniform(-1, 1, {2, 3})
  local d = rnn.DropoutCell(0.5)
  local out, st = d(x, {})
  close(out, x, 0, 'dropout outside training')
  assert_eq(#st, 0)
  local y = mx.autograd.record(function() return (d(mx.nd.ones({100, 10}), {})) end)
  assert(math.abs(y:mean():asscalar() - 1) < 0.2 and y:min():asscalar() == 0, 'dropout in training')

  local base = rnn.GRUCell(3, {input_size = 3})
  local res = rnn.ResidualCell(base)
  res:initialize()
  local s0 = res:begin_state(2)
  local bo = base(x, s0)
  local ro = res(x, s0)
  close(ro, bo + x, 1e-6, 'residual')

  local z = rnn.ZoneoutCell(rnn.LSTMCell(3, {input_size = 3}),
                            {zoneout_outputs = 0.5, zoneout_states = 0.5})
  z:initialize()
  local zs = z:begin_state(2)
  local zo = z(x, zs)
  close(zo, z.base_cell(x, zs), 1e-6, 'zoneout outside training')
  -- In training every unit is either the new value or the previous one.
  local prev = mx.nd.zeros({2, 3})
  z:reset()
  local new = z.base_cell(x, zs)
  local zt = mx.autograd.record(function() return (z(x, zs)) end)
  local a, b, c = flat(zt), flat(new), flat(prev)
  for i = 1, #a do assert(math.abs(a[i] - b[i]) < 1e-6 or math.abs(a[i] - c[i]) < 1e-6, i) end
end)

test('an LSTM layer learns to echo the first step of a sequence', function()
  mx.random.seed(7)
  local net = mx.gluon.nn.HybridSequential()
  local lstm = rnn.LSTM(16, {layout = 'NTC'})
  net:add(lstm)
  net:add(mx.gluon.nn.Dense(2, {flatten = false}))
  net:initialize(mx.init.Xavier())
  net:hybridize()
  local trainer = mx.gluon.Trainer(net:collect_params(), 'adam', {learning_rate = 0.02})
  local loss_fn = mx.gluon.loss.SoftmaxCrossEntropyLoss()
  local function batch()
    -- 32 sequences of 6 bits; the label of every step is the first bit.
    local x = mx.nd.random.randint(0, 2, {32, 6}):astype('float32')
    local first = mx.nd.slice_axis(x, {axis = 2, begin = 0, ['end'] = 1})
    local label = mx.nd.broadcast_to(first, {shape = {32, 6}})
    return x:reshape({32, 6, 1}), label
  end
  local first_loss, last_loss
  for step = 1, 120 do
    local x, label = batch()
    local loss = mx.autograd.record(function() return loss_fn(net(x), label) end)
    loss:backward()
    trainer:step(32)
    local l = loss:mean():asscalar()
    if step == 1 then first_loss = l end
    last_loss = l
  end
  assert(last_loss < 0.1 * first_loss, ('loss %g -> %g'):format(first_loss, last_loss))
end)

test('cells inside a hybridized block run as symbols', function()
  mx.random.seed(8)
  local Net = mx.gluon.HybridBlock:extend('CellNet')
  function Net:__init()
    mx.gluon.HybridBlock.__init(self)
    self:name_scope(function()
      self.cell = rnn.SequentialRNNCell()
      self.cell:add(rnn.GRUCell(4))
      self.cell:add(rnn.ResidualCell(rnn.LSTMCell(4)))
    end)
  end
  function Net:hybrid_forward(F, x)
    local out = self.cell:unroll(5, x, {layout = 'NTC', merge_outputs = true})
    return out
  end
  local net = Net()
  net:initialize(mx.init.Uniform(0.3))
  local x = mx.nd.random.uniform(-1, 1, {2, 5, 3})
  local want = net(x)
  net:hybridize()
  close(net(x), want, 1e-5, 'hybridized cells')
  assert_eq(want.shape, {2, 5, 4})
end)

test('LSTM layer with projection_size: parameters, states, the op underneath', function()
  mx.random.seed(9)
  local layer = init(rnn.LSTM(6, {num_layers = 2, bidirectional = true, projection_size = 3}))
  local x = mx.nd.random.uniform(-1, 1, {4, 2, 5})
  local states = layer:begin_state(2)
  assert_eq(states[1].shape, {4, 2, 3})
  assert_eq(states[2].shape, {4, 2, 6})
  local y, new = layer(x, states)
  assert_eq(y.shape, {4, 2, 6})
  assert_eq(new[1].shape, {4, 2, 3})
  assert_eq(layer.l0_h2r_weight.shape, {3, 6})
  assert_eq(layer.l1_i2h_weight.shape, {24, 6})
  assert_eq(layer.l0_h2h_weight.shape, {24, 3})
  assert(tostring(layer):find('projection_size=3'), tostring(layer))
  layer:hybridize()
  close(layer(x, states), y, 1e-6, 'hybridized')
  assert_error(function() rnn.GRU(4, {projection_size = 2}) end, 'for LSTM only')
  assert_error(function() rnn.LSTM(4, {projection_size = 4}) end, 'must be below hidden_size')
end)
