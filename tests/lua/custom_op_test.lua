-- mx.operator: operators written in Lua, in NDArray calls, symbols,
-- executors and autograd; their bodies run on the interpreter thread through
-- the engine, so waits, nested pushes, chains and errors are tested here.

local tu = mx.test_utils
local function close(a, b, tol) tu.assert_almost_equal(a, b, {rtol = tol or 1e-5, atol = tol or 1e-6}) end

-- y = x^2 (default property: one argument, one output of its shape).
local Square = mx.operator.CustomOp:extend()
function Square:forward(is_train, req, in_data, out_data)
  self:assign(out_data[1], req[1], in_data[1] * in_data[1])
end
function Square:backward(req, out_grad, in_data, out_data, in_grad)
  self:assign(in_grad[1], req[1], out_grad[1] * in_data[1] * 2)
end
local SquareProp = {}
function SquareProp:create_operator() return setmetatable({}, Square) end
mx.operator.register('t_square', SquareProp)

-- Softmax with a label, as the reference's example: no top gradient, the
-- label's shape inferred from the data's.
local Softmax = mx.operator.CustomOp:extend()
function Softmax:forward(is_train, req, in_data, out_data)
  local x = in_data[1]
  local e = mx.nd.exp(x - mx.nd.max(x, {axis = 2, keepdims = true}))
  self:assign(out_data[1], req[1], mx.nd.broadcast_div(e, mx.nd.sum(e, {axis = 2, keepdims = true})))
end
function Softmax:backward(req, out_grad, in_data, out_data, in_grad)
  local y = out_data[1]
  local onehot = mx.nd.one_hot(in_data[2], {depth = y.shape[2]})
  self:assign(in_grad[1], req[1], y - onehot)
  self:assign(in_grad[2], req[2], 0)
end
local SoftmaxProp = mx.operator.CustomOpProp:extend{need_top_grad = false}
function SoftmaxProp:list_arguments() return {'data', 'label'} end
function SoftmaxProp:infer_shape(in_shape)
  local d = in_shape[1]
  return {d, {d[1]}}, {d}, {}
end
function SoftmaxProp:create_operator() return setmetatable({}, Softmax) end
mx.operator.register('t_softmax', SoftmaxProp)

test('forward and backward of a Lua op on NDArrays and under autograd', function()
  local x = mx.nd.array({{1, 2}, {3, -4}})
  close(mx.nd.Custom(x, {op_type = 't_square'}), {{1, 4}, {9, 16}})
  x:attach_grad()
  local y = mx.autograd.record(function() return mx.nd.Custom(x, {op_type = 't_square'}) end)
  y:backward(mx.nd.array({{1, 1}, {2, 2}}))
  close(x.grad, {{2, 4}, {12, -16}})
  tu.check_autograd_gradient(function(a) return mx.nd.Custom(a, {op_type = 't_square'}) end,
    {{{0.5, -1}, {2, 0.25}}})
end)

test('symbols: names, shape inference (label from data), executor gradients', function()
  local data, label = mx.sym.Variable('data'), mx.sym.Variable('label')
  local s = mx.sym.Custom{data = data, label = label, op_type = 't_softmax', name = 'sm'}
  assert_eq(s:list_arguments(), {'data', 'label'})
  assert_eq(s:list_outputs(), {'sm_output'})
  local args, outs = s:infer_shape{data = {4, 3}}
  assert_eq(args, {{4, 3}, {4}})
  assert_eq(outs, {{4, 3}})
  local exe = s:simple_bind{ctx = mx.cpu(), data = {2, 3}}
  exe:forward{is_train = true, data = {{1, 2, 3}, {0, 0, 0}}, label = {2, 0}}
  local e = {math.exp(1), math.exp(2), math.exp(3)}
  local z = e[1] + e[2] + e[3]
  close(exe.outputs[1], {{e[1] / z, e[2] / z, e[3] / z}, {1 / 3, 1 / 3, 1 / 3}})
  exe:backward()
  close(exe.grad_dict.data, {{e[1] / z, e[2] / z, e[3] / z - 1}, {1 / 3 - 1, 1 / 3, 1 / 3}})
  close(exe.grad_dict.label, {0, 0})
  local sq = mx.sym.Custom(mx.sym.Variable('x'), {op_type = 't_square'})
  tu.check_numeric_gradient(sq, {{{0.5, -1, 2}}})
  tu.check_numeric_gradient(sq, {{{0.5, -1, 2}}}, {grad_req = 'add'})
end)

