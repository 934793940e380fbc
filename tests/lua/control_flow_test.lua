-- mx.nd.contrib.foreach, while_loop and cond against unrolled loops, under
-- autograd too; the contrib namespaces; mx.sym.contrib's versions (subgraph
-- nodes that binding unrolls) against the mx.nd ones, values and gradients,
-- through JSON, hybridized blocks, and their errors.

local flat = mx.test_utils.flatten

test('foreach: a running sum, as the unrolled loop', function()
  local x = mx.nd.array({{1, 2}, {3, 4}, {5, 6}})
  local outs, final = mx.nd.contrib.foreach(function(xt, s)
    local n = s + xt
    return n, n
  end, x, mx.nd.zeros({2}))
  assert_eq(outs:totable(), {{1, 2}, {4, 6}, {9, 12}})
  assert_eq(final:totable(), {9, 12})
  -- Lists of data, states and outputs.
  local o, s = mx.nd.contrib.foreach(function(d, st)
    return {d[1] * 2, d[2] + st[1]}, {st[1] + 1, st[2] * d[1]}
  end, {mx.nd.array({1, 2, 3}), mx.nd.array({10, 20, 30})}, {mx.nd.array({0}), mx.nd.array({1})})
  assert_eq(o[1]:totable(), {{2}, {4}, {6}})
  assert_eq(o[2]:totable(), {{10}, {21}, {32}})
  assert_eq(s[1]:totable(), {3})
  assert_eq(s[2]:totable(), {6})
end)

test('foreach under autograd: gradients as the unrolled loop', function()
  local x = mx.nd.array({{1, 2}, {3, 4}, {5, 6}}, {dtype = 'float64'})
  local w = mx.nd.array({0.5, -1}, {dtype = 'float64'})
  x:attach_grad()
  w:attach_grad()
  mx.autograd.record(function()
    local outs = mx.nd.contrib.foreach(function(xt, s)
      local n = mx.nd.tanh(s * w + xt)
      return n, n
    end, x, mx.nd.zeros({2}, {dtype = 'float64'}))
    return outs:sum()
  end):backward()
  local gx, gw = flat(x.grad), flat(w.grad)
  local x2 = mx.nd.array({{1, 2}, {3, 4}, {5, 6}}, {dtype = 'float64'})
  local w2 = mx.nd.array({0.5, -1}, {dtype = 'float64'})
  x2:attach_grad()
  w2:attach_grad()
  mx.autograd.record(function()
    local s, total = mx.nd.zeros({2}, {dtype = 'float64'}), nil
    for t = 1, 3 do
      s = mx.nd.tanh(s * w2 + x2[t])
      total = total and total + s:sum() or s:sum()
    end
    return total
  end):backward()
  mx.test_utils.assert_almost_equal(gx, flat(x2.grad), {rtol = 1e-12, atol = 1e-14})
  mx.test_utils.assert_almost_equal(gw, flat(w2.grad), {rtol = 1e-12, atol = 1e-14})
end)

test('while_loop: stops on cond or max_iterations, outputs padded with zeros', function()
  local outs, vars = mx.nd.contrib.while_loop(
    function(i, s) return i:asscalar() < 4 end,
    function(i, s) return {s * 10}, {i + 1, s + i} end,
    {mx.nd.array({0}), mx.nd.array({1})}, 6)
  assert_eq(outs[1]:totable(), {{10}, {10}, {20}, {40}, {0}, {0}})
  assert_eq(vars[1]:totable(), {4})
  assert_eq(vars[2]:totable(), {7})
  local _, capped = mx.nd.contrib.while_loop(function() return true end,
    function(i) return nil, {i + 1} end, {mx.nd.array({0})}, 3)
  assert_eq(capped[1]:totable(), {3})
  assert_error(function() mx.nd.contrib.while_loop(function() return true end,
    function(i) return nil, {i, i} end, {mx.nd.array({0})}, 3) end, 'returned 2 loop variables for 1')
  assert_error(function() mx.nd.contrib.while_loop(function() return mx.nd.ones({2}) end,
    function(i) return nil, {i} end, {mx.nd.array({0})}, 3) end, 'must return one value')
end)

