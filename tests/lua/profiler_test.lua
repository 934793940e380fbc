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
  local trace = mx.profiler.dumps()
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