test('a Lua op mixed with built-in ops in an executor, twice in a chain', function()
  local x = mx.sym.Variable('x')
  local h = mx.sym.Custom(x * 2, {op_type = 't_square'})
  local s = mx.sym.Custom(h + 1, {op_type = 't_square'})  -- (4x^2 + 1)^2
  local exe = s:simple_bind{ctx = mx.cpu(), x = {3}}
  exe:forward{is_train = true, x = {1, -0.5, 2}}
  close(exe.outputs[1], {25, 4, 289})
  exe:backward()
  -- d/dx (4x^2+1)^2 = 2 (4x^2+1) 8x
  close(exe.grad_dict.x, {80, -16, 544})
end)

test('kwargs reach the constructor as strings; aux states are written in place', function()
  local Counter = mx.operator.CustomOp:extend()
  function Counter:forward(is_train, req, in_data, out_data, aux)
    self:assign(out_data[1], req[1], in_data[1] * self.scale)
    aux[1]:add_(1)
  end
  local seen
  local CounterProp = {}
  function CounterProp:init(kwargs)
    seen = kwargs
    self.scale = tonumber(kwargs.scale)
  end
  function CounterProp:list_auxiliary_states() return {'count'} end
  function CounterProp:create_operator() return setmetatable({scale = self.scale}, Counter) end
  mx.operator.register('t_counter', CounterProp)
  local x, count = mx.nd.array({1, 2}), mx.nd.zeros({2})
  local y = mx.nd.Custom(x, count, {op_type = 't_counter', scale = 3, flag = true})
  close(y, {3, 6})
  assert_eq(seen, {scale = '3', flag = 'True'})
  mx.nd.Custom(x, count, {op_type = 't_counter', scale = 1})
  close(count, {2, 2})
  local s = mx.sym.Custom{data = mx.sym.Variable('d'), op_type = 't_counter', scale = '2', name = 'c'}
  assert_eq(s:list_auxiliary_states(), {'c_count'})
end)

test('infer_type of a Lua op decides the output dtype; need_top_grad as a method', function()
  local Widen = mx.operator.CustomOp:extend()
  function Widen:forward(is_train, req, in_data, out_data)
    self:assign(out_data[1], req[1], in_data[1]:astype('float64') * 2)
  end
  function Widen:backward(req, out_grad, in_data, out_data, in_grad)
    assert(out_grad[1] == nil, 'no top gradient was declared')
    self:assign(in_grad[1], req[1], 1)
  end
  local WidenProp = {}
  function WidenProp:need_top_grad() return false end
  function WidenProp:infer_type(in_type) return in_type, {'float64'}, {} end
  function WidenProp:create_operator(ctx, shapes, dtypes)
    assert(dtypes[1] == 'float32' and shapes[1][1] == 3)
    return setmetatable({}, Widen)
  end
  mx.operator.register('t_widen', WidenProp)
  local x = mx.nd.array({1, 2, 3})
  local y = mx.nd.Custom(x, {op_type = 't_widen'})
  assert_eq(y.dtype, 'float64')
  close(y, {2, 4, 6})
  local _, outs = mx.sym.Custom(mx.sym.Variable('x'), {op_type = 't_widen'}):infer_type{x = 'float32'}
  assert_eq(outs, {'float64'})
  x:attach_grad()
  mx.autograd.record(function() return mx.nd.Custom(x, {op_type = 't_widen'}) end):backward()
  close(x.grad, {1, 1, 1})
end)

