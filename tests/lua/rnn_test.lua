-- The fused RNN op against cells unrolled from basic ops (FullyConnected,
-- sigmoid, tanh, ...): values, and gradients through autograd, for every
-- mode, one and two layers, both directions, with and without sequence
-- lengths; then central differences through the executor, dropout, the
-- LSTM clip, and bad input.

local tu = mx.test_utils

local gates_of = {lstm = 4, gru = 3, rnn_tanh = 1, rnn_relu = 1}

-- Deterministic values in [-s, s).
local seed = 4321
local function values(n, s)
  local t = {}
  for i = 1, n do
    seed = (seed * 1103515245 + 12345) % 2147483648
    t[i] = s * (2 * seed / 2147483648 - 1)
  end
  return t
end
local function rand(shape, s, dtype)
  local n = 1
  for _, d in ipairs(shape) do n = n * d end
  return mx.nd.array(values(n, s or 1), {dtype = dtype or 'float64'}):reshape(shape)
end

local flatten = mx.test_utils.flatten

-- Configuration: mode, T, N, I, H, L, bidirectional, lengths.
local function param_size(c)
  local G, D = gates_of[c.mode], c.bi and 2 or 1
  local size = 0
  for l = 1, c.L do
    local in_l = l == 1 and c.I or D * c.H
    size = size + D * (G * c.H * (in_l + c.H) + 2 * G * c.H)
  end
  return size
end

