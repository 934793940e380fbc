-- Libraries that mx.operator.load must refuse, each with an error naming the
-- path and the problem, after which the shell works as before. The test
-- libraries are built by tests/plugin/CMakeLists.txt from tests/plugin/bad
-- into TESSERA_TEST_PLUGIN_DIR.
local dir = assert(os.getenv('TESSERA_TEST_PLUGIN_DIR'), 'set TESSERA_TEST_PLUGIN_DIR')
local function bad(name) return dir .. '/libtessera_test_' .. name .. '.so' end

-- The error of loading `path`, which must fail and mention `path`.
local function load_error(path)
  local ok, err = pcall(mx.operator.load, path)
  assert(not ok, path .. ' loaded')
  assert(tostring(err):find(path, 1, true), 'the error names the path: ' .. tostring(err))
  return tostring(err)
end

local function still_works()
  assert_eq(mx.nd.quadratic(mx.nd.array({1, 2}), {a = 1, b = 1}):totable(), {2, 6})
  assert_eq(mx.nd.smooth_l1(mx.nd.array({2}), {scalar = 1}):totable(), {1.5})
end

test('a path that does not exist', function()
  local e = load_error('/nonexistent/libnothing.so')
  assert(e:find('no such file', 1, true), e)
  assert_error(function() mx.operator.load() end, 'string expected')
  still_works()
end)

test('a library without the entry points', function()
  local e = load_error(bad('no_entry'))
  assert(e:find('is not a Tessera operator plugin', 1, true), e)
  still_works()
end)

test('a plugin built for another ABI version or layout', function()
  local e = load_error(bad('bad_version'))
  assert(e:find('ABI version', 1, true) and e:find('rebuild it', 1, true), e)
  assert_eq(mx.nd.bad_version_op, nil)
  e = load_error(bad('bad_layout'))
  assert(e:find('sizeof(tessera::TBlob)', 1, true), e)
  still_works()
end)

test('a plugin that takes an existing op name', function()
  local e = load_error(bad('duplicate_op'))
  assert(e:find("operator 'quadratic' already exists", 1, true), e)
  e = load_error(bad('duplicate_simple_op'))
  assert(e:find("operator 'smooth_l1' already exists", 1, true), e)
  -- The built-ins keep their docs and functions.
  assert(not require('tessera.help').text('nd.quadratic'):find('must not replace', 1, true))
  still_works()
end)

test('a plugin that registers from static initialisers, or needs a missing symbol', function()
  local e = load_error(bad('static_registration'))
  assert(e:find('TESSERA_OP_PLUGIN()', 1, true), e)
  e = load_error(bad('undefined_symbol'))
  assert(e:find('FunctionTesseraDoesNotHave', 1, true), e)
  still_works()
end)
