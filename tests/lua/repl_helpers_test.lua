-- The REPL's Lua helpers: value printing and tab completion.
local pretty = require 'tessera.pretty'
local complete = require 'tessera.complete'

test('values print readably', function()
  assert_eq(pretty.format(1), '1')
  assert_eq(pretty.format(0.5), '0.5')
  assert_eq(pretty.format(1 / 0), 'inf')
  assert_eq(pretty.format('a\nb'), '"a\\nb"')
  assert_eq(pretty.format(nil), 'nil')
  assert_eq(pretty.format({ 1, 2, 3 }), '{1, 2, 3}')
  assert_eq(pretty.format({ b = 1, a = { 1, 'x' } }), '{a = {1, "x"}, b = 1}')
  assert_eq(pretty.format({ [10] = true, ['key with space'] = 1 }), '{[10] = true, ["key with space"] = 1}')
  assert_eq(pretty.format({}), '{}')
end)

test('nesting is bounded and cycles are marked', function()
  local t = { a = { b = { c = { d = { e = {} } } } } }
  assert_eq(pretty.format(t), '{a = {b = {c = {d = {...}}}}}')
  local c = {}
  c.self = c
  assert_eq(pretty.format(c), '{self = <cycle>}')
end)

test('long tables go one entry per line, big ones are cut', function()
  local t = {}
  for i = 1, 30 do t['key' .. i] = i end
  local s = pretty.format(t)
  assert(s:find('\n  key1 = 1,', 1, true), s)
  local big = {}
  for i = 1, 1000 do big[i] = i end
  assert(pretty.format(big):find('(940 more)', 1, true))
end)

test('__tostring is honoured', function()
  assert_eq(pretty.format(mx.cpu()), 'cpu(0)')
  assert_eq(pretty.format({ mx.gpu(1) }), '{gpu(1)}')
end)

test('colours only when asked', function()
  assert_eq(pretty.format(1, { color = true }), '\27[36m1\27[0m')
end)

test('completion of globals, fields and methods', function()
  assert_eq(complete.candidates('mx.engine.pu'), { 'mx.engine.push' })
  assert_eq(complete.candidates('mx.cp'), { 'mx.cpu', 'mx.cpu_pinned' })
  assert_eq(complete.candidates('mx.profiler.set_'), { 'mx.profiler.set_config', 'mx.profiler.set_state' })
  local found = false
  for _, c in ipairs(complete.candidates('pri')) do found = found or c == 'print' end
  assert(found)
  _G.completion_probe = mx.engine.new_var()
  assert_eq(complete.candidates('completion_probe:ver'), { 'completion_probe:version' })
  _G.completion_probe = nil
  assert_eq(complete.candidates('no_such_global.x'), {})
  assert_eq(complete.candidates('whi'), { 'while' })
end)

test('lazy namespaces load on first use and complete', function()
  package.preload['tessera.mx.probe_ns'] = function() return function(m) return { mx = m } end end
  assert_eq(complete.candidates('mx.probe_'), { 'mx.probe_ns' })
  assert_eq(mx.probe_ns.mx, mx)
  package.preload['tessera.mx.probe_ns'] = nil
end)

test(':who lists the globals made after start-up, arrays with shape, dtype, device, bytes', function()
  local who = pretty.who
  rawset(_G, 'who_test_array', mx.nd.zeros({ 2, 3 }, { dtype = 'float64' }))
  rawset(_G, 'who_test_number', 7)
  local text = who()
  assert_eq(text:find('who_test_array%s+NDArray%s+2x3%s+float64%s+cpu%(0%)%s+48 B') ~= nil, true, text)
  assert_eq(text:find('who_test_number%s+number%s+7') ~= nil, true, text)
  assert_eq(text:find('\nmx ', 1, true), nil)  -- start-up globals are left out
  rawset(_G, 'who_test_array', nil)
  rawset(_G, 'who_test_number', nil)
end)

test('mx.nd.set_printoptions: threshold, edgeitems, precision; restored by passing back', function()
  local a = mx.nd.array({ 1.23456, 2, 3, 4, 5, 6, 7, 8 })
  local before = mx.nd.set_printoptions { threshold = 4, edgeitems = 2, precision = 2 }
  local s = tostring(a)
  assert_eq(s:find('...', 1, true) ~= nil, true, s)
  assert_eq(s:find('1.23', 1, true) ~= nil, true, s)
  assert_eq(s:find('1.234', 1, true), nil, s)
  assert_eq(s:find('5.00', 1, true), nil, s)  -- elided: only 2 at each end
  local mine = mx.nd.set_printoptions(before)
  assert_eq(mine.threshold, 4)
  assert_eq(tostring(a):find('...', 1, true), nil)
  assert_error(function() mx.nd.set_printoptions { edgeitems = 0 } end, 'edgeitems must be')
  assert_error(function() mx.nd.set_printoptions { thresh = 3 } end, "unknown option 'thresh'")
end)