-- Cuts the flat parameter vector into leaf arrays in MXNet's order: every
-- weight (layer, direction, i2h then h2h), then every bias.
local function unpack_params(c, flat)
  local G, D, H = gates_of[c.mode], c.bi and 2 or 1, c.H
  local pos, pieces, order = 1, {}, {}
  local function take(shape)
    local n = 1
    for _, d in ipairs(shape) do n = n * d end
    local v = {}
    for i = 1, n do v[i] = flat[pos + i - 1] end
    pos = pos + n
    local a = mx.nd.array(v, {dtype = 'float64'}):reshape(shape)
    order[#order + 1] = a
    return a
  end
  for l = 1, c.L do
    pieces[l] = {}
    for d = 1, D do
      local in_l = l == 1 and c.I or D * H
      pieces[l][d] = {W = take({G * H, in_l}), U = take({G * H, H})}
    end
  end
  for l = 1, c.L do
    for d = 1, D do
      pieces[l][d].bx = take({G * H})
      pieces[l][d].bh = take({G * H})
    end
  end
  return pieces, order
end

local function gate(g, k, H)
  return mx.nd.slice_axis(g, {axis = 2, begin = (k - 1) * H, ['end'] = k * H})
end

-- One step of a cell on (N, I) input; returns the new h (and c).
local function cell(mode, p, x, h, c, H)
  local G = gates_of[mode]
  local gx = mx.nd.FullyConnected(x, p.W, p.bx, {num_hidden = G * H})
  local gh = mx.nd.FullyConnected(h, p.U, p.bh, {num_hidden = G * H})
  if mode == 'lstm' then
    local g = gx + gh
    local i, f = mx.nd.sigmoid(gate(g, 1, H)), mx.nd.sigmoid(gate(g, 2, H))
    local gg, o = mx.nd.tanh(gate(g, 3, H)), mx.nd.sigmoid(gate(g, 4, H))
    local cn = f * c + i * gg
    return o * mx.nd.tanh(cn), cn
  elseif mode == 'gru' then
    local r = mx.nd.sigmoid(gate(gx, 1, H) + gate(gh, 1, H))
    local z = mx.nd.sigmoid(gate(gx, 2, H) + gate(gh, 2, H))
    local n = mx.nd.tanh(gate(gx, 3, H) + r * gate(gh, 3, H))
    return (1 - z) * n + z * h
  elseif mode == 'rnn_relu' then
    return mx.nd.relu(gx + gh)
  end
  return mx.nd.tanh(gx + gh)
end

-- The whole network unrolled; lengths (a Lua table) mask the steps past
-- each row's end. Returns out, hy, cy.
local function reference(c, x, pieces, h0, c0)
  local D, H = c.bi and 2 or 1, c.H
  local live = {}
  for t = 1, c.T do
    local m = {}
    for n = 1, c.N do m[n] = {(not c.lengths or t <= c.lengths[n]) and 1 or 0} end
    live[t] = mx.nd.array(m, {dtype = 'float64'})
  end
  local steps = {}
  for t = 1, c.T do steps[t] = x[t] end
  local hy, cy = {}, {}
  for l = 1, c.L do
    local outs = {}
    for d = 1, D do
      local s = (l - 1) * D + d
      local h, cc = h0[s], c0 and c0[s]
      local seq = {}
      local first, last, step = 1, c.T, 1
      if d == 2 then first, last, step = c.T, 1, -1 end
      for t = first, last, step do
        local hn, cn = cell(c.mode, pieces[l][d], steps[t], h, cc, H)
        local m = live[t]
        h = mx.nd.broadcast_mul(hn, m) + mx.nd.broadcast_mul(h, 1 - m)
        if cn then cc = mx.nd.broadcast_mul(cn, m) + mx.nd.broadcast_mul(cc, 1 - m) end
        seq[t] = h
      end
      outs[d] = seq
      hy[s], cy[s] = h, cc
    end
    for t = 1, c.T do
      steps[t] = D == 2 and mx.nd.concat({outs[1][t], outs[2][t]}, {dim = 2}) or outs[1][t]
    end
  end
  local masked = {}
  for t = 1, c.T do masked[t] = mx.nd.broadcast_mul(steps[t], live[t]) end
  return mx.nd.stack(masked, {axis = 1}), mx.nd.stack(hy, {axis = 1}),
      c0 and mx.nd.stack(cy, {axis = 1})
end

local function fused_args(c, x, w, h0, c0)
  local args = {x, w, h0}
  if c.mode == 'lstm' then args[#args + 1] = c0 end
  if c.lengths then args[#args + 1] = mx.nd.array(c.lengths, {dtype = 'int32'}) end
  return args
end

local function fused_params(c)
  return {state_size = c.H, num_layers = c.L, bidirectional = c.bi or false, mode = c.mode,
          state_outputs = true, use_sequence_length = c.lengths ~= nil, projection_size = c.proj}
end

-- Values and every gradient of the fused op against the unrolled cells, for
-- a random projection of all three outputs.
local function check_against_reference(c)
  local D = c.bi and 2 or 1
  local x = rand({c.T, c.N, c.I})
  local wflat = values(param_size(c), 0.6)
  local w = mx.nd.array(wflat, {dtype = 'float64'})
  local h0 = rand({c.L * D, c.N, c.H})
  local c0 = c.mode == 'lstm' and rand({c.L * D, c.N, c.H}) or nil
  local inputs = {x, w, h0, c0}
  for _, a in pairs(inputs) do a:attach_grad() end
  local po, ph, pc = rand({c.T, c.N, D * c.H}), rand({c.L * D, c.N, c.H}), rand({c.L * D, c.N, c.H})
  local function loss(out, hy, cy)
    local s = (out * po):sum() + (hy * ph):sum()
    if cy then s = s + (cy * pc):sum() end
    return s
  end
  local out, hy, cy = nil, nil, nil
  mx.autograd.record(function()
    out, hy, cy = mx.nd.RNN(fused_args(c, x, w, h0, c0), fused_params(c))
    if c.mode ~= 'lstm' then cy = nil end
    return loss(out, hy, cy)
  end):backward()

  local pieces, order = unpack_params(c, wflat)
  for _, a in ipairs(order) do a:attach_grad() end
  local xr, hr = x:copy(), h0:copy()
  local cr = c0 and c0:copy()
  xr:attach_grad(); hr:attach_grad()
  if cr then cr:attach_grad() end
  local rout, rhy, rcy
  mx.autograd.record(function()
    local xs, hs, cs = {}, {}, cr and {} or nil
    local function at(a, i)
      local one = mx.nd.slice_axis(a, {axis = 1, begin = i - 1, ['end'] = i})
      return one:reshape({a.shape[2], a.shape[3]})
    end
    for t = 1, c.T do xs[t] = at(xr, t) end
    for s = 1, c.L * D do
      hs[s] = at(hr, s)
      if cs then cs[s] = at(cr, s) end
    end
    rout, rhy, rcy = reference(c, xs, pieces, hs, cs)
    return loss(rout, rhy, rcy)
  end):backward()

  local tol = {rtol = 1e-9, atol = 1e-10}
  local function same(a, b, what)
    tu.assert_almost_equal(flatten(a:totable()), flatten(b:totable()),
        {rtol = tol.rtol, atol = tol.atol, names = {'fused ' .. what, 'unrolled ' .. what}})
  end
  same(out, rout, 'output')
  same(hy, rhy, 'hy')
  if cy then same(cy, rcy, 'cy') end
  same(x.grad, xr.grad, 'd data')
  same(h0.grad, hr.grad, 'd state')
  if c0 then same(c0.grad, cr.grad, 'd state_cell') end
  local wgrad = {}
  for _, a in ipairs(order) do for _, v in ipairs(flatten(a.grad)) do wgrad[#wgrad + 1] = v end end
  tu.assert_almost_equal(flatten(w.grad:totable()), wgrad,
      {rtol = tol.rtol, atol = tol.atol, names = {'fused d parameters', 'unrolled'}})
end

for _, mode in ipairs({'lstm', 'gru', 'rnn_tanh', 'rnn_relu'}) do
  test(mode .. ': one layer against the unrolled cells', function()
    check_against_reference({mode = mode, T = 4, N = 3, I = 5, H = 4, L = 1})
  end)
  test(mode .. ': two bidirectional layers against the unrolled cells', function()
    check_against_reference({mode = mode, T = 3, N = 2, I = 3, H = 2, L = 2, bi = true})
  end)
  test(mode .. ': sequence lengths against the unrolled cells', function()
    check_against_reference({mode = mode, T = 4, N = 3, I = 2, H = 3, L = 2, bi = true,
                             lengths = {4, 1, 2}})
  end)
end

test('RNN gradients against central differences (executor, write and add)', function()
  for _, mode in ipairs({'lstm', 'gru', 'rnn_tanh'}) do
    local c = {mode = mode, T = 3, N = 2, I = 3, H = 2, L = 2, bi = true}
    local names = {'data', 'parameters', 'state'}
    if mode == 'lstm' then names[4] = 'state_cell' end
    local vars = {}
    for i, n in ipairs(names) do vars[i] = mx.sym.Variable(n) end
    local p = fused_params(c)
    local sym = mx.sym.Group({mx.sym.RNN(vars, p)})
    local loc = {data = rand({3, 2, 3}), parameters = rand({param_size(c)}, 0.6),
                 state = rand({4, 2, 2})}
    if mode == 'lstm' then loc.state_cell = rand({4, 2, 2}) end
    for _, req in ipairs({'write', 'add'}) do
      tu.check_numeric_gradient(sym, loc, {grad_req = req, numeric_eps = 1e-5, rtol = 1e-5,
                                           atol = 1e-7})
    end
  end
end)

test('LSTM with projection: gradients against central differences', function()
  local c = {mode = 'lstm', T = 3, N = 2, I = 3, H = 4, L = 2, bi = true, proj = 2}
  local names = {'data', 'parameters', 'state', 'state_cell'}
  local vars = {}
  for i, n in ipairs(names) do vars[i] = mx.sym.Variable(n) end
  local sym = mx.sym.Group({mx.sym.RNN(vars, fused_params(c))})
  local P = 0
  for l = 1, 2 do P = P + 2 * (16 * ((l == 1 and 3 or 4) + 2) + 2 * 4 + 2 * 16) end
  local loc = {data = rand({3, 2, 3}), parameters = rand({P}, 0.6), state = rand({4, 2, 2}),
               state_cell = rand({4, 2, 4})}
  tu.check_numeric_gradient(sym, loc, {numeric_eps = 1e-5, rtol = 1e-5, atol = 1e-7})
end)

test('RNN in float32 agrees with float64', function()
  local c = {mode = 'lstm', T = 5, N = 4, I = 6, H = 8, L = 2, bi = true}
  local x, w = rand({5, 4, 6}), rand({param_size(c)}, 0.3)
  local h0, c0 = rand({4, 4, 8}), rand({4, 4, 8})
  local p = fused_params(c)
  local o64 = mx.nd.RNN({x, w, h0, c0}, p)
  local o32 = mx.nd.RNN({x:astype('float32'), w:astype('float32'), h0:astype('float32'),
                         c0:astype('float32')}, p)
  tu.assert_almost_equal(flatten(o32:totable()), flatten(o64:totable()), {rtol = 1e-4, atol = 1e-5})
end)

test('RNN dropout between layers: training draws a mask, inference does not', function()
  local c = {mode = 'gru', T = 6, N = 5, I = 4, H = 16, L = 2}
  local x, w, h0 = rand({6, 5, 4}, 1, 'float32'), rand({param_size(c)}, 0.5, 'float32'),
      rand({2, 5, 16}, 1, 'float32')
  local plain = {state_size = 16, num_layers = 2, mode = 'gru'}
  local drop = {state_size = 16, num_layers = 2, mode = 'gru', p = 0.5}
  local base = mx.nd.RNN({x, w, h0}, plain)
  -- Outside training p changes nothing.
  tu.assert_almost_equal(mx.nd.RNN({x, w, h0}, drop):totable(), base:totable(), {rtol = 0, atol = 0})
  mx.random.seed(3)
  local a = mx.autograd.record(function() return mx.nd.RNN({x, w, h0}, drop) end)
  mx.random.seed(3)
  local b = mx.autograd.record(function() return mx.nd.RNN({x, w, h0}, drop) end)
  tu.assert_almost_equal(a:totable(), b:totable(), {rtol = 0, atol = 0})  -- seeded: repeatable
  local diff = (a - base):abs():max():asscalar()
  assert(diff > 1e-3, 'dropout had no effect in training: ' .. diff)
  -- The gradient with p = 1 reaches nothing of the first layer's weights.
  local wg = w:copy()
  wg:attach_grad()
  mx.autograd.record(function()
    return mx.nd.RNN({x, wg, h0}, {state_size = 16, num_layers = 2, mode = 'gru', p = 1}):sum()
  end):backward()
  local first = 3 * 16 * (4 + 16)
  local g = flatten(wg.grad:totable())
  for i = 1, first do assert(g[i] == 0, 'first layer weight ' .. i .. ' got a gradient') end
end)

test('RNN: the LSTM cell clip bounds the cell state', function()
  local x, w = rand({4, 2, 3}, 3), rand({4 * 2 * (3 + 2) + 16}, 2)
  local z = mx.nd.zeros({1, 2, 2}, {dtype = 'float64'})
  local _, _, cy = mx.nd.RNN({x, w, z, z}, {state_size = 2, num_layers = 1, mode = 'lstm',
      state_outputs = true, lstm_state_clip_min = -0.25, lstm_state_clip_max = 0.25})
  for _, v in ipairs(flatten(cy:totable())) do assert(v >= -0.25 and v <= 0.25, v) end
end)

test('RNN: shapes are inferred from data; bad input is named', function()
  local s = mx.sym.RNN({mx.sym.Variable('data'), mx.sym.Variable('parameters'),
                        mx.sym.Variable('state'), mx.sym.Variable('state_cell')},
                       {state_size = 10, num_layers = 2, mode = 'lstm', bidirectional = true,
                        state_outputs = true})
  local args, outs = s:infer_shape({data = {7, 3, 5}})
  assert_eq(args, {{7, 3, 5}, {4 * 10 * (5 + 10) * 2 + 4 * 10 * (20 + 10) * 2 + 2 * 4 * 10 * 4},
                   {4, 3, 10}, {4, 3, 10}})
  assert_eq(outs, {{7, 3, 20}, {4, 3, 10}, {4, 3, 10}})
  assert_eq(s:list_arguments(), {'data', 'parameters', 'state', 'state_cell'})
  local x = mx.nd.ones({4, 2, 3})
  local ok, err = pcall(mx.nd.RNN, {x, mx.nd.ones({5}), mx.nd.zeros({1, 2, 2})},
                        {state_size = 2, num_layers = 1, mode = 'gru'})
  assert(not ok and err:find('RNN') and err:find('parameters has shape %(5,?%)'), err)
  ok, err = pcall(mx.nd.RNN, {mx.nd.ones({4, 3}), mx.nd.ones({5}), mx.nd.zeros({1, 2, 2})},
                  {state_size = 2, num_layers = 1, mode = 'gru'})
  assert(not ok and err:find('3%-D'), err)
  ok, err = pcall(function()
    local o = mx.nd.RNN({x, mx.nd.ones({3 * 2 * 5 + 12}), mx.nd.zeros({1, 2, 2}),
                         mx.nd.array({4, 9})}, {state_size = 2, num_layers = 1, mode = 'gru',
                                                use_sequence_length = true})
    o:wait_to_read()
  end)
  assert(not ok and err:find('sequence_length%[1%] = 9'), err)
  ok, err = pcall(mx.nd.RNN, {x, mx.nd.ones({5}), mx.nd.zeros({1, 2, 2}), mx.nd.zeros({1, 2, 2})},
                  {state_size = 2, num_layers = 1, mode = 'lstm', projection_size = 2})
  assert(not ok and err:find('projection_size 2 must be within %[1, state_size%)'), err)
  ok, err = pcall(mx.nd.RNN, {x, mx.nd.ones({5}), mx.nd.zeros({1, 2, 2})},
                  {state_size = 3, num_layers = 1, mode = 'gru', projection_size = 2})
  assert(not ok and err:find('projection_size is for mode lstm only'), err)
end)

-- PyTorch's nn.LSTM / nn.GRU / nn.RNN with the same weights: values and
-- gradients computed by tests/data/rnn/make_torch_reference.py (float64).
local torch_cases = dofile((debug.getinfo(1, 'S').source:match('^@(.*)/lua/[^/]*$') or 'tests')
  .. '/data/rnn/torch_reference.lua')
for _, c in ipairs(torch_cases) do
  local what = ('%s, %d layer(s)%s%s%s'):format(c.mode, c.L, c.bi and ', bidirectional' or '',
                                              c.lengths and ', sequence lengths' or '',
                                              c.proj and ', projection' or '')
  test('RNN against PyTorch (' .. what .. ')', function()
    local D, S = c.bi and 2 or 1, c.proj or c.H
    local function arr(v, shape) return mx.nd.array(v, {dtype = 'float64'}):reshape(shape) end
    local sshape, cshape = {c.L * D, c.N, S}, {c.L * D, c.N, c.H}
    local x, w, h0 = arr(c.x, {c.T, c.N, c.I}), arr(c.params, {#c.params}), arr(c.h0, sshape)
    local c0 = c.c0 and arr(c.c0, cshape)
    local inputs = {x, w, h0, c0}
    for _, a in pairs(inputs) do a:attach_grad() end
    local po, ph = arr(c.po, {c.T, c.N, D * S}), arr(c.ph, sshape)
    local pc = c.pc and arr(c.pc, cshape)
    local out, hy, cy
    mx.autograd.record(function()
      out, hy, cy = mx.nd.RNN(fused_args(c, x, w, h0, c0), fused_params(c))
      local s = (out * po):sum() + (hy * ph):sum()
      if pc then s = s + (cy * pc):sum() end
      return s
    end):backward()
    local tol = {rtol = 1e-9, atol = 1e-11}
    local function same(a, want, name)
      tu.assert_almost_equal(flatten(a:totable()), want,
          {rtol = tol.rtol, atol = tol.atol, names = {'tessera ' .. name, 'pytorch ' .. name}})
    end
    same(out, c.out, 'output')
    same(hy, c.hy, 'hy')
    if c.cy then same(cy, c.cy, 'cy') end
    same(x.grad, c.dx, 'd data')
    same(w.grad, c.dparams, 'd parameters')
    same(h0.grad, c.dh0, 'd state')
    if c.dc0 then same(c0.grad, c.dc0, 'd state_cell') end
  end)
end

test('float16 and bfloat16: the loop computes in float, products summed in float', function()
  local V = mx.sym.Variable
  for _, dt in ipairs({'float16', 'bfloat16'}) do
    for _, mode in ipairs({'lstm', 'gru', 'rnn_tanh'}) do
      local args = {data = V('data'), parameters = V('parameters'), state = V('state'),
                    mode = mode, state_size = 6, num_layers = 2, bidirectional = true,
                    state_outputs = true}
      if mode == 'lstm' then args.state_cell = V('state_cell') end
      local sym = mx.sym.RNN(args)
      local arg_shapes = sym:infer_shape({data = {5, 3, 4}})
      local ref = {ctx = mx.cpu(0), type_dict = {}}
      local half = {ctx = mx.cpu(0), type_dict = {}}
      for i, name in ipairs(sym:list_arguments()) do
        ref[name], half[name] = arg_shapes[i], arg_shapes[i]
        ref.type_dict[name], half.type_dict[name] = 'float64', dt
      end
      local w = mx.nd.random.uniform(-0.4, 0.4, arg_shapes[2], {dtype = 'float64'})
      local ok, err = pcall(tu.check_consistency, sym, {ref, half}, {arg_params = {parameters = w}})
      assert(ok, ('%s %s: %s'):format(dt, mode, tostring(err)))
    end
  end
  -- The LSTM's projection and clip with sequence lengths (the lengths in the 16-bit type too).
  local sym = mx.sym.RNN{data = V('data'), parameters = V('parameters'), state = V('state'),
                         state_cell = V('state_cell'), sequence_length = V('sequence_length'),
                         mode = 'lstm', state_size = 6, num_layers = 1, bidirectional = true,
                         projection_size = 3, lstm_state_clip_min = -0.5,
                         lstm_state_clip_max = 0.5, use_sequence_length = true,
                         state_outputs = true}
  local arg_shapes = sym:infer_shape({data = {5, 3, 4}})
  local ref = {ctx = mx.cpu(0), type_dict = {}}
  local half = {ctx = mx.cpu(0), type_dict = {}}
  for i, name in ipairs(sym:list_arguments()) do
    ref[name], half[name] = arg_shapes[i], arg_shapes[i]
    ref.type_dict[name], half.type_dict[name] = 'float64', 'float16'
  end
  tu.check_consistency(sym, {ref, half}, {arg_params = {
    parameters = mx.nd.random.uniform(-0.4, 0.4, arg_shapes[2], {dtype = 'float64'}),
    sequence_length = mx.nd.array({5, 2, 3}, {dtype = 'float64'})}})
  -- The outputs keep the 16-bit dtype.
  local x = mx.nd.ones({2, 1, 3}, {dtype = 'float16'})
  local y = mx.nd.RNN({x, mx.nd.ones({14}, {dtype = 'float16'}) * 0.1,
                       mx.nd.zeros({1, 1, 2}, {dtype = 'float16'})},
                      {state_size = 2, num_layers = 1, mode = 'rnn_tanh'})
  assert_eq(y.dtype, 'float16')
  tu.assert_almost_equal(y:astype('float32'), mx.nd.RNN({x:astype('float32'),
      mx.nd.ones({14}) * 0.1, mx.nd.zeros({1, 1, 2})}, {state_size = 2, num_layers = 1,
      mode = 'rnn_tanh'}), {rtol = 1e-3, atol = 1e-3})
end)
