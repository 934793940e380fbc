-- Documentation: a weak-keyed registry, keyed by the documented value itself
-- (function or table), shared with the C++ bindings (lua_util.cc, SetDoc).
-- help(x) looks there, then at names resolved in `mx`, then at the doc
-- sources C++ registered (the operator registry).
local internal = require 'tessera.internal'

local M = {}

local function registry()
  local reg = debug.getregistry()
  local docs = reg['tessera.docs']
  if not docs then
    docs = setmetatable({}, { __mode = 'k' })
    reg['tessera.docs'] = docs
  end
  return docs
end

function M.doc(value, text)
  local t = type(value)
  if t ~= 'function' and t ~= 'table' and t ~= 'userdata' then
    error('mx.doc: can document a function, table or userdata, not a ' .. t, 2)
  end
  if type(text) ~= 'string' then error('mx.doc: the documentation must be a string', 2) end
  registry()[value] = text
  return value
end

function M.lookup(value)
  local ok, text = pcall(function() return registry()[value] end)
  return ok and text or nil
end

-- Resolves 'engine.push' or 'mx.engine.push' in mx without raising.
local function resolve(name)
  local path = name:gsub('^mx%.', '')
  local v = _G.mx
  if name == 'mx' then return v end
  for part in path:gmatch('[^.:]+') do
    if type(v) ~= 'table' then return nil end
    local ok, field = pcall(function() return v[part] end)
    if not ok then return nil end
    v = field
  end
  if v == _G.mx then return nil end
  return v
end

-- The first paragraph of a doc as one line (a summary never stops mid-sentence).
local function summary(s)
  local para = s:match('^(.-)\n%s*\n') or s
  return (para:gsub('%s*\n%s*', ' '))
end

-- `text` wrapped to `width` columns, lines after the first indented by `indent`.
local function wrap(text, indent, width)
  local lines, line = {}, ''
  for word in text:gmatch('%S+') do
    if line ~= '' and #line + 1 + #word > width - indent then
      lines[#lines + 1] = line
      line = word
    else
      line = line == '' and word or line .. ' ' .. word
    end
  end
  lines[#lines + 1] = line
  return table.concat(lines, '\n' .. (' '):rep(indent))
end

-- The keys of a table, with those its metatable's __keys can still produce
-- (mx's namespaces that load on first use).
local function all_keys(t, lazy)
  local keys, seen = {}, {}
  for k in pairs(t) do
    if type(k) == 'string' and not seen[k] then keys[#keys + 1], seen[k] = k, true end
  end
  local mt = getmetatable(t)
  local more = lazy and type(mt) == 'table' and rawget(mt, '__keys')
  if type(more) == 'function' then
    for _, k in ipairs(more()) do
      if not seen[k] then keys[#keys + 1], seen[k] = k, true end
    end
  end
  table.sort(keys)
  return keys
end

-- A value's doc, and for a table the summaries of its documented fields;
-- `lazy`: with the fields its metatable can still load (mx's namespaces).
local function describe(value, lazy)
  local text = M.lookup(value)
  if type(value) == 'table' then
    local fields = {}
    for _, k in ipairs(all_keys(value, lazy)) do
      local ok, v = pcall(function() return value[k] end)
      local d = ok and M.lookup(v)
      if d then fields[#fields + 1] = ('  %-18s %s'):format(k, wrap(summary(d), 21, 100)) end
    end
    if #fields > 0 then
      return (text and text .. '\n' or '') .. 'Fields:\n' .. table.concat(fields, '\n')
    end
  end
  return text
end

-- ---- methods: ?NDArray.reshape, ?Symbol.infer_shape, ?Executor.forward,
-- or a bare method name ----
local class_methods = {
  NDArray = function() return getmetatable(_G.mx.nd.zeros({ 1 })).__index end,
  Symbol = function() return getmetatable(_G.mx.sym.Variable('x')).__index end,
  Executor = function() return _G.mx.Executor end,
}
local class_order = { 'NDArray', 'Symbol', 'Executor' }

local function method_doc(name)
  local cls, m = name:match('([%a]+)[.:]([%w_]+)$')
  if cls and class_methods[cls] then
    local ok, t = pcall(class_methods[cls])
    local f = ok and type(t) == 'table' and rawget(t, m)
    return f and M.lookup(f)
  end
  if not name:match('^[%a_][%w_]*$') then return nil end
  local found = {}
  for _, c in ipairs(class_order) do
    local ok, t = pcall(class_methods[c])
    local f = ok and type(t) == 'table' and rawget(t, name)
    local d = f and M.lookup(f)
    if d then found[#found + 1] = d end
  end
  return #found > 0 and table.concat(found, '\n\n') or nil
end

-- Other places a name may be documented (mx.operator adds the operators
-- registered from Lua): each source is fn(name) -> text or nil.
local sources = {}
function M.add_source(fn)
  sources[#sources + 1] = fn
end

function M.text(x)
  if x == nil then return describe(_G.mx, true) end
  if type(x) == 'string' then
    local v = resolve(x)
    local text = v ~= nil and describe(v, v == _G.mx)
    if text then return text end
    local bare = x:gsub('^mx%.', '')
    text = internal.find_doc(bare, nil)
    if text then return text end
    for _, source in ipairs(sources) do
      text = source(bare)
      if text then return text end
    end
    text = method_doc(bare)
    if text then return text end
    -- an operator made in Lua (mx.operator.elementwise) lives in mx.nd
    for _, ns in ipairs({ 'nd.', 'sym.' }) do
      v = resolve(ns .. bare)
      text = v ~= nil and M.lookup(v)
      if text then return text end
    end
    if _G[x] ~= nil and M.lookup(_G[x]) then return M.lookup(_G[x]) end
    return "no help for '" .. x .. "'"
  end
  local text = describe(x)
  if text then return text end
  return 'no help for this ' .. type(x) .. " (document values with mx.doc(value, 'text'))"
end

function M.help(x)
  print(M.text(x))
end

M.doc(M.help, "help(x) -> prints the documentation of a value or a name ('engine.push')")

return M