test('bodies that wait, push further ops and read their inputs', function()
  local Waiting = mx.operator.CustomOp:extend()
  function Waiting:forward(is_train, req, in_data, out_data)
    local t = in_data[1]:totable()  -- a wait inside the body
    local s = 0
    for _, v in ipairs(t) do s = s + v end
    local tmp = in_data[1] + s      -- pushes
    tmp:wait_to_read()
    self:assign(out_data[1], req[1], tmp * 1)
  end
  mx.operator.register('t_wait', {create_operator = function() return setmetatable({}, Waiting) end})
  local x = mx.nd.array({1, 2, 3})
  local y = mx.nd.Custom(x * 1, {op_type = 't_wait'})  -- its input is still being computed
  local z = mx.nd.Custom(y, {op_type = 't_wait'})       -- depends on the first
  close(z, {7 + 24, 8 + 24, 9 + 24})
  -- many in flight, interleaved with built-in ops, against a reference
  local outs = {}
  for i = 1, 20 do
    outs[i] = mx.nd.Custom(mx.nd.array({i, 0, 0}) + 1, {op_type = 't_wait'}) * 2
  end
  mx.nd.waitall()
  for i = 1, 20 do close(outs[i], {4 * i + 8, 2 * i + 8, 2 * i + 8}) end
end)

test('an error in a body surfaces at the wait with the op name; everything keeps working', function()
  local Bad = mx.operator.CustomOp:extend()
  function Bad:forward() error('custom boom') end
  mx.operator.register('t_bad', {create_operator = function() return setmetatable({}, Bad) end})
  local x = mx.nd.array({1, 2})
  local y = mx.nd.Custom(x, {op_type = 't_bad'})
  local after = y + 1  -- poisoned by y
  local err = assert_error(function() after:wait_to_read() end, 'custom boom')
  assert(err:find("Custom 't_bad' forward"), err)
  close(mx.nd.Custom(x, {op_type = 't_square'}), {1, 4})
  -- an error inside an executor's forward
  local exe = mx.sym.Custom(mx.sym.Variable('x'), {op_type = 't_bad'}):simple_bind{x = {2}}
  exe:forward{x = {1, 2}}
  assert_error(function() exe.outputs[1]:wait_to_read() end, 'custom boom')
  -- an error from an op the body pushed
  local Inner = mx.operator.CustomOp:extend()
  function Inner:forward(is_train, req, in_data, out_data)
    mx.engine._fail('inner boom', {write = {out_data[1]}})
  end
  mx.operator.register('t_inner', {create_operator = function() return setmetatable({}, Inner) end})
  assert_error(function() mx.nd.Custom(x, {op_type = 't_inner'}):wait_to_read() end, 'inner boom')
  mx.nd.waitall()
  close(mx.nd.Custom(x, {op_type = 't_square'}) + 1, {2, 5})
end)

