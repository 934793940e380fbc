-- mx.profiler
local function tmpname()
  local name = os.tmpname()
  os.remove(name)
  return name .. '.json'
end

test('records pushed ops and dumps a Chrome trace', function()
  local file = tmpname()
  mx.profiler.set_config { filename = file }
  mx.profiler.clear()
  mx.profiler.set_state('run')
  assert_eq(mx.profiler.state(), 'run')
  local v = mx.engine.new_var()
  for _ = 1, 3 do mx.engine.push(function() end, { write = { v }, name = 'profiled_lua_op' }) end
  mx.engine._sleep(0.001, { write = { v }, name = 'profiled_cpp_op' })
  mx.waitall()
  mx.profiler.set_state('stop')
  local trace = mx.profiler.dumps_trace()
  assert(trace:find('profiled_lua_op', 1, true), 'trace lacks the Lua op')
  assert(trace:find('profiled_cpp_op', 1, true), 'trace lacks the C++ op')
  local table_text = mx.profiler.table()
  assert(table_text:find('profiled_lua_op', 1, true), table_text)
  assert_eq(mx.profiler.dump(), file)
  local f = assert(io.open(file))
  local text = f:read('*a')
  f:close()
  os.remove(file)
  assert(text:find('traceEvents', 1, true))
end)

test('bad arguments', function()
  assert_error(function() mx.profiler.set_state('go') end, "'run' or 'stop'")
  assert_error(function() mx.profiler.set_config('x') end, 'table expected')
  assert_error(function() mx.profiler.dump('/nonexistent-dir/x/y.json') end)
end)

local function run_ok(cmd)
  local r = os.execute(cmd)
  return r == 0 or r == true
end

-- Checks a trace file with Python's json: the trace-event format's fields
-- on every event; prints what is wrong.
local checker = [[
import json, sys
d = json.load(open(sys.argv[1]))
evs = d["traceEvents"]
assert isinstance(evs, list) and evs, "no events"
for e in evs:
    for k in ("name", "ph", "pid", "tid"):
        assert k in e, "missing %s in %r" % (k, e)
    if e["ph"] != "M":
        assert isinstance(e["ts"], (int, float)), e
    if e["ph"] == "X":
        assert e["dur"] >= 0, e
    if e["ph"] == "C":
        assert isinstance(e["args"], dict) and e["args"], e
names = {e["name"] for e in evs}
for want in sys.argv[2:]:
    assert want in names, "no event named %r" % want
]]

test('MXNet config keys, markers, memory counters: a valid trace under concurrent pushes', function()
  local file = os.tmpname()
  mx.profiler.set_config { profile_all = true, aggregate_stats = true, filename = file,
    profile_symbolic = true, profile_imperative = true, profile_api = false }
  mx.profiler.clear()
  mx.profiler.set_state('run')
  local d = mx.profiler.Domain('training')
  local task = mx.profiler.Task(d, 'one_step')
  local frame = d:new_frame('frame_1')
  local ev = mx.profiler.Event('lua_event')
  local counter = mx.profiler.Counter(d, 'items', 1)
  local marker = d:new_marker('checkpoint')
  task:start()
  frame:start()
  ev:start()
  -- many ops in flight on the engine's workers while markers are recorded
  local arrays = {}
  for i = 1, 40 do
    local a = mx.nd.ones({ 64, 64 }) * i
    arrays[#arrays + 1] = mx.nd.dot(a, a)
    counter:increment()
    if i % 10 == 0 then marker:mark('global') end
  end
  mx.nd.waitall()
  ev:stop()
  frame:stop()
  task:stop()
  counter:decrement(5)
  mx.profiler.set_state('stop')
  assert_eq(mx.profiler.dump(), file)
  local py = os.tmpname()
  local f = assert(io.open(py, 'w'))
  f:write(checker)
  f:close()
  assert_eq(run_ok(("python3 '%s' '%s' one_step frame_1 lua_event items checkpoint dot 'memory cpu(0)'"):format(py, file)), true)
  os.remove(py)
  os.remove(file)
  mx.profiler.set_config { profile_memory = false }
  assert_error(function() ev:stop() end, 'stop%(%) before start%(%)')
  task:start()
  assert_error(function() task:start() end, 'already started')
end)

test('dumps{sort_by, ascending, reset}: the aggregate statistics as text; pause and resume', function()
  mx.profiler.clear()
  mx.profiler.set_state('run')
  local v = mx.engine.new_var()
  for _ = 1, 3 do mx.engine.push(function() end, { write = { v }, name = 'thrice_op' }) end
  mx.engine.push(function() end, { write = { v }, name = 'once_op' })
  mx.waitall()
  mx.profiler.pause()
  mx.engine.push(function() end, { write = { v }, name = 'paused_op' })
  mx.waitall()
  mx.profiler.resume()
  mx.engine.push(function() end, { write = { v }, name = 'once_op' })
  mx.waitall()
  mx.profiler.set_state('stop')
  local text = mx.profiler.dumps { sort_by = 'count', ascending = true }
  assert_eq(text:find('paused_op', 1, true), nil)
  local first, second = text:find('once_op', 1, true), text:find('thrice_op', 1, true)
  assert_eq(first ~= nil and second ~= nil and first < second, true, text)  -- 2 before 3
  assert_eq(text:match('once_op%s+(%d+)'), '2')
  local desc = mx.profiler.dumps { sort_by = 'count' }
  assert_eq(desc:find('thrice_op', 1, true) < desc:find('once_op', 1, true), true)
  mx.profiler.dumps { reset = true }
  assert_eq(mx.profiler.dumps():find('once_op', 1, true), nil)
  assert_error(function() mx.profiler.dumps { sort_by = 'speed' } end, "sort_by must be")
  assert_error(function() mx.profiler.set_config { profile_everything = true } end,
    "unknown option 'profile_everything'")
end)

test('host_syncs: CPU ops and copies between CPU arrays never wait for a GPU', function()
  local before = mx.profiler.host_syncs()
  assert(type(before) == 'number' and before >= 0)
  local a = mx.nd.ones({64, 64})
  local b = mx.nd.dot(a, a):copyto(mx.cpu(1))
  mx.nd.take(a, mx.nd.array({0, 3})):wait_to_read()
  b:wait_to_read()
  assert_eq(mx.profiler.host_syncs(), before)
end)
