-- Tab completion. Given the word before the cursor ("mx.engine.pu", "v:ver",
-- "pri") returns the full words it can complete to, sorted. Fields come from
-- tables, from __index tables of metatables (methods of userdata such as
-- NDArrays), and from a metatable's __keys() function (names an __index
-- function can produce, such as lazily loaded namespaces). __index functions
-- are never called: completing must not run user code.
local M = {}

local KEYWORDS = {
  'and', 'break', 'do', 'else', 'elseif', 'end', 'false', 'for', 'function', 'goto', 'if', 'in',
  'local', 'nil', 'not', 'or', 'repeat', 'return', 'then', 'true', 'until', 'while',
}

local MAX_CHAIN = 8  -- __index tables followed per value

local function add_keys(out, t)
  if type(t) ~= 'table' then return end
  for k in pairs(t) do
    if type(k) == 'string' and k:match('^[%a_][%w_]*$') then out[k] = true end
  end
end

local function fields(v)
  local out = {}
  local seen = {}
  for _ = 1, MAX_CHAIN do
    if v == nil or seen[v] then break end
    seen[v] = true
    add_keys(out, v)
    local mt = getmetatable(v)
    if type(mt) ~= 'table' then break end
    local keys = rawget(mt, '__keys')
    if type(keys) == 'function' then
      local ok, list = pcall(keys, v)
      if ok and type(list) == 'table' then
        for _, k in ipairs(list) do out[k] = true end
      end
    end
    local index = rawget(mt, '__index')
    if type(index) ~= 'table' then break end
    v = index
  end
  return out
end

-- The value of a field without calling __index functions.
local function get(v, k)
  for _ = 1, MAX_CHAIN do
    if type(v) == 'table' then
      local x = rawget(v, k)
      if x ~= nil then return x end
    end
    local mt = getmetatable(v)
    if type(mt) ~= 'table' then return nil end
    local index = rawget(mt, '__index')
    if type(index) ~= 'table' then return nil end
    v = index
  end
end

function M.candidates(word)
  local base, sep, prefix = word:match('^(.*)([.:])([%w_]*)$')
  local names
  if base then
    local v = _G
    for part in base:gmatch('[^.]+') do
      if not part:match('^[%a_][%w_]*$') then return {} end
      v = get(v, part)
      if v == nil then return {} end
    end
    names = fields(v)
    if sep == ':' then
      for k in pairs(names) do
        if type(get(v, k)) ~= 'function' then names[k] = nil end
      end
    end
  else
    prefix = word
    base, sep = '', ''
    names = fields(_G)
    for _, k in ipairs(KEYWORDS) do names[k] = true end
  end
  local out = {}
  for k in pairs(names) do
    if k:sub(1, #prefix) == prefix and not (k:match('^_') and not prefix:match('^_')) then
      out[#out + 1] = base .. sep .. k
    end
  end
  table.sort(out)
  return out
end

return M