test('a Lua op that calls itself stops at a nesting limit with a clear error', function()
  -- Through the queue (each level's body returns at once) and through waits
  -- (each level's body waits for the next): both end at the limit.
  local Again = mx.operator.CustomOp:extend()
  function Again:forward(is_train, req, in_data, out_data)
    self:assign(out_data[1], req[1], mx.nd.Custom(in_data[1], {op_type = 't_again'}))
  end
  mx.operator.register('t_again', {create_operator = function() return setmetatable({}, Again) end})
  local y = mx.nd.Custom(mx.nd.array({1, 2}), {op_type = 't_again'})
  local err = assert_error(function() y:wait_to_read() end, 'nested more than 100 deep')
  assert(err:find("Custom 't_again'"), err)
  local Deeper = mx.operator.CustomOp:extend()
  function Deeper:forward(is_train, req, in_data, out_data)
    local z = mx.nd.Custom(in_data[1], {op_type = 't_deeper'})
    z:wait_to_read()
    self:assign(out_data[1], req[1], z)
  end
  mx.operator.register('t_deeper', {create_operator = function() return setmetatable({}, Deeper) end})
  assert_error(function() mx.nd.Custom(mx.nd.array({1}), {op_type = 't_deeper'}):wait_to_read() end,
    'nested more than 100 deep')
  pcall(mx.nd.waitall)
  -- Nesting that ends is fine, and the shell carries on.
  local Twice = mx.operator.CustomOp:extend()
  function Twice:forward(is_train, req, in_data, out_data)
    self:assign(out_data[1], req[1], mx.nd.Custom(in_data[1], {op_type = 't_square'}) * 2)
  end
  mx.operator.register('t_twice', {create_operator = function() return setmetatable({}, Twice) end})
  close(mx.nd.Custom(mx.nd.array({3}), {op_type = 't_twice'}), {18})
end)

test('bad properties and unknown op types are clear errors', function()
  local x = mx.nd.array({1, 2})
  assert_error(function() mx.nd.Custom(x, {op_type = 't_nope'}) end, "op_type 't_nope' is not registered")
  assert_error(function() mx.nd.Custom(x) end, 'op_type')
  mx.operator.register('t_badshape', {
    infer_shape = function() return {{2}}, {} end,
    create_operator = function() return setmetatable({}, Square) end})
  assert_error(function() mx.nd.Custom(x, {op_type = 't_badshape'}) end,
    'infer_shape returned 0 output shapes')
  mx.operator.register('t_raises', {list_outputs = function() error('no outputs today') end})
  assert_error(function() mx.nd.Custom(x, {op_type = 't_raises'}) end, 'no outputs today')
  mx.operator.register('t_noop', {create_operator = function() return 42 end})
  assert_error(function() mx.nd.Custom(x, {op_type = 't_noop'}) end, 'must return the operator')
  mx.operator.register('t_conflict', {
    infer_shape = function(_, s) return s, {{5}}, {} end,
    create_operator = function() return setmetatable({}, Square) end})
  assert_error(function() mx.nd.Custom(x, {op_type = 't_conflict', out = mx.nd.zeros({2})}) end, 'Custom')
  assert_error(function() mx.operator.register('', {}) end, 'non%-empty')
end)

test('registering a name again replaces it', function()
  local Twice = mx.operator.CustomOp:extend()
  function Twice:forward(is_train, req, in_data, out_data) self:assign(out_data[1], req[1], in_data[1] * 2) end
  mx.operator.register('t_edit', {create_operator = function() return setmetatable({}, Square) end})
  mx.operator.register('t_edit', {create_operator = function() return setmetatable({}, Twice) end})
  close(mx.nd.Custom(mx.nd.array({3}), {op_type = 't_edit'}), {6})
  local found = false
  for _, n in ipairs(mx.operator.list()) do found = found or n == 't_edit' end
  assert(found)
end)

test('symbols with Lua ops save to JSON and load back', function()
  local s = mx.sym.Custom(mx.sym.Variable('x'), {op_type = 't_square', name = 'sq'})
  local back = mx.sym.fromjson(s:tojson())
  local exe = back:simple_bind{x = {2}}
  exe:forward{x = {3, 4}}
  close(exe.outputs[1], {9, 16})
end)

test('the naive engine runs Lua ops inline', function()
  mx.engine.set_type('naive')
  local ok, err = pcall(function()
    local x = mx.nd.array({1, 2})
    close(mx.nd.Custom(mx.nd.Custom(x, {op_type = 't_square'}), {op_type = 't_square'}), {1, 16})
    x:attach_grad()
    mx.autograd.record(function() return mx.nd.Custom(x, {op_type = 't_square'}) end):backward()
    close(x.grad, {2, 4})
  end)
  mx.engine.set_type('threaded')
  assert(ok, err)
end)

test('the reference softmax as a loss trains a small classifier', function()
  -- two separable blobs; one FullyConnected layer, the Lua softmax as loss
  mx.random.seed(3)
  local n = 64
  local xs, ys = {}, {}
  for i = 1, n do
    local c = i % 2
    xs[i] = {c * 2 - 1 + 0.3 * math.sin(i), (c * 2 - 1) * 0.5 + 0.3 * math.cos(i)}
    ys[i] = c
  end
  local data, label = mx.sym.Variable('data'), mx.sym.Variable('label')
  local fc = mx.sym.FullyConnected{data = data, num_hidden = 2, name = 'fc'}
  local net = mx.sym.Custom{data = fc, label = label, op_type = 't_softmax', name = 'sm'}
  local exe = net:simple_bind{data = {n, 2}, label = {n}}
  mx.nd.array({{0.1, -0.1}, {-0.1, 0.1}}):copyto(exe.arg_dict.fc_weight)
  exe.arg_dict.fc_bias[{1, 2}] = 0
  for _ = 1, 30 do
    exe:forward{is_train = true, data = xs, label = ys}
    exe:backward()
    for _, name in ipairs({'fc_weight', 'fc_bias'}) do
      mx.nd.sgd_update(exe.arg_dict[name], exe.grad_dict[name], {lr = 0.05, out = exe.arg_dict[name]})
    end
  end
  exe:forward{data = xs, label = ys}
  local pred = mx.nd.argmax(exe.outputs[1], {axis = 2}):totable()
  local right = 0
  for i = 1, n do if pred[i] == ys[i] then right = right + 1 end end
  assert(right == n, ('accuracy %d/%d'):format(right, n))
end)

-- ---- elementwise operators compiled by LuaJIT ---------------------------------

mx.operator.elementwise{name = 't_softplus',
  forward = function(x) return math.log(1 + math.exp(x)) end,
  backward = function(x, y, dy) return dy / (1 + math.exp(-x)) end}
mx.operator.elementwise{name = 't_axpy',
  forward = function(a, x, y) return a * x + y end,
  backward = function(a, x, y, out, dout) return dout * x, dout * a, dout end}

test('JIT elementwise ops: values on NDArrays, float64, symbols', function()
  local x = mx.nd.array({-2, 0, 3})
  local sp = function(v) return math.log(1 + math.exp(v)) end
  close(mx.nd.t_softplus(x), {sp(-2), sp(0), sp(3)})
  close(mx.nd.t_softplus(x:astype('float64')), {sp(-2), sp(0), sp(3)}, 1e-12)
  local a, y = mx.nd.array({1, 2, 3}), mx.nd.array({10, 20, 30})
  close(mx.nd.t_axpy(a, x, y), {8, 20, 39})
  local s = mx.sym.t_axpy(mx.sym.Variable('a'), mx.sym.Variable('x'), mx.sym.Variable('y'))
  assert_eq(s:list_arguments(), {'a', 'x', 'y'})  -- named after forward's parameters
  local big = mx.nd.random.uniform(-1, 1, {1000, 10})
  close(mx.nd.t_softplus(big), mx.nd.Activation(big, {act_type = 'softrelu'}))
end)

test('JIT elementwise ops: gradients through autograd and executors', function()
  tu.check_autograd_gradient(function(v) return mx.nd.t_softplus(v) end, {{{-1, 0.5, 2}}})
  tu.check_autograd_gradient(function(a, x, y) return mx.nd.t_axpy(a, x, y) end,
    {{{1, 2}}, {{0.5, -1}}, {{3, 4}}})
  local s = mx.sym.t_axpy{a = mx.sym.Variable('a'), x = mx.sym.Variable('x'), y = mx.sym.Variable('y')}
  for _, req in ipairs({'write', 'add', 'null'}) do
    tu.check_numeric_gradient(s, {{{1, 2}}, {{0.5, -1}}, {{3, 4}}}, {grad_req = req})
  end
end)

test('JIT elementwise ops: bad definitions and inputs are clear errors', function()
  assert_error(function() mx.operator.elementwise{name = 'quadratic', forward = function(x) return x end} end,
    'built%-in')
  assert_error(function() mx.operator.elementwise{name = 'bad name', forward = function(x) return x end} end,
    'identifier')
  assert_error(function() mx.operator.elementwise{name = 't_noargs', forward = function() return 1 end} end,
    'no arguments')
  mx.operator.elementwise{name = 't_nograd', forward = function(x) return -x end}
  local x = mx.nd.array({1, 2})
  close(mx.nd.t_nograd(x), {-1, -2})
  x:attach_grad()
  assert_error(function()
    mx.autograd.record(function() return mx.nd.t_nograd(x) end):backward()
    x.grad:wait_to_read()
  end, 'has no backward')
  assert_error(function() mx.nd.t_axpy(mx.nd.ones({2}), mx.nd.ones({3}), mx.nd.ones({2})) end, 'one shape')
  assert_error(function() mx.nd.t_softplus(mx.nd.ones({2}, {dtype = 'int32'})):wait_to_read() end,
    'only float32 and float64')
  mx.nd.waitall()
end)

test('randomized: Lua, JIT and built-in ops with in-place writes match a sequential reference', function()
  math.randomseed(17)
  local ref, arrs = {}, {}
  for i = 1, 6 do
    ref[i] = {0.1 * i, -0.2 * i, 0.3, 0.05 * i}
    arrs[i] = mx.nd.array(ref[i], {dtype = 'float64'})
  end
  local function map(v, f)
    local r = {}
    for k = 1, #v do r[k] = f(v[k]) end
    return r
  end
  local sp = function(x) return math.log(1 + math.exp(x)) end
  local unary = {
    {function(a) return mx.nd.Custom(a, {op_type = 't_square'}) end, function(x) return x * x end},
    {function(a) return mx.nd.t_softplus(a) end, sp},
    {function(a) return a * 0.5 end, function(x) return x * 0.5 end},
    {function(a) return mx.nd.Custom(a, {op_type = 't_wait'}) * 0.1 end, nil},  -- sums: see below
  }
  for _ = 1, 300 do
    local r = math.random()
    local i, j = math.random(#arrs), math.random(#arrs)
    if r < 0.6 then
      local k = math.random(#unary)
      local op = unary[k]
      arrs[#arrs + 1] = op[1](arrs[i])
      if op[2] then
        ref[#ref + 1] = map(ref[i], op[2])
      else
        local s = 0
        for _, v in ipairs(ref[i]) do s = s + v end
        ref[#ref + 1] = map(ref[i], function(x) return (x + s) * 0.1 end)
      end
    elseif r < 0.8 then
      arrs[#arrs + 1] = mx.nd.t_axpy(arrs[i], arrs[j], arrs[i]) * 0.25
      local v = {}
      for k = 1, 4 do v[k] = (ref[i][k] * ref[j][k] + ref[i][k]) * 0.25 end
      ref[#ref + 1] = v
    else
      -- in place, while Lua ops reading the array may still be pending
      arrs[i]:mul_(0.5)
      ref[i] = map(ref[i], function(x) return x * 0.5 end)
    end
  end
  for k = 1, #arrs do close(arrs[k], ref[k], 1e-9) end
end)

-- A body that waits on the op's own output (the array the call returns, not
-- the alias it is given) would wait for the op itself.
local SelfWait = mx.operator.CustomOp:extend()
local self_wait_target
function SelfWait:forward(is_train, req, in_data, out_data)
  self:assign(out_data[1], req[1], in_data[1])
  self_wait_target:wait_to_read()
end
local SelfWaitProp = {}
function SelfWaitProp:create_operator() return setmetatable({}, SelfWait) end
mx.operator.register('t_self_wait', SelfWaitProp)

test('a body waiting on its own op output is an error, not a hang', function()
  local x = mx.nd.array({1, 2})
  local y = mx.nd.zeros({2})
  self_wait_target = y
  mx.nd.Custom(x, {op_type = 't_self_wait', out = y})
  assert_error(function() y:wait_to_read() end, 'would wait for the op itself')
  self_wait_target = nil
end)

test('the run-ahead bound never blocks the interpreter on the Lua ops it must run', function()
  local ops, bytes = mx.engine.set_max_inflight(2)
  local ok, err = pcall(function()
    -- pushed Lua functions: each needs the interpreter, which is the pusher
    local log, v = {}, mx.engine.new_var()
    for i = 1, 30 do mx.engine.push(function() log[#log + 1] = i end, {write = {v}}) end
    mx.engine.wait_for_var(v)
    assert_eq(#log, 30)
    -- Lua custom ops, and ops compiled from Lua (elementwise)
    local x = mx.nd.array({1, 2, 3})
    local y = x
    for _ = 1, 30 do y = mx.nd.Custom(y, {op_type = 't_square'}) / mx.nd.Custom(y, {op_type = 't_square'}) end
    close(y, {1, 1, 1})
    local z = mx.nd.zeros({3})
    for _ = 1, 30 do z = mx.nd.t_softplus(z) - mx.nd.t_softplus(mx.nd.zeros({3})) end
    close(z, {0, 0, 0})
    -- the byte bound too: every new array is larger than it
    mx.engine.set_max_inflight(0, 16)
    local w = mx.nd.ones({512})  -- 2 KiB: counted (smaller outputs are not)
    for _ = 1, 30 do w = mx.nd.Custom(w, {op_type = 't_square'}) + 0 end
    close(w, mx.nd.ones({512}))
  end)
  mx.engine.set_max_inflight(ops, bytes)
  assert(ok, err)
end)
