-- Deep structures from Lua: a symbol chain 200,000 ops deep and 300,000
-- recorded autograd ops are built, used and collected without a stack
-- overflow (freeing a chain of graph nodes once recursed per node).

test('a symbol chain 200,000 ops deep: arguments, JSON, collection', function()
  local s = mx.sym.Variable('x')
  for _ = 1, 200000 do s = mx.sym.relu(s) end
  assert_eq(s:list_arguments(), {'x'})
  local again = mx.sym.fromjson(s:tojson())
  assert_eq(again:list_arguments(), {'x'})
  s, again = nil, nil
  collectgarbage()
  collectgarbage()
end)

test('300,000 recorded autograd ops: backward, then the tape is collected', function()
  local x = mx.nd.ones({2})
  x:attach_grad()
  local y = mx.autograd.record(function()
    local y = x
    for _ = 1, 300000 do y = y * 1 end
    return y
  end)
  y:backward()
  assert_eq(x.grad:totable(), {1, 1})
  y = nil
  collectgarbage()
  collectgarbage()
end)