test('cond picks a branch; contrib names resolve to _contrib_ operators', function()
  local a = mx.nd.array({2})
  local r = mx.nd.contrib.cond(mx.nd.greater(a, mx.nd.array({1})), function() return a * 10 end,
    function() return a end)
  assert_eq(r:totable(), {20})
  r = mx.nd.contrib.cond(mx.nd.array({0}), function() return a * 10 end, function() return a end)
  assert_eq(r:totable(), {2})
  assert_eq(mx.nd.contrib.CTCLoss ~= nil, true)
  assert_eq(mx.sym.contrib.ctc_loss ~= nil, true)
  assert_eq(mx.nd.contrib.no_such_op, nil)
  assert_error(function() mx.sym.contrib.foreach() end, 'body must be a function')
end)

local tu = mx.test_utils

local function close(a, b, tol)
  local x, y = flat(a:totable()), flat(b:totable())
  assert_eq(#x, #y)
  for i = 1, #x do
    if math.abs(x[i] - y[i]) > (tol or 1e-5) * (1 + math.abs(y[i])) then
      error(('element %d: %g against %g'):format(i, x[i], y[i]), 2)
    end
  end
end

-- An RNN-like body: h = tanh(x * w + s + c), with c computed outside from a
-- free variable (cut out of the body) and two step outputs.
local function rnn_body(F, w, bias)
  return function(x, s)
    local h = F.tanh(F.broadcast_mul(x, w) + s[1] + bias)
    return {h * 2, F.sum(h)}, {h, s[2] + x}
  end
end

test('sym foreach: values and gradients as mx.nd.contrib.foreach under autograd', function()
  local data, w, b = mx.sym.Variable('data'), mx.sym.Variable('w'), mx.sym.Variable('b')
  local h0, c0 = mx.sym.Variable('h0'), mx.sym.Variable('c0')
  local bias = mx.sym.exp(b)  -- depends on no loop value: computed before the loop
  local outs, states = mx.sym.contrib.foreach(rnn_body(mx.sym, w, bias), data, {h0, c0})
  local g = mx.sym.Group({outs[1], outs[2], states[1], states[2]})
  assert_eq(g:list_arguments(), {'data', 'h0', 'c0', 'w', 'b'})
  local _, out_shapes = g:infer_shape{data = {4, 3}, h0 = {3}, c0 = {3}, w = {3}, b = {3}}
  assert_eq(out_shapes, {{4, 3}, {4, 1}, {3}, {3}})
  mx.random.seed(3)
  local args = {data = mx.nd.random.uniform(-1, 1, {4, 3}), h0 = mx.nd.random.uniform(-1, 1, {3}),
    c0 = mx.nd.zeros({3}), w = mx.nd.array({0.5, -1, 2}), b = mx.nd.array({0.1, 0.2, -0.3})}
  local grads = {}
  for k, v in pairs(args) do grads[k] = mx.nd.zeros(v.shape) end
  local exe = g:bind{ctx = mx.cpu(), args = args, args_grad = grads}
  exe:forward{is_train = true}
  local heads = {}
  for i, o in ipairs(exe.outputs) do heads[i] = mx.nd.random.uniform(-1, 1, o.shape) end
  exe:backward(heads)
  -- The same loop on arrays, recorded.
  local copies = {}
  for k, v in pairs(args) do copies[k] = v:copy(); copies[k]:attach_grad() end
  local ro, rs
  mx.autograd.record(function()
    ro, rs = mx.nd.contrib.foreach(rnn_body(mx.nd, copies.w, mx.nd.exp(copies.b)), copies.data,
      {copies.h0, copies.c0})
  end)
  mx.autograd.backward({ro[1], ro[2], rs[1], rs[2]}, heads)
  close(exe.outputs[1], ro[1])
  close(exe.outputs[2], ro[2])
  close(exe.outputs[3], rs[1])
  close(exe.outputs[4], rs[2])
  for _, k in ipairs({'data', 'h0', 'c0', 'w', 'b'}) do close(exe.grad_dict[k], copies[k].grad) end
end)

test('sym foreach: central differences, write and add', function()
  local data, w, h0 = mx.sym.Variable('data'), mx.sym.Variable('w'), mx.sym.Variable('h0')
  local outs, states = mx.sym.contrib.foreach(function(x, s)
    local h = mx.sym.sigmoid(mx.sym.dot(x, w) + s)
    return h, h
  end, data, h0)
  local g = mx.sym.Group({outs, states})
  local loc = {data = mx.nd.random.uniform(-1, 1, {3, 2, 4}), w = mx.nd.random.uniform(-1, 1, {4, 5}),
    h0 = mx.nd.random.uniform(-1, 1, {2, 5})}
  tu.check_numeric_gradient(g, loc)
  tu.check_numeric_gradient(g, loc, {grad_req = 'add'})
end)

test('sym foreach: JSON round trip, nested loops, partial shapes, simple_bind', function()
  local data, h0 = mx.sym.Variable('data'), mx.sym.Variable('h0')
  -- An outer loop over rows whose body loops over the row's elements.
  local outs, final = mx.sym.contrib.foreach(function(row, s)
    local inner, acc = mx.sym.contrib.foreach(function(x, t)
      return t + x, t + x
    end, row, s)
    return inner, acc * 0.5
  end, data, h0, {name = 'outer'})
  local g = mx.sym.Group({outs, final})
  local js = g:tojson()
  assert_eq(mx.sym.fromjson(js):tojson(), js)
  local path = os.tmpname()
  g:save(path)
  local g2 = mx.sym.load(path)
  os.remove(path)
  local x = mx.nd.array({{{1}, {2}}, {{3}, {4}}, {{5}, {6}}})
  local args = {data = x, h0 = mx.nd.array({0})}
  local e1 = g:bind{ctx = mx.cpu(), args = args}
  local e2 = g2:bind{ctx = mx.cpu(), args = args}
  e1:forward{}
  e2:forward{}
  -- rows: [1, 2] from 0 -> 1, 3 (state 1.5); [3, 4] from 1.5 -> 4.5, 8.5 (4.25); [5, 6] -> 9.25, 15.25
  assert_eq(e1.outputs[1]:reshape({-1}):totable(), {1, 3, 4.5, 8.5, 9.25, 15.25})
  assert_eq(e1.outputs[2]:totable(), {7.625})
  close(e2.outputs[1], e1.outputs[1])
  -- Shapes flow backwards through the body: the state's shape from data's.
  local arg_shapes, out_shapes = g:infer_shape{data = {3, 2, 1}}
  assert_eq(arg_shapes, {{3, 2, 1}, {1}})
  assert_eq(out_shapes, {{3, 2, 1}, {1}})
  local exe = g:simple_bind{ctx = mx.cpu(), data = {5, 2, 1}, h0 = {1}}
  assert_eq(exe.outputs[1].shape, {5, 2, 1})
end)

test('sym while_loop: values as mx.nd.contrib.while_loop, zeros past the end, gradients', function()
  local i0, s0, limit = mx.sym.Variable('i0'), mx.sym.Variable('s0'), mx.sym.Variable('limit')
  local outs, vars = mx.sym.contrib.while_loop(
    function(i, s) return mx.sym.broadcast_lesser_equal(i, limit) end,
    function(i, s) return {s * s}, {i + 1, s + i} end, {i0, s0}, 6)
  local g = mx.sym.Group({outs[1], vars[1], vars[2]})
  assert_eq(g:list_arguments(), {'i0', 's0', 'limit'})
  local args = {i0 = mx.nd.array({1}), s0 = mx.nd.array({0.5}), limit = mx.nd.array({4})}
  local exe = g:bind{ctx = mx.cpu(), args = args}
  exe:forward{}
  local ro, rv = mx.nd.contrib.while_loop(
    function(i, s) return mx.nd.broadcast_lesser_equal(i, args.limit) end,
    function(i, s) return {s * s}, {i + 1, s + i} end, {args.i0, args.s0}, 6)
  close(exe.outputs[1], ro[1])
  assert_eq(exe.outputs[1]:reshape({-1}):totable(), {0.25, 2.25, 12.25, 42.25, 0, 0})
  close(exe.outputs[2], rv[1])
  close(exe.outputs[3], rv[2])
  -- Gradients reach s0 through the steps taken only (limit, i0 get none
  -- through the comparison; i0 through s + i).
  tu.check_numeric_gradient(g, {i0 = mx.nd.array({1}), s0 = mx.nd.array({0.5}),
    limit = mx.nd.array({4})}, {grad_nodes = {'s0'}})
  local js = g:tojson()
  assert_eq(mx.sym.fromjson(js):tojson(), js)
  assert_error(function()
    mx.sym.contrib.while_loop(function(i) return i end, function(i) return nil, {i + 1} end, {i0}, 0)
  end, 'max_iterations must be a whole number >= 1')
end)

test('sym cond: the branch pred picks, its gradient only', function()
  local a, b, p = mx.sym.Variable('a'), mx.sym.Variable('b'), mx.sym.Variable('p')
  local out = mx.sym.contrib.cond(mx.sym.sum(p), function() return a * a end,
    function() return mx.sym.exp(b) end)
  for _, pv in ipairs({1, 0}) do
    local args = {a = mx.nd.array({1, 2}), b = mx.nd.array({0, 1}), p = mx.nd.array({pv, 0})}
    local grads = {a = mx.nd.zeros({2}), b = mx.nd.zeros({2}), p = mx.nd.zeros({2})}
    local exe = out:bind{ctx = mx.cpu(), args = args, args_grad = grads}
    exe:forward{is_train = true}
    exe:backward{mx.nd.ones({2})}
    local want = mx.nd.contrib.cond(mx.nd.sum(args.p), function() return args.a * args.a end,
      function() return mx.nd.exp(args.b) end)
    close(exe.outputs[1], want)
    if pv == 1 then
      assert_eq(grads.a:totable(), {2, 4})
      assert_eq(grads.b:totable(), {0, 0})
    else
      assert_eq(grads.a:totable(), {0, 0})
      close(grads.b, mx.nd.exp(args.b))
    end
  end
  local js = out:tojson()
  assert_eq(mx.sym.fromjson(js):tojson(), js)
end)

test('a hybridized block with F.contrib.foreach matches the imperative block', function()
  local gluon = mx.gluon
  local Net = gluon.HybridBlock:extend('LoopNet')
  function Net:__init()
    gluon.HybridBlock.__init(self)
    self:name_scope(function() self.dense = gluon.nn.Dense(3, {in_units = 3, flatten = false}) end)
  end
  function Net:hybrid_forward(F, x, h0)
    local outs, h = F.contrib.foreach(function(xt, s)
      local n = F.tanh(self.dense(xt) + s)
      return n, n
    end, x, h0)
    return outs, h
  end
  mx.random.seed(5)
  local x = mx.nd.random.uniform(-1, 1, {4, 2, 3})
  local h0 = mx.nd.zeros({2, 3})
  local results = {}
  for _, hybrid in ipairs({false, true}) do
    local net = Net()
    net:initialize(mx.init.Xavier())
    if results[1] then net.dense.weight:set_data(results[1].w) end
    if hybrid then net:hybridize() end
    local xx = x:copy()
    xx:attach_grad()
    local outs, h
    mx.autograd.record(function() outs, h = net(xx, h0) end)
    mx.autograd.backward({outs, h})
    results[#results + 1] = {w = net.dense.weight:data():copy(), outs = outs, h = h,
      gx = xx.grad, gw = net.dense.weight:grad()}
  end
  close(results[2].outs, results[1].outs)
  close(results[2].h, results[1].h)
  close(results[2].gx, results[1].gx)
  close(results[2].gw, results[1].gw)
end)

test('sym control flow: errors name the problem', function()
  local data, h0 = mx.sym.Variable('data'), mx.sym.Variable('h0')
  assert_error(function()
    mx.sym.contrib.foreach(function(x, s) return x, {x} end, data, {h0})
  end, 'does not read state 1')
  assert_error(function()
    mx.sym.contrib.foreach(function(x, s) return x, {} end, data, {h0})
  end, 'returned 0 states for 1')
  assert_error(function()
    mx.sym.contrib.foreach(function(x, s)
      local bn = mx.sym.BatchNorm{data = x + s[1], name = 'bn'}
      return bn, {bn}
    end, data, {h0})
  end, 'updates an auxiliary state')
  -- Data arrays of different lengths.
  local d2 = mx.sym.Variable('d2')
  local outs = mx.sym.contrib.foreach(function(x, s) return x[1] + x[2] + s[1], {s[1] * 1} end, {data, d2}, {h0})
  assert_error(function() outs:infer_shape{data = {3, 2}, d2 = {4, 2}, h0 = {2}} end,
    'every data array needs the same first axis')
  -- cond must give one value.
  local a = mx.sym.Variable('a')
  local _, v = mx.sym.contrib.while_loop(function(i) return i end,
    function(i) return nil, {i + 1} end, {a}, 3)
  assert_error(function() v[1]:bind{ctx = mx.cpu(), args = {a = mx.nd.ones({2})}} end,
    'it must give one value')
  -- A control-flow op on arrays has no subgraph to run.
  assert_error(function() mx.nd._foreach(mx.nd.ones({2}), {num_args = 2, num_outputs = 1, num_out_data = 1,
    in_data_locs = {0}, in_state_locs = {}, remain_locs = {}}) end, 'subgraph')
end)

test('Module trains an RNN built with mx.sym.contrib.foreach (no step outputs, the last state)', function()
  mx.random.seed(2)
  local T, B, D, H = 6, 16, 4, 8
  local n = 128
  local x = mx.nd.random.uniform(-1, 1, {n, T, D})
  local xs = x:totable()
  local y = {}
  for i = 1, n do local s = 0; for t = 1, T do s = s + xs[i][t][1] end; y[i] = s > 0 and 1 or 0 end
  local data = mx.sym.Variable('data')
  local seq = mx.sym.transpose(data, {axes = {2, 1, 3}})   -- (T, B, D)
  local h0 = mx.sym.zeros{shape = {B, H}}
  local wx, wh = mx.sym.Variable('wx_weight'), mx.sym.Variable('wh_weight')
  local _, states = mx.sym.contrib.foreach(function(xt, s)
    local h = mx.sym.tanh(mx.sym.FullyConnected{data = xt, weight = wx, num_hidden = H, no_bias = true}
      + mx.sym.FullyConnected{data = s[1], weight = wh, num_hidden = H, no_bias = true})
    return nil, {h}
  end, seq, {h0})
  local out = mx.sym.FullyConnected{data = states[1], num_hidden = 2, name = 'out'}
  out = mx.sym.SoftmaxOutput{data = out, name = 'softmax'}
  assert_eq(out:list_arguments(), {'data', 'wx_weight', 'wh_weight', 'out_weight', 'out_bias', 'softmax_label'})
  local it = mx.io.NDArrayIter{data = x, label = mx.nd.array(y), batch_size = B, shuffle = true}
  local mod = mx.mod.Module(out)
  mod:fit(it, {num_epoch = 15, optimizer = 'adam', optimizer_params = {learning_rate = 0.02}, progress = false, initializer = mx.init.Xavier()})
  local acc = mod:score(mx.io.NDArrayIter{data = x, label = mx.nd.array(y), batch_size = B}, 'acc')[1][2]
  assert_eq(acc > 0.9, true, 'accuracy ' .. acc)
end)
