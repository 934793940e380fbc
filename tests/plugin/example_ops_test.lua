-- The example C++ plugin (scripts/ops/example_ops.cc) from Lua: loading,
-- values, gradients (executor and autograd), symbols and docs. Run by the
-- plugin_* CTest entries, which set TESSERA_EXAMPLE_OPS to the library
-- (with or without --load-ops having loaded it first).
local tu = mx.test_utils
local path = assert(os.getenv('TESSERA_EXAMPLE_OPS'), 'set TESSERA_EXAMPLE_OPS to the example plugin')
local OPS = {'plugin_quadratic', '_backward_plugin_quadratic', 'plugin_smooth_l1',
             '_backward_plugin_smooth_l1'}

test('load returns the names of the ops it registered', function()
  assert_eq(mx.operator.load(path), OPS)
  -- Again (or after --load-ops): the same names, nothing registered twice.
  assert_eq(mx.operator.load(path), OPS)
  local listed = false
  for _, p in ipairs(mx.operator.loaded()) do listed = listed or p:find('example_ops', 1, true) ~= nil end
  assert(listed, 'mx.operator.loaded() lists the plugin')
end)

test('the ops are in mx.nd and mx.sym, with docs and completion', function()
  assert_eq(type(mx.nd.plugin_quadratic), 'function')
  assert_eq(type(mx.sym.plugin_smooth_l1), 'function')
  local keys = getmetatable(mx.nd).__keys()
  local found = false
  for _, k in ipairs(keys) do found = found or k == 'plugin_quadratic' end
  assert(found, 'plugin_quadratic in the completion keys of mx.nd')
  assert(require('tessera.help').text('nd.plugin_quadratic'):find('a x^2', 1, true))
end)

test('forward values', function()
  local x = mx.nd.array({1, 2, 3})
  assert_eq(mx.nd.plugin_quadratic(x, {a = 1, b = 2, c = 3}):totable(), {6, 11, 18})
  local y = mx.nd.array({-2, -0.5, 0, 0.5, 2})
  assert_eq(mx.nd.plugin_smooth_l1(y, {scalar = 1}):totable(), {1.5, 0.125, 0, 0.125, 1.5})
  -- The same values as the built-in ops they copy, float64 included.
  local z = mx.nd.array({-3, -0.2, 0.1, 0.7, 4}, {dtype = 'float64'})
  tu.assert_almost_equal(mx.nd.plugin_smooth_l1(z, {scalar = 2}), mx.nd.smooth_l1(z, {scalar = 2}))
  tu.assert_almost_equal(mx.nd.plugin_quadratic(z, {a = -1, b = 0.5, c = 2}),
                         mx.nd.quadratic(z, {a = -1, b = 0.5, c = 2}))
end)

test('gradients against finite differences', function()
  local x = mx.sym.Variable('x')
  tu.check_numeric_gradient(mx.sym.plugin_quadratic(x, {a = 0.5, b = -1, c = 2}),
                            {{{0.3, -1.2, 2.0}, {0.7, -0.4, 1.1}}})
  -- Away from the kinks at +-1/sigma^2 = +-0.25.
  tu.check_numeric_gradient(mx.sym.plugin_smooth_l1(x, {scalar = 2}),
                            {{{-1.5, -0.1, 0.2}, {0.9, 2.5, -0.05}}})
  tu.check_autograd_gradient(function(a) return mx.nd.plugin_quadratic(a, {a = 2, b = 1}) end,
                             {{0.5, -1.5, 2}})
  tu.check_autograd_gradient(function(a) return mx.nd.plugin_smooth_l1(a, {scalar = 1}) end,
                             {{-2, -0.3, 0.4, 3}})
end)

test('bad parameters are errors that name the op', function()
  assert_error(function() mx.nd.plugin_quadratic(mx.nd.ones({2}), {d = 1}) end, 'plugin_quadratic')
  assert_error(function() mx.nd.plugin_smooth_l1(mx.nd.ones({2})):wait_to_read() end, 'scalar')
end)

test('a plugin op with no GPU kernel is an error on gpu(0) naming it, never a silent copy',
  function()
  if mx.context.num_gpus() == 0 then
    print('  skipped: no GPU')
    return
  end
  local x = mx.nd.array({1, 2, 3}, {ctx = mx.gpu(0)})
  assert_error(function() mx.nd.plugin_quadratic(x, {a = 1}):wait_to_read() end,
               'plugin_quadratic')
  local ok, err = pcall(function() mx.nd.plugin_quadratic(x, {a = 1}):wait_to_read() end)
  assert(not ok and tostring(err):lower():find('gpu'), tostring(err))
  -- The REPL's state is intact: the same array still works on the GPU.
  assert_eq((x * 2):copyto(mx.cpu()):totable(), {2, 4, 6})
end)
