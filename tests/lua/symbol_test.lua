-- mx.sym: construction, names, lists, attributes, composition, arithmetic,
-- shape and dtype inference (complete, partial, errors), JSON round trips.

local V = mx.sym.Variable

test('variables, automatic names and missing inputs', function()
  mx.sym.reset_names()
  local q = mx.sym.quadratic{a = 1, b = 2}
  assert_eq(q:list_arguments(), {'quadratic0_data'})
  assert_eq(q.name, 'quadratic0')
  local q2 = mx.sym.quadratic(V('x'), {name = 'q'})
  assert_eq(q2:list_outputs(), {'q_output'})
  local d = mx.sym.dot{lhs = V('data'), name = 'fc1'}
  assert_eq(d:list_arguments(), {'data', 'fc1_rhs'})
  assert_eq(tostring(d), '<Symbol fc1>')
  assert_eq(mx.sym.is_symbol(d), true)
  assert_eq(mx.sym.is_symbol(1), false)
end)

test('bad inputs and parameters are errors naming the op', function()
  assert_error(function() mx.sym.dot{weight = V('a')} end, "unknown input 'weight'")
  assert_error(function() mx.sym.quadratic(V('a'), {bogus = 1}) end, 'bogus')
  assert_error(function() mx.sym.relu(V('a'), V('b')) end, 'relu')
  assert_error(function() mx.sym.Variable('v', {shapes = {2}}) end, "unknown option 'shapes'")
end)

