-- mx.engine: Lua functions pushed through the dependency engine, mixed with
-- C++ ops, waits inside them, errors, and the naive engine.
local engine = mx.engine

test('push runs the function; wait_for_var waits for it', function()
  local v = engine.new_var()
  local ran = false
  engine.push(function() ran = true end, { write = { v } })
  engine.wait_for_var(v)
  assert_eq(ran, true)
  assert_eq(v:version(), 1)
end)

test('writers of one variable run in push order', function()
  local v = engine.new_var()
  local order = {}
  for i = 1, 50 do engine.push(function() order[#order + 1] = i end, { write = { v } }) end
  engine.wait_for_var(v)
  local expected = {}
  for i = 1, 50 do expected[i] = i end
  assert_eq(order, expected)
end)

test('a Lua op waits for the C++ op that writes its input', function()
  local v = engine.new_var()
  local seen
  engine._sleep(0.05, { write = { v }, name = 'slow_writer' })
  engine.push(function() seen = v:version() end, { read = { v } })
  engine.wait_for_all()
  assert_eq(seen, 1)
end)

test('a C++ op waits for the Lua op that writes its input', function()
  local v, w = engine.new_var(), engine.new_var()
  local ran = false
  engine._sleep(0.02, { write = { v } })
  engine.push(function() ran = true end, { read = { v }, write = { v } })
  engine._sleep(0, { read = { v }, write = { w } })
  engine.wait_for_var(w)
  assert_eq(ran, true)
  assert_eq(v:version(), 2)
  assert_eq(w:version(), 1)
end)

test('wait_for_var inside a pushed Lua function', function()
  local a, b = engine.new_var(), engine.new_var()
  local seen
  engine.push(function()
    engine._sleep(0.02, { write = { a } })
    engine.wait_for_var(a)
    seen = a:version()
  end, { write = { b } })
  engine.wait_for_var(b)
  assert_eq(seen, 1)
end)

test('a Lua op waits for a Lua op pushed after it', function()
  local a, b = engine.new_var(), engine.new_var()
  local log = {}
  engine.push(function()
    engine.push(function() log[#log + 1] = 'inner' end, { write = { a } })
    engine.wait_for_var(a)
    log[#log + 1] = 'outer'
  end, { write = { b } })
  engine.wait_for_var(b)
  assert_eq(log, { 'inner', 'outer' })
end)

test('an error in a Lua op surfaces at the next wait, naming the op', function()
  local v = engine.new_var()
  engine.push(function() error('boom') end, { write = { v }, name = 'exploder' })
  local err = assert_error(function() engine.wait_for_var(v) end, 'exploder')
  assert(tostring(err):find('boom'), err)
  -- the variable stays poisoned: a second wait raises the same error
  assert_error(function() engine.wait_for_var(v) end, 'exploder')
  -- the engine keeps working: a push that overwrites v runs and cleans it
  local ran = false
  engine.push(function() ran = true end, { write = { v } })
  engine.wait_for_var(v)
  assert_eq(ran, true)
end)

test('a failed Lua op skips its dependents; wait_for_all reports it', function()
  local v, w = engine.new_var(), engine.new_var()
  local ran = false
  engine.push(function() error('first failure') end, { write = { v }, name = 'bad_op' })
  engine.push(function() ran = true end, { read = { v }, write = { w } })
  assert_error(function() engine.wait_for_all() end, 'bad_op')
  assert_eq(ran, false)
end)

test('a failed C++ op surfaces in a Lua wait', function()
  local v = engine.new_var()
  engine._fail('bad things', { write = { v }, name = 'cpp_fail' })
  assert_error(function() engine.wait_for_var(v) end, "cpp_fail.*bad things")
end)

test('wait_for_all with nothing pending still reports a failure no wait has seen', function()
  local v = engine.new_var()
  engine._fail('idle boom', { write = { v }, name = 'idle_fail' })
  -- Let the op finish first, so the wait finds nothing pending.
  local deadline = os.clock() + 5
  while engine.stats().pending > 0 and os.clock() < deadline do end
  assert_eq(engine.stats().pending, 0)
  assert_error(function() engine.wait_for_all() end, 'idle_fail.*idle boom')
  engine.wait_for_all()  -- reported once
  assert_error(function() engine.wait_for_var(v) end, 'idle boom')  -- v stays poisoned
end)

test('waiting inside an op on what the op writes is an error, not a hang', function()
  local v = engine.new_var()
  engine.push(function() engine.wait_for_var(v) end, { write = { v }, name = 'self_waiter' })
  assert_error(function() engine.wait_for_var(v) end, 'would wait for the op itself')
  local w = engine.new_var()
  engine.push(function() engine.wait_for_all() end, { write = { w }, name = 'all_waiter' })
  assert_error(function() engine.wait_for_var(w) end, 'would wait for the op itself')
end)

test('queued Lua work runs between statements of running code', function()
  local v = engine.new_var()
  local ran = false
  engine._sleep(0.01, { write = { v } })
  engine.push(function() ran = true end, { read = { v } })
  -- An interpreted loop (the JIT never calls hooks): the count hook serves
  -- the queue while Lua work is outstanding.
  local loop = function()
    local t0 = os.clock()
    while not ran and os.clock() - t0 < 5 do end
  end
  jit.off(loop)
  loop()
  assert_eq(ran, true)
end)

test('the naive engine runs a push before it returns', function()
  engine.set_type('naive')
  assert_eq(engine.type(), 'naive')
  local v = engine.new_var()
  local ran = false
  engine.push(function() ran = true end, { write = { v } })
  assert_eq(ran, true)
  engine._sleep(0, { read = { v }, write = { v } })
  engine.push(function() error('naive boom') end, { write = { v }, name = 'naive_bad' })
  assert_error(function() engine.wait_for_var(v) end, 'naive_bad')
  -- nested pushes and waits inside an inline op
  local w = engine.new_var()
  local inner = false
  engine.push(function()
    engine.push(function() inner = true end, { write = { w } })
    engine.wait_for_var(w)
  end, { write = { v } })
  assert_eq(inner, true)
  assert_error(function()
    engine.push(function() engine.push(function() end, { write = { v } }) end, { write = { v } })
    engine.wait_for_var(v)
  end, 'naive engine')
  engine.set_type('threaded')
  assert_eq(engine.type(), 'threaded')
end)

test('many chained Lua ops', function()
  local v = engine.new_var()
  local n = 0
  for _ = 1, 2000 do engine.push(function() n = n + 1 end, { read = { v }, write = { v } }) end
  engine.wait_for_all()
  assert_eq(n, 2000)
end)

test('stats describe the engine', function()
  local s = engine.stats()
  assert_eq(type(s.pending), 'number')
  assert_eq(s.type, engine.type())
  assert_eq(type(s.lanes), 'table')
  for _, lane in ipairs(s.lanes) do
    assert_eq(type(lane.ctx), 'string')
    assert_eq(type(lane.workers), 'number')
    assert_eq(type(lane.queued), 'number')
    assert_eq(type(lane.running), 'number')
  end
end)

test('the run-ahead bound: ops, CPU bytes and GPU bytes; nil keeps one', function()
  local ops, bytes, gpu_bytes = engine.max_inflight()
  if engine.type() == 'threaded' and not os.getenv('TESSERA_ENGINE_MAX_INFLIGHT')
      and not os.getenv('TESSERA_ENGINE_MAX_INFLIGHT_BYTES')
      and not os.getenv('TESSERA_ENGINE_MAX_INFLIGHT_GPU_BYTES') then
    assert_eq(ops, 65536)
    assert_eq(bytes, 32 * 2 ^ 20)
    assert_eq(gpu_bytes, 256 * 2 ^ 20)
  end
  local p1, p2, p3 = engine.set_max_inflight(7, nil, 12345)
  assert_eq(p1, ops)
  assert_eq(p2, bytes)
  assert_eq(p3, gpu_bytes)
  local a, b, c = engine.max_inflight()
  engine.set_max_inflight(ops, bytes, gpu_bytes)
  assert_eq(a, 7)
  assert_eq(b, bytes)
  assert_eq(c, 12345)
  assert_error(function() engine.set_max_inflight(1, -1) end, 'bytes must be a whole number')
  assert_error(function() engine.set_max_inflight(1, 1, 0.5) end, 'gpu_bytes must be a whole number')
  assert_eq(select('#', engine.max_inflight()), 3)
end)

test('bad arguments raise Lua errors', function()
  assert_error(function() engine.push(42) end, 'function expected')
  assert_error(function() engine.push(function() end, { read = { 42 } }) end, 'not an engine variable')
  assert_error(function() engine.push(function() end, { write = 'x' }) end, 'list of variables')
  assert_error(function() engine.wait_for_var({}) end, 'expected an engine variable')
  assert_error(function() engine.wait_for_var(engine.new_var(), 'sideways') end, "'read' or 'write'")
  assert_error(function() engine.set_type('quantum') end, "'naive' or 'threaded'")
  assert_error(function() engine.push(function() end, { ctx = 'cpu' }) end, 'context')
end)

test('a lone variable stands for a list of one', function()
  local v = engine.new_var()
  local ran = false
  engine.push(function() ran = true end, { write = v })
  engine.wait_for_var(v)
  assert_eq(ran, true)
end)

test('collected variables are deleted through the engine', function()
  for _ = 1, 1000 do
    local v = engine.new_var()
    engine.push(function() end, { write = { v } })
  end
  collectgarbage()
  collectgarbage()
  engine.wait_for_all()
end)

test('aliases', function()
  assert_eq(mx.waitall, engine.wait_for_all)
  assert_eq(engine.waitall, engine.wait_for_all)
  assert_eq(require('tessera'), mx)
end)

test('waiting inside an op on work that must wait for the op is an error, not a hang', function()
  local a = mx.nd.ones({2})
  if engine.type() == 'naive' then
    -- every push runs at once there: the push itself is refused
    engine.push(function() local b = a + 1 end, { write = { a }, name = 'writer' })
    assert_error(function() mx.waitall() end, "pushed inside engine op 'writer' needs variables")
    return
  end
  local direct, chained, independent
  engine.push(function()
    local b = a + 1  -- queues behind this op, which writes a
    direct = select(2, pcall(function() return b:totable() end))
    local c = b * 2  -- behind b, so behind the op too
    chained = select(2, pcall(function() c:wait_to_read() end))
    independent = (mx.nd.ones({2}) * 3):totable()  -- touches nothing the op holds
  end, { write = { a }, name = 'writer' })
  mx.waitall()
  assert(tostring(direct):find("inside engine op 'writer'", 1, true), direct)
  assert(tostring(direct):find('would wait for the op itself', 1, true), direct)
  assert(tostring(chained):find("inside engine op 'writer'", 1, true), chained)
  assert_eq(independent, {3, 3})
  -- after the op, the same arrays are waited for as usual
  assert_eq((a + 1):totable(), {2, 2})
end)

test('waits nested deeper than the bound are an error, not a stack overflow', function()
  local function nest(n)
    if n == 0 then return end
    local v = engine.new_var()
    engine.push(function() nest(n - 1) end, { write = { v } })
    engine.wait_for_var(v)
  end
  local ok, err = pcall(nest, 1000)
  assert(not ok)
  -- The naive engine runs every push at once, inside the op that pushed it:
  -- no wait nests, the Lua ops do.
  local bound = engine.type() == 'naive' and 'nested more than 200 deep' or 'too many nested waits'
  assert(tostring(err):find(bound, 1, true), err)
  assert(#tostring(err) < 4000, 'the error is said once, not once per level')
  pcall(mx.waitall)  -- the pushes left queued run (and stop at the bound too)
  assert_eq((mx.nd.ones({1}) + 1):totable(), {2})
end)
