-- mx.nd with the engine: NDArrays in mx.engine.push lists, waits inside
-- pushed functions, GC pacing of tensor memory, raw memory through the FFI,
-- save/load.

test('push: a Lua function reads arrays written by C++ ops', function()
  local a = mx.nd.ones({3})
  mx.engine._sleep(0.05, {write = {a}})  -- holds a for a while
  local b = a * 2
  local seen
  mx.engine.push(function() seen = b:totable() end, {read = {b}, name = 'read_b'})
  -- the naive engine runs a push before it returns
  if mx.engine.type() == 'threaded' then assert_eq(seen, nil) end
  mx.waitall()
  assert_eq(seen, {2, 2, 2})
end)

test('push: a Lua function writes an array, C++ ops read it after', function()
  local a = mx.nd.zeros({4})
  mx.engine.push(function()
    local p = a:data_ptr()
    for i = 0, 3 do p[i] = i + 1 end
  end, {write = {a}, name = 'fill_a'})
  local b = a + 1
  assert_eq(b:totable(), {2, 3, 4, 5})
end)

test('push: wait_to_read inside a pushed function', function()
  local a = mx.nd.ones({2})
  local b = a + 41
  local got
  mx.engine.push(function()
    b:wait_to_read()  -- b is not written by this op: a plain wait
    got = b:totable()
  end, {read = {a}})
  mx.waitall()
  assert_eq(got, {42, 42})
end)

local function rss_mb()
  local f = io.open('/proc/self/statm')
  if not f then return nil end
  local _, resident = f:read('*n', '*n')
  f:close()
  return resident * 4096 / 2 ^ 20
end

test('GC keeps resident memory flat without collectgarbage()', function()
  if not rss_mb() then
    print('  skipped: no /proc/self/statm')
    return
  end
  -- 100 MB per array; without pacing, 60 iterations would hold ~6 GB.
  local n = 25 * 2 ^ 20
  local before = rss_mb()
  local peak = before
  for _ = 1, 60 do
    local x = mx.nd.zeros({n})
    x:wait_to_read()
    peak = math.max(peak, rss_mb())
  end
  mx.waitall()
  assert(peak - before < 1024, string.format('resident grew by %.0f MB', peak - before))
  assert(mx.nd._live_bytes() < 1024 * 2 ^ 20, mx.nd._live_bytes())
end)

test('FFI pointer loop over an array', function()
  local a = mx.nd.arange(0, 1000)
  local p = a:data_ptr()
  local s = 0
  for i = 0, 999 do s = s + p[i] end
  assert_eq(s, 999 * 1000 / 2)
  assert_eq(tostring(require('ffi').typeof(p)):find('float') ~= nil, true)
  local d = mx.nd.array({1, 2}, {dtype = 'float64'}):data_ptr()
  assert_eq(tostring(require('ffi').typeof(d)):find('double') ~= nil, true)
  local i = mx.nd.array({5}, {dtype = 'int32'}):data_ptr()
  assert_eq(i[0], 5)
  -- writes through the pointer are seen by later ops
  local b = mx.nd.zeros({3})
  local q = b:data_ptr()
  q[0], q[1], q[2] = 1, 2, 3
  assert_eq((b * 2):totable(), {2, 4, 6})
end)

test('save and load', function()
  local dir = os.getenv('TMPDIR') or '/tmp'
  local path = string.format('%s/nd_test_%d.nd', dir, math.random(1, 1e9))
  local a = mx.nd.array({{1, 2}, {3, 4}})
  local b = mx.nd.arange(0, 3, 1, {dtype = 'int32'})
  mx.nd.save(path, {weight = a, bias = b})
  local t = mx.nd.load(path)
  assert_eq(t.weight:totable(), {{1, 2}, {3, 4}})
  assert_eq(t.bias.dtype, 'int32')
  mx.nd.save(path, {a, b + 1})
  local l = mx.nd.load(path)
  assert_eq(#l, 2)
  assert_eq(l[2]:totable(), {1, 2, 3})
  mx.nd.save(path, {a}, {format = 'mxnet'})
  assert_eq(mx.nd.load(path)[1]:totable(), {{1, 2}, {3, 4}})
  os.remove(path)
  assert_error(function() mx.nd.load(path) end, path:gsub('%p', '%%%0'))
  assert_error(function() mx.nd.save(path, {1}) end, 'NDArray')
end)