test('groups, internals, children, outputs by index and name', function()
  local a, b = V('a'), V('b')
  local s = mx.sym.elemwise_add(a, b, {name = 'plus'})
  local r = mx.sym.relu(s, {name = 'act'})
  local g = mx.sym.Group{r, s}
  assert_eq(#g, 2)
  assert_eq(g:list_outputs(), {'act_output', 'plus_output'})
  assert_eq(tostring(g), '<Symbol group [act_output, plus_output]>')
  assert_eq(g[2]:list_outputs(), {'plus_output'})
  assert_eq(g.plus_output:list_outputs(), {'plus_output'})
  assert_eq(g.name, nil)
  local int = r:get_internals()
  assert_eq(int:list_outputs(), {'a', 'b', 'plus_output', 'act_output'})
  assert_eq(int['plus_output']:list_arguments(), {'a', 'b'})
  assert_eq(r:get_children():list_outputs(), {'plus_output'})
  assert_eq(a:get_children(), nil)
  local sp = mx.sym.split(a, {num_outputs = 3, axis = 1, name = 'sp'})
  assert_eq(sp:list_outputs(), {'sp_output0', 'sp_output1', 'sp_output2'})
  assert_error(function() return sp[4] end, 'out of range')
end)

test('composition replaces free variables', function()
  local net = mx.sym.relu(V('x') * 2, {name = 'r'})
  local composed = net{x = mx.sym.exp(V('y'), {name = 'e'})}
  assert_eq(composed:list_arguments(), {'y'})
  assert_eq(net:list_arguments(), {'x'})
  assert_error(function() return net{zz = V('y')} end, 'arguments: x')
end)

test('attributes', function()
  local v = V('w', {shape = {2, 3}, dtype = 'float64', lr_mult = 2, attr = {mood = 'calm'}})
  assert_eq(v:attr('__shape__'), '(2,3)')
  assert_eq(v:attr('__lr_mult__'), '2')
  assert_eq(v:attr('mood'), 'calm')
  assert_eq(v:attr('nothing'), nil)
  local q = mx.sym.quadratic(v, {a = 1, name = 'q', attr = {__ctx_group__ = 'dev1'}})
  assert_eq(q:list_attr().__ctx_group__, 'dev1')
  q:set_attr{__note__ = 'x'}
  assert_eq(q:attr('__note__'), 'x')
  assert_error(function() q:set_attr{a = 'abc'} end, 'quadratic')
  assert_eq(q:attr('a'), '1')
  local d = q:attr_dict()
  assert_eq(d.w.mood, 'calm')
  assert_eq(d.q.a, '1')
end)

test('arithmetic with symbols and numbers', function()
  local a, b = V('a'), V('b')
  local s = (a + b) * 2 - 1 / a + a ^ 2 - (-b)
  local _, outs = s:infer_shape{a = {2, 2}, b = {2, 2}}
  assert_eq(outs, {{2, 2}})
  assert_eq(s:list_arguments(), {'a', 'b'})
end)

test('infer_shape: unknown dimensions flow both ways', function()
  local a, b, c = V('a'), V('b'), V('c')
  local s = a * b + b * c
  local args, outs, aux = s:infer_shape{a = {2, 0}, c = {0, 3}}
  assert_eq(args, {{2, 3}, {2, 3}, {2, 3}})
  assert_eq(outs, {{2, 3}})
  assert_eq(aux, {})
  assert_eq(s:infer_shape{a = {2, 0}}, nil)
  local pa, po = s:infer_shape_partial{a = {2, 0}}
  assert_eq(pa, {{2, 0}, {2, 0}, {2, 0}})
  assert_eq(po, {{2, 0}})
  local pos = s:infer_shape({{2, 3}})
  assert_eq(pos, {{2, 3}, {2, 3}, {2, 3}})
end)

test('infer_shape: conflicts name the node, the input and both shapes', function()
  local d = mx.sym.dot(V('x'), V('w'), {name = 'fc'})
  local args, outs = d:infer_shape{x = {4, 5}, w = {5, 7}}
  assert_eq(outs, {{4, 7}})
  local ok, err = pcall(d.infer_shape, d, {x = {4, 5}, w = {6, 7}})
  assert_eq(ok, false)
  assert(err:find('fc') and err:find('%(4,5%)') and err:find('%(6,7%)'), err)
  local a, b = V('a'), V('b')
  ok, err = pcall((a + b).infer_shape, a + b, {a = {2, 3}, b = {3, 2}})
  assert(not ok and err:find('%(3,2%)'), err)
  assert_error(function() d:infer_shape{nope = {1}} end, "'nope' is not an argument")
end)

test('infer_shape through broadcast, reduce and softmax', function()
  local x = V('x')
  local s = mx.sym.log_softmax(mx.sym.broadcast_add(mx.sym.dot(x, V('w')), V('b')))
  local args, outs = s:infer_shape{x = {8, 4}, w = {4, 3}, b = {1, 3}}
  assert_eq(outs, {{8, 3}})
  local _, o2 = mx.sym.sum(x, {axis = 2}):infer_shape{x = {5, 6}}
  assert_eq(o2, {{5}})
end)

test('infer_type', function()
  local a, b = V('a'), V('b', {dtype = 'float64'})
  local args, outs = (a + b):infer_type{}
  assert_eq(args, {'float64', 'float64'})
  assert_eq(outs, {'float64'})
  local c = V('c')
  assert_eq(mx.sym.relu(c):infer_type{}, nil)
  local pa = mx.sym.relu(c):infer_type_partial{}
  assert_eq(pa, {false})
  assert_error(function() (a + b):infer_type{a = 'int32'} end, 'int32')
end)

test('JSON: round trip is byte-identical and keeps the graph', function()
  local x = V('x', {shape = {2, 3}})
  local net = mx.sym.Group{mx.sym.relu(mx.sym.dot(x, V('w'), {transpose_b = true, name = 'fc'})),
    mx.sym.split(x, {num_outputs = 3, axis = 2})[2]}
  local text = net:tojson()
  local back = mx.sym.fromjson(text)
  assert_eq(back:tojson(), text)
  assert_eq(back:list_arguments(), net:list_arguments())
  assert_eq(back:list_outputs(), net:list_outputs())
  local path = os.tmpname()
  net:save(path)
  local loaded = mx.sym.load(path)
  os.remove(path)
  assert_eq(loaded:tojson(), text)
  assert_error(function() mx.sym.fromjson('{"nodes": [') end, 'fromjson')
  assert_error(function() mx.sym.load('/nonexistent/x.json') end, 'nonexistent')
end)

test('infer_shape: the batch size flows backward through FullyConnected and Convolution', function()
  if not mx.sym.FullyConnected or not mx.sym.Convolution then return end
  local fc = mx.sym.FullyConnected{data = V('data'), num_hidden = 3, name = 'fc'}
  local args = (fc + V('b')):infer_shape{data = {0, 5}, b = {7, 3}}
  assert_eq(args, {{7, 5}, {3, 5}, {3}, {7, 3}})
  local conv = mx.sym.Convolution{data = V('x'), kernel = {3, 3}, num_filter = 4, name = 'conv'}
  args = (conv + V('y')):infer_shape{x = {0, 2, 8, 8}, y = {6, 4, 6, 6}}
  assert_eq(args, {{6, 2, 8, 8}, {4, 2, 3, 3}, {4}, {6, 4, 6, 6}})
end)

test('a NUL byte in a symbol name, key or path is refused, never cut', function()
  local x = mx.sym.Variable('x')
  assert_error(function() mx.sym.Variable('a\0b') end, "Variable: the name 'a\\0b' contains a NUL")
  assert_error(function() mx.sym.FullyConnected{data = x, num_hidden = 2, name = 'f\0c'} end, 'NUL byte')
  assert_error(function() mx.sym.FullyConnected{data = x, ['num_hidden\0'] = 2} end, 'NUL byte')
  assert_error(function() mx.sym.Variable('w', {attr = {['k\0'] = 'v'}}) end, 'NUL byte')
  assert_error(function() x:attr('k\0z') end, 'NUL byte')
  assert_error(function() x:infer_shape{['x\0y'] = {2}} end, 'NUL byte')
  assert_error(function() x:simple_bind{['x\0y'] = {2}} end, 'NUL byte')
  local path = os.tmpname()
  assert_error(function() x:save(path .. '\0x') end, 'NUL byte')
  assert_error(function() mx.sym.load(path .. '\0x') end, 'NUL byte')
  os.remove(path)
end)

-- MXNet's mx.sym.Concat(a, b, dim=1) is {a, b, dim = 1} in one table: the
-- parameters must not be lost because the table starts with inputs.
test('a table of inputs and parameters keeps both (symbols and arrays)', function()
  local d = mx.sym.Variable('data')
  local c = mx.sym.Concat{d, d, dim = 1, name = 'cat'}
  assert_eq(c.name, 'cat')
  local _, out = c:infer_shape{data = {2, 3}}
  assert_eq(out[1], {4, 3})
  local crop = mx.sym.Crop{d, num_args = 1, h_w = {2, 2}, center_crop = true}
  local _, cout = crop:infer_shape{data = {1, 1, 4, 6}}
  assert_eq(cout[1], {1, 1, 2, 2})
  assert_eq(select(2, mx.sym.Concat{d, d}:infer_shape{data = {2, 3}})[1], {2, 6})
  local a = mx.nd.ones({2, 3})
  assert_eq(mx.nd.Concat{a, a, dim = 1}.shape, {4, 3})
  assert_eq(mx.nd.Concat{a, a}.shape, {2, 6})
  assert_eq(mx.nd.Concat({a, a}, {dim = 1}).shape, {4, 3})
  assert_error(function() mx.nd.Concat{a, 3, dim = 1} end, 'parameter keys must be names')
end)
