-- mx.nd: creation, dtypes, fields, printing, arithmetic, views and
-- assignment, 1-based indices and axes, errors.

local function has_op(name) return mx.nd[name] ~= nil end

-- Skips (with a message) a test that needs an op not registered yet.
local function needs(ops, fn)
  return function()
    for _, name in ipairs(ops) do
      if not has_op(name) then
        print('  skipped: operator ' .. name .. ' is not registered')
        return
      end
    end
    fn()
  end
end

test('array from nested tables: shape, dtype, ctx, values', function()
  local a = mx.nd.array({{1, 2, 3}, {4, 5, 6}})
  assert_eq(a.shape, {2, 3})
  assert_eq(a.dtype, 'float32')
  assert_eq(a.ctx, mx.cpu())
  assert_eq(a.size, 6)
  assert_eq(a.ndim, 2)
  assert_eq(#a, 2)
  assert_eq(a:totable(), {{1, 2, 3}, {4, 5, 6}})
  assert_eq(mx.nd.is_ndarray(a), true)
  assert_eq(mx.nd.is_ndarray({}), false)
end)

test('arrays are told from other userdata, tables and values', function()
  -- Other full userdata (a file, proxies with their own metatables) sit
  -- where an array's metatable check looks: none may pass for an array.
  local a = mx.nd.array({1, 2})
  local others = {io.stdout, newproxy(true), newproxy(false), {}, 'x', true, print,
                  coroutine.create(function() end)}
  for _, v in ipairs(others) do
    assert_eq(mx.nd.is_ndarray(v), false)
    assert_error(function() return a + v end, 'got NDArray and ' .. type(v))
    assert_error(function() return v * a end, 'got ' .. type(v) .. ' and NDArray')
    assert_error(function() return mx.nd.exp(v) end, 'exp: ')
  end
  assert_eq((a + a):totable(), {2, 4})
end)

test('array dtypes and astype', function()
  for _, dt in ipairs({'float32', 'float64', 'int32', 'int64', 'int8', 'uint8'}) do
    local a = mx.nd.array({1, 2, 3}, {dtype = dt})
    assert_eq(a.dtype, dt)
    assert_eq(a:totable(), {1, 2, 3})
  end
  local b = mx.nd.array({1.5, 2.5}, {dtype = 'float64'}):astype('int32')
  assert_eq(b.dtype, 'int32')
  assert_eq(b:totable(), {1, 2})
  assert_eq(mx.nd.array(7):totable(), {7})
  assert_eq(mx.nd.array(3):asscalar(), 3)
  assert_error(function() mx.nd.array({{1, 2}, {3}}) end, 'ragged')
  assert_error(function() mx.nd.array({1, 'x'}) end, 'expected a number')
  assert_error(function() mx.nd.array({1}, {dtype = 'float33'}) end, 'float33')
end)

test('creation functions', needs({'_zeros', '_ones', '_full', '_empty', '_arange', '_eye'},
  function()
    assert_eq(mx.nd.zeros({2, 2}):totable(), {{0, 0}, {0, 0}})
    assert_eq(mx.nd.ones(3, {dtype = 'int32'}):totable(), {1, 1, 1})
    assert_eq(mx.nd.ones(3, {dtype = 'int32'}).dtype, 'int32')
    assert_eq(mx.nd.full({2}, 7.5):totable(), {7.5, 7.5})
    assert_eq(mx.nd.empty({4, 5}).shape, {4, 5})
    assert_eq(mx.nd.arange(0, 5):totable(), {0, 1, 2, 3, 4})
    assert_eq(mx.nd.arange(1, 2, 0.25):totable(), {1, 1.25, 1.5, 1.75})
    assert_eq(mx.nd.eye(2):totable(), {{1, 0}, {0, 1}})
    assert_eq(mx.nd.zeros({2, 3}, {ctx = mx.cpu(), dtype = 'float64'}).dtype, 'float64')
    local o = mx.nd.ones({2})
    local r = mx.nd.zeros({2}, {out = o})
    assert_eq(rawequal(r, o), true)
    assert_eq(o:totable(), {0, 0})
  end))

test('random: seeded runs repeat', needs({'_random_uniform', '_random_normal', '_random_randint'},
  function()
    mx.random.seed(42)
    local a = mx.nd.random.uniform(0, 1, {100}):totable()
    mx.random.seed(42)
    local b = mx.nd.random.uniform(0, 1, {100}):totable()
    assert_eq(a, b)
    for _, x in ipairs(a) do assert(x >= 0 and x < 1) end
    local n = mx.nd.random.normal(0, 1, {1000})
    assert_near(mx.nd.mean(n):asscalar(), 0, 0.2)
    local r = mx.nd.random.randint(3, 6, {50}, {dtype = 'int32'})
    assert_eq(r.dtype, 'int32')
    for _, x in ipairs(r:totable()) do assert(x >= 3 and x < 6) end
    assert_eq(mx.random.uniform, mx.nd.random.uniform)
  end))

test('printing shows values and footer', function()
  local a = mx.nd.array({{1, 2}, {3, 4}})
  local s = tostring(a)
  assert(s:find('NDArray float32 2x2 @cpu%(0%)'), s)
  assert(s:find('4'), s)
end)

test('arithmetic with broadcasting and scalars on both sides', function()
  local a = mx.nd.array({{1, 2}, {3, 4}})
  local row = mx.nd.array({{10, 20}})
  assert_eq((a + row):totable(), {{11, 22}, {13, 24}})
  local half = mx.nd.array({{2, 4}})
  assert_eq((a - 1):totable(), {{0, 1}, {2, 3}})
  assert_eq((1 - a):totable(), {{0, -1}, {-2, -3}})
  assert_eq((a * 2):totable(), {{2, 4}, {6, 8}})
  assert_eq((2 * a):totable(), {{2, 4}, {6, 8}})
  assert_eq((a / 2):totable(), {{0.5, 1}, {1.5, 2}})
  assert_eq((12 / a):totable(), {{12, 6}, {4, 3}})
  assert_eq((a % 3):totable(), {{1, 2}, {0, 1}})
  assert_eq((7 % a):totable(), {{0, 1}, {1, 3}})
  assert_eq((a ^ 2):totable(), {{1, 4}, {9, 16}})
  assert_eq((2 ^ a):totable(), {{2, 4}, {8, 16}})
  assert_eq((-a):totable(), {{-1, -2}, {-3, -4}})
  assert_eq((a * a - a / a):totable(), {{0, 3}, {8, 15}})
  assert_eq((a / half):totable(), {{0.5, 0.5}, {1.5, 1}})
  assert_eq((row - a[1]):totable(), {{9, 18}})
end)

test('comparisons and in-place forms', function()
  local a = mx.nd.array({1, 2, 3})
  local b = mx.nd.array({3, 2, 1})
  assert_eq(a:eq(b):totable(), {0, 1, 0})
  assert_eq(a:ne(2):totable(), {1, 0, 1})
  assert_eq(a:lt(b):totable(), {1, 0, 0})
  assert_eq(a:le(2):totable(), {1, 1, 0})
  assert_eq(a:gt(b):totable(), {0, 0, 1})
  assert_eq(a:ge(2):totable(), {0, 1, 1})
  local c = a:copy()
  assert_eq(rawequal(c:add_(b), c), true)
  assert_eq(c:totable(), {4, 4, 4})
  c:sub_(1):mul_(2):div_(3)
  assert_eq(c:totable(), {2, 2, 2})
  assert_eq(a:totable(), {1, 2, 3})  -- the copy did not share memory
end)

test('ops from the registry: positional inputs, params, lists, out=, several outputs', function()
  local a = mx.nd.array({{1, 2}, {3, 4}})
  local b = mx.nd.array({{5, 6}, {7, 8}})
  assert_eq(mx.nd.dot(a, b):totable(), {{19, 22}, {43, 50}})
  assert_eq(mx.nd.dot(a, b, {transpose_a = true}):totable(), {{26, 30}, {38, 44}})
  -- a list of inputs sets num_args; dim is a 1-based axis
  assert_eq(mx.nd.concat({a, b}, {dim = 1}).shape, {4, 2})
  assert_eq(mx.nd.concat({a, b}, {dim = 2}).shape, {2, 4})
  assert_eq(mx.nd.concat({a, b}, {dim = -1}).shape, {2, 4})
  local o = mx.nd.zeros({2, 2})
  local r = mx.nd.dot(a, b, {out = o})
  assert_eq(rawequal(r, o), true)
  assert_eq(o:totable(), {{19, 22}, {43, 50}})
  local p, q = mx.nd.split(a, {num_outputs = 2, axis = 2})
  assert_eq(p:totable(), {{1}, {3}})
  assert_eq(q:totable(), {{2}, {4}})
  -- inputs by name
  assert_eq(mx.nd.dot({lhs = a, rhs = b}):totable(), {{19, 22}, {43, 50}})
  -- aliases and ops as methods
  assert_eq(a:sum():asscalar(), 10)
  assert_eq(mx.nd.sum_axis ~= nil, true)
  assert_eq(a.T:totable(), {{1, 3}, {2, 4}})
end)

test('axes are 1-based: axis = 1 reduces the first axis', function()
  local a = mx.nd.array({{1, 2, 3}, {4, 5, 6}})
  assert_eq(mx.nd.sum(a, {axis = 1}):totable(), {5, 7, 9})
  assert_eq(mx.nd.sum(a, {axis = 2}):totable(), {6, 15})
  assert_eq(mx.nd.sum(a, {axis = -1}):totable(), {6, 15})
  assert_eq(mx.nd.sum(a, {axis = {1, 2}}):totable(), {21})
  assert_eq(mx.nd.sum(a, {axis = 1, keepdims = true}).shape, {1, 3})
  assert_eq(mx.nd.transpose(a, {axes = {2, 1}}).shape, {3, 2})
  assert_error(function() mx.nd.sum(a, {axis = 0}) end, '1%-based')
  -- values stay 0-based: argmax gives MXNet's index
  assert_eq(mx.nd.argmax(a, {axis = 2}):totable(), {2, 2})
end)

test('views: reshape, slice, indexing share memory', function()
  local a = mx.nd.array({{1, 2, 3}, {4, 5, 6}, {7, 8, 9}})
  assert_eq(a[1]:totable(), {1, 2, 3})
  assert_eq(a[-1]:totable(), {7, 8, 9})
  assert_eq(a[{2, 3}]:totable(), {{4, 5, 6}, {7, 8, 9}})
  assert_eq(a:slice(1, 2):totable(), {{1, 2, 3}, {4, 5, 6}})
  assert_eq(a:slice(-1):totable(), {{7, 8, 9}})
  assert_eq(a:reshape({9}).shape, {9})
  assert_eq(a:reshape(-1, 1).shape, {9, 1})
  assert_eq(a:reshape({0, -1}).shape, {3, 3})
  local v = a:reshape({9})
  v[1] = 100
  assert_eq(a[1]:totable(), {100, 2, 3})
  local row = a[2]
  row:mul_(10)
  assert_eq(a[2]:totable(), {40, 50, 60})
  assert_eq(a[2][3]:totable(), {60})
  assert_error(function() return a[4] end, 'out of range')
  assert_error(function() return a[0] end, '1%-based')
  assert_error(function() return a[{3, 2}] end, 'before it begins')
  assert_error(function() a:reshape({4, 4}) end, 'reshape')
end)

test('assignment through indexing', function()
  local a = mx.nd.zeros({3, 2})
  a[1] = 5
  a[-1] = mx.nd.array({7, 8})
  a[2] = mx.nd.array({1})  -- broadcast
  assert_eq(a:totable(), {{5, 5}, {1, 1}, {7, 8}})
  a[{1, 2}] = 0
  assert_eq(a:totable(), {{0, 0}, {0, 0}, {7, 8}})
  a[{2, 3}] = mx.nd.array({{1, 2}, {3, 4}}, {dtype = 'float64'})
  assert_eq(a:totable(), {{0, 0}, {1, 2}, {3, 4}})
  assert_error(function() a[1] = 'x' end, 'number or an NDArray')
  assert_error(function() a.foo = 1 end, 'cannot set field')
end)

test('copies and contexts', function()
  local a = mx.nd.array({1, 2})
  local b = a:copyto(mx.cpu())
  b[1] = 9
  assert_eq(a:totable(), {1, 2})
  local c = mx.nd.zeros({2})
  assert_eq(rawequal(a:copyto(c), c), true)
  assert_eq(c:totable(), {1, 2})
  assert_eq(rawequal(a:as_in_context(mx.cpu()), a), true)
  assert_error(function() a:copyto(mx.nd.zeros({3})) end, 'copyto')
  a:wait_to_read()
  a:wait_to_write()
end)

test('errors name the op and shapes; the interpreter carries on', function()
  local a = mx.nd.ones({2, 3})
  local b = mx.nd.ones({4, 5})
  local err = assert_error(function() return a + b end, 'broadcast_add')
  assert(tostring(err):find('2x3') or tostring(err):find('%(2,3%)') or tostring(err):find('2, 3'),
         tostring(err))
  assert_error(function() mx.nd.dot(a, a) end, 'dot')
  assert_error(function() mx.nd.sum(a, {bogus = 1}) end, 'bogus')
  assert_error(function() return a + 'x' end, 'operands')
  assert_error(function() mx.nd.dot(a, 3) end, 'argument 2')
  assert_eq((a + 1):totable(), {{2, 2, 2}, {2, 2, 2}})
end)

test('asynchronous errors surface at wait and print', function()
  local a = mx.nd.ones({2})
  mx.engine._fail('boom in a C++ op', {write = {a}, name = 'failing_op'})
  local b = a + 1  -- depends on the failed write: skipped, poisoned
  assert_error(function() print(b) end, 'boom')
  -- a poisoned array stays poisoned: every later read of it, or of anything
  -- computed from it, raises the original error (never stale pool memory)
  assert_error(function() b:totable() end, 'failing_op')
  assert_error(function() (b * 2):totable() end, 'boom')
  assert_error(function() a:sum():totable() end, 'failing_op')
  -- until it is written again: then it reads back what was written
  mx.nd.array({5, 6}):copyto(a)
  assert_eq((a + 1):totable(), {6, 7})
  -- a second failing op for the waits
  local c = mx.nd.ones({2})
  mx.engine._fail('bang', {write = {c}, name = 'failing_op2'})
  local d = c * 2
  assert_error(function() d:wait_to_read() end, 'bang')
  local e = mx.nd.ones({2})
  mx.engine._fail('crash', {write = {e}})
  assert_error(function() (e + 1):totable() end, 'crash')
  pcall(mx.waitall)
  -- a fresh array still works
  assert_eq((mx.nd.ones({1}) * 3):totable(), {3})
end)

test('help shows the registry docs', function()
  local doc = require('tessera.help').text('dot')
  assert(doc:find('transpose_a'), doc)
  assert(doc:find('Parameters'), doc)
  local s = require('tessera.help').text(mx.nd.sum)
  assert(s:find('axis'), s)
end)

test('completion sees methods and fields', function()
  local complete = require 'tessera.complete'
  _G.__nd_completion_probe = mx.nd.ones({1})
  local names = complete.candidates('__nd_completion_probe:wait_to_')
  _G.__nd_completion_probe = nil
  local set = {}
  for _, n in ipairs(names) do set[n] = true end
  assert(set['__nd_completion_probe:wait_to_read'] or set['wait_to_read'], table.concat(names, ' '))
end)

test('completion lists registered ops under mx.nd', function()
  local complete = require 'tessera.complete'
  local set = {}
  for _, n in ipairs(complete.candidates('mx.nd.do')) do set[n] = true end
  assert(set['mx.nd.dot'], 'mx.nd.dot not offered')
  set = {}
  for _, n in ipairs(complete.candidates('mx.nd.ze')) do set[n] = true end
  assert(set['mx.nd.zeros'] and set['mx.nd.zeros_like'], 'zeros not offered')
end)

test('operators with numbers use each number, reused or not', function()
  -- The parsed scalar op of a (op, number) pair is reused by later calls:
  -- every number, and each side, must still count.
  local a = mx.nd.array({1, 2})
  for i = 1, 40 do
    local k = (i % 7) - 3
    local r = (a + k):totable()
    assert(r[1] == 1 + k and r[2] == 2 + k)
    assert((k - a):totable()[2] == k - 2)
    assert((a * k):totable()[2] == 2 * k)
  end
  -- 0 and -0 differ in their bits and in what they make.
  assert(1 / (a * 0):totable()[1] == math.huge)
  assert(1 / (a * -0.0):totable()[1] == -math.huge)
  assert(1 / (a * 0):totable()[1] == math.huge)
end)

test('bad sizes, axes and seeds: errors name the function, the argument and the value', function()
  local a = mx.nd.array({{1, 2, 3}, {4, 5, 6}})
  for _, f in ipairs({'zeros', 'ones', 'empty'}) do
    assert_error(function() mx.nd[f]({0}) end, 'mx.nd.' .. f .. ': shape %(0,%) has a 0 at axis 1')
    assert_error(function() mx.nd[f]({2, 0, 3}) end, 'shape %(2,0,3%) has a 0 at axis 2')
    assert_error(function() mx.nd[f](nil) end, 'mx.nd.' .. f .. ': shape is required')
    assert_error(function() mx.nd[f]() end, 'mx.nd.' .. f .. ': shape is required')
    assert_error(function() mx.nd[f]({}) end, 'mx.nd.' .. f .. ': shape is required')
  end
  assert_error(function() mx.nd.full({0}, 1) end, 'mx.nd.full: shape %(0,%)')
  -- The axis the user typed, not the 0-based one it became.
  assert_error(function() mx.nd.sum(a, {axis = 1.5}) end,
    "sum: parameter 'axis' must be a whole number %(a 1%-based axis%), got 1.5")
  assert_error(function() mx.nd.sum(a, {axis = {1, 2.5}}) end, 'got 2.5')
  assert_error(function() mx.nd.sum(a, {axis = 0 / 0}) end, 'got nan')
  assert_error(function() mx.sym.sum(mx.sym.Variable('x'), {axis = 1.5}) end, 'got 1.5')
  -- The note about 0-based axes only on messages about an axis.
  local err = assert_error(function() mx.nd.sum(a, {axis = 1, keepdims = 'maybe'}) end, 'keepdims')
  assert(not err:find('count from 0'), err)
  err = assert_error(function() mx.nd.sum(a, {axis = 3}) end, 'axis')
  assert(err:find('count from 0'), err)
  for _, bad in ipairs({0 / 0, 2.5, -1, math.huge}) do
    assert_error(function() mx.random.seed(bad) end,
      'mx.random.seed: the seed must be a whole number from 0 to 2%^53, got '
        .. tostring(bad):gsub('%-', '%%-'))
  end
  assert_error(function() mx.random.seed('7') end, 'must be a number, got a string')
  mx.random.seed(42)
end)

test('a NUL byte in a name, key, path or option is refused, never cut', function()
  local path = os.tmpname()
  local a = mx.nd.ones({2})
  assert_error(function() mx.nd.save(path, {['a\0b'] = a}) end,
    "mx.nd.save: the name 'a\\0b' contains a NUL byte")
  assert_error(function() mx.nd.save(path .. '\0x', a) end, 'mx.nd.save: the path .* NUL byte')
  assert_error(function() mx.nd.load(path .. '\0x') end, 'mx.nd.load: the path .* NUL byte')
  assert_error(function() a:astype('float32\0junk') end, 'astype: dtype .* NUL byte')
  assert_error(function() mx.nd.zeros({2}, {dtype = 'int32\0x'}) end, 'NUL byte')
  assert_error(function() mx.nd.sum(a, {['axis\0x'] = 1}) end, 'NUL byte')
  assert_error(function() mx.nd.Activation(a, {act_type = 'relu\0x'}) end, 'NUL byte')
  assert_error(function() mx.profiler.dump(path .. '\0x') end, 'NUL byte')
  -- Names without one still save and load whole.
  mx.nd.save(path, {['a b'] = a})
  assert_eq(mx.nd.load(path)['a b']:totable(), {1, 1})
  os.remove(path)
end)
