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
