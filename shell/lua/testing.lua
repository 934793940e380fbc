-- The test runner behind `tessera --test PATH`.
--
-- A test file is a Lua file under PATH. It declares tests either by calling
--   test('name', function() ... end)
-- (run in declaration order) or by returning a table of named test functions
-- (run in name order), or both. Test files run in their own environment
-- (globals they set do not leak into other files) with these helpers:
--   test(name, fn)
--   assert_eq(actual, expected, msg)     -- deep equality for tables
--   assert_near(actual, expected, tol)   -- numbers within tol (1e-6)
--   assert_error(fn, pattern)            -- fn raises an error matching pattern
--   run_doc_examples(path)               -- runs a Markdown file's ```lua blocks
-- After each test the runner waits for all engine work, so an asynchronous
-- failure is reported against the test that caused it, and restores the
-- engine type. Output: one line per failure with its traceback, then
-- "N passed, N failed". A run that finds no test at all fails.
-- TESSERA_TEST_SKIP=a_test.lua,b_test.lua leaves those files out, saying so.
local internal = require 'tessera.internal'
local pretty = require 'tessera.pretty'

local M = {}

local function deep_equal(a, b, seen)
  if a == b then return true end
  if type(a) ~= 'table' or type(b) ~= 'table' then return false end
  seen = seen or {}
  if seen[a] == b then return true end
  seen[a] = b
  for k, v in pairs(a) do
    if not deep_equal(v, b[k], seen) then return false end
  end
  for k in pairs(b) do
    if a[k] == nil then return false end
  end
  return true
end

local helpers = {}

function helpers.assert_eq(actual, expected, msg)
  if not deep_equal(actual, expected) then
    error((msg and msg .. ': ' or '') .. 'expected ' .. pretty.format(expected) .. ', got '
          .. pretty.format(actual), 2)
  end
end

function helpers.assert_near(actual, expected, tol)
  tol = tol or 1e-6
  if type(actual) ~= 'number' or math.abs(actual - expected) > tol then
    error('expected ' .. tostring(expected) .. ' within ' .. tol .. ', got ' .. tostring(actual), 2)
  end
end

function helpers.assert_error(fn, pattern)
  local ok, err = pcall(fn)
  if ok then error('expected an error' .. (pattern and " matching '" .. pattern .. "'" or ''), 2) end
  if pattern and not tostring(err):find(pattern) then
    error("expected an error matching '" .. pattern .. "', got: " .. tostring(err), 2)
  end
  return err
end

-- Runs every ```lua block of a Markdown file (each in a fresh environment
-- over _G, print silenced) and returns how many ran: the docs' examples
-- are tests.
function helpers.run_doc_examples(path)
  local f = io.open(path)
  if not f then error('run_doc_examples: cannot read ' .. path, 2) end
  local text = f:read('*a')
  f:close()
  local n = 0
  for block in text:gmatch('```lua\n(.-)```') do
    n = n + 1
    local env = setmetatable({ print = function() end }, { __index = _G })
    local chunk, err = load(block, '=' .. path:match('[^/]*/[^/]*$') .. ' block ' .. n, 't', env)
    if not chunk then error(err, 2) end
    chunk()
  end
  return n
end

local function traceback(err)
  return debug.traceback(tostring(err), 2)
end

-- Loads one file and returns its tests as a list of {name, fn}, or nil and an error.
local function collect(path)
  local tests = {}
  local env = setmetatable({}, { __index = _G })
  for k, v in pairs(helpers) do env[k] = v end
  env.test = function(name, fn)
    if type(name) ~= 'string' or type(fn) ~= 'function' then
      error('test(name, fn): expected a string and a function', 2)
    end
    tests[#tests + 1] = { name = name, fn = fn }
  end
  local chunk, err = loadfile(path)
  if not chunk then return nil, err end
  setfenv(chunk, env)
  local ok, ret = xpcall(chunk, traceback)
  if not ok then return nil, ret end
  if type(ret) == 'table' then
    local names = {}
    for name, fn in pairs(ret) do
      if type(fn) == 'function' then names[#names + 1] = name end
    end
    table.sort(names, function(a, b) return tostring(a) < tostring(b) end)
    for _, name in ipairs(names) do tests[#tests + 1] = { name = tostring(name), fn = ret[name] } end
  end
  return tests
end

local function run_one(fn)
  local engine_type = mx.engine.type()
  local ok, err = xpcall(fn, traceback)
  -- Work the test pushed must finish inside it; its failure belongs to it.
  local wok, werr = pcall(mx.engine.wait_for_all)
  if ok and not wok then ok, err = false, 'after the test, waiting for its engine work: ' .. tostring(werr) end
  if mx.engine.type() ~= engine_type then pcall(mx.engine.set_type, engine_type) end
  return ok, err
end

-- The files TESSERA_TEST_SKIP names (comma-separated file names), left out
-- with a line saying so: for machines that lack a program some files need
-- (the GPU suite's, without Graphviz or gnuplot).
local function skipped_files()
  local set = {}
  for name in (os.getenv('TESSERA_TEST_SKIP') or ''):gmatch('[^,%s]+') do set[name] = true end
  return set
end

-- Runs every test file under `path`; returns passed, failed.
function M.run(path)
  local files = internal.list_lua_files(path)
  local skip = skipped_files()
  local passed, failed = 0, 0
  local out = io.stdout
  if #files == 0 then
    out:write('no test files (*.lua) under ', path, '\n')
    return 0, 1
  end
  for _, file in ipairs(files) do
    local tests, err
    if skip[file:match('[^/]*$')] then
      out:write(string.format('%-40s skipped (TESSERA_TEST_SKIP)\n', file))
    else
      tests, err = collect(file)
    end
    if skip[file:match('[^/]*$')] then
      -- nothing run, nothing counted
    elseif not tests then
      failed = failed + 1
      out:write('FAIL ', file, ' (loading)\n', tostring(err), '\n')
    else
      local file_failed = 0
      for _, t in ipairs(tests) do
        local ok, terr = run_one(t.fn)
        if ok then
          passed = passed + 1
        else
          failed = failed + 1
          file_failed = file_failed + 1
          out:write('FAIL ', file, ': ', t.name, '\n', tostring(terr), '\n')
        end
      end
      out:write(string.format('%-40s %d tests, %d failed\n', file, #tests, file_failed))
    end
    out:flush()
  end
  out:write(string.format('%d passed, %d failed\n', passed, failed))
  if passed + failed == 0 then
    -- A run that tested nothing passed nothing: a wrong path or a file
    -- whose tests were never declared must not look like success.
    out:write('no tests found under ', path, ' (declare them with test(name, fn))\n')
    return 0, 1
  end
  return passed, failed
end

return M
