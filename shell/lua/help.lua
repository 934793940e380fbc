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

local function first_line(s)
  return (s:match('^[^\n]*'))
end

local function describe(value)
  local text = M.lookup(value)
  if type(value) == 'table' then
    local fields = {}
    for k, v in pairs(value) do
      local d = type(k) == 'string' and M.lookup(v)
      if d then fields[#fields + 1] = string.format('  %-18s %s', k, first_line(d)) end
    end
    table.sort(fields)
    if #fields > 0 then
      return (text and text .. '\n' or '') .. 'Fields:\n' .. table.concat(fields, '\n')
    end
  end
  return text
end

function M.text(x)
  if x == nil then return describe(_G.mx) end
  if type(x) == 'string' then
    local v = resolve(x)
    local text = v ~= nil and describe(v)
    if text then return text end
    text = internal.find_doc(x:gsub('^mx%.', ''), nil)
    if text then return text end
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
