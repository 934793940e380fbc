-- help(x), mx.help, mx.doc
local help = require 'tessera.help'

test('bindings carry docs', function()
  assert(help.text(mx.engine.push):find('mx.engine.push', 1, true))
  assert(help.text('engine.push'):find('read', 1, true))
  assert(help.text('mx.engine.push') == help.text('engine.push'))
  assert(help.text(mx.engine):find('wait_for_all', 1, true))
  assert(help.text('cpu'):find('cpu', 1, true))
end)

test('mx.doc documents Lua functions', function()
  local f = mx.doc(function(x) return 2 * x end, 'f(x) -> twice x')
  assert_eq(help.text(f), 'f(x) -> twice x')
  assert_error(function() mx.doc(1, 'x') end, 'can document')
end)

test('unknown names say so', function()
  assert(help.text('no.such.thing'):find("no help for 'no.such.thing'", 1, true))
  assert(help.text(function() end):find('no help', 1, true))
end)

test('help is a global and mx.help', function()
  assert_eq(help, help)
  assert_eq(type(_G.help), 'function')
  assert_eq(mx.help, _G.help)
end)
