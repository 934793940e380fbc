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

test('help() lists every namespace, those loaded on first use too, without cutting a summary', function()
  local text = help.text()
  for _, ns in ipairs({'nd', 'sym', 'autograd', 'engine', 'io', 'mod', 'optimizer', 'init',
                       'metric', 'test_utils', 'callback', 'viz', 'operator', 'pp'}) do
    assert(text:find('\n  ' .. ns .. ' ', 1, true), 'help() lists ' .. ns)
  end
  -- a summary is the doc's whole first paragraph, wrapped, not its first line
  local first_para = help.lookup(mx.io):match('^(.-)\n%s*\n') or help.lookup(mx.io)
  local last_word = first_para:match('(%S+)%s*$')
  local io_entry = text:match('\n  io%s+(.-)\n  %a') or ''
  assert(io_entry:find(last_word, 1, true), 'the io summary reaches ' .. last_word)
end)

test('?name answers for methods, Lua namespaces and operators made in Lua', function()
  assert(help.text('NDArray.reshape'):find('reshape', 1, true))
  assert(help.text('wait_to_read'):find('a:wait_to_read()', 1, true))
  assert(help.text('Symbol.infer_shape'):find('infer_shape', 1, true))
  assert(help.text('Executor.forward'):find('exe:forward', 1, true))
  assert(help.text('optimizer.create'):find('mx.optimizer.create', 1, true))
  assert(help.text('mx.metric.create'):find('mx.metric.create', 1, true))
  mx.operator.elementwise{name = 'help_softplus',
    forward = function(x) return math.log(1 + math.exp(x)) end}
  local t = help.text('help_softplus')
  assert(t:find('mx.operator.elementwise', 1, true), t)
  assert(t:find('arguments: x', 1, true), t)
  local P = mx.operator.CustomOpProp:extend()
  function P:list_arguments() return {'data', 'label'} end
  mx.operator.register('help_loss', P)
  t = help.text('help_loss')
  assert(t:find('mx.operator.register', 1, true) and t:find('data, label', 1, true), t)
end)

test('mx.pp prints values as the prompt does', function()
  local out = {}
  local saved = io.stdout
  local fake = setmetatable({write = function(_, ...) for _, s in ipairs({...}) do out[#out + 1] = s end end},
                            {__index = saved})
  io.stdout = fake
  local ok, err = pcall(mx.pp, {b = {2, 3}, a = 1}, 'x')
  io.stdout = saved
  assert(ok, err)
  assert_eq(table.concat(out), '{a = 1, b = {2, 3}}\t"x"\n')
end)
