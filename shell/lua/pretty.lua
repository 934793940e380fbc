-- Readable text for values, as the REPL prints them: strings quoted, numbers
-- without noise, tables nested to a bounded depth with sorted keys, long
-- tables one entry per line, cycles marked. Optional ANSI colours.
local M = {}

local COLORS = {
  number = '\27[36m', string = '\27[32m', boolean = '\27[35m', ['nil'] = '\27[35m',
  other = '\27[90m', reset = '\27[0m',
}

local MAX_ITEMS = 60   -- per table
local WIDTH = 78       -- beyond this a table goes one entry per line
local IDENT = '^[%a_][%w_]*$'
local KEYWORDS = {}
for w in ('and break do else elseif end false for function goto if in local nil not or repeat '
          .. 'return then true until while'):gmatch('%a+') do KEYWORDS[w] = true end

local function quote(s)
  local q = string.format('%q', s):gsub('\\\n', '\\n'):gsub('\r', '\\r'):gsub('%z', '\\0')
  return q
end

local function number_text(n)
  if n ~= n then return 'nan' end
  if n == math.huge then return 'inf' end
  if n == -math.huge then return '-inf' end
  if n == math.floor(n) and math.abs(n) < 2 ^ 53 then return string.format('%d', n) end
  return string.format('%.14g', n)
end

local function paint(opts, kind, text)
  if not opts.color then return text end
  return (COLORS[kind] or COLORS.other) .. text .. COLORS.reset
end

local function has_tostring(v)
  local mt = getmetatable(v)
  return type(mt) == 'table' and rawget(mt, '__tostring') ~= nil
end

local function key_order(a, b)
  local ta, tb = type(a), type(b)
  if ta ~= tb then
    if ta == 'number' then return true end
    if tb == 'number' then return false end
    return ta < tb
  end
  if ta == 'number' or ta == 'string' then return a < b end
  return tostring(a) < tostring(b)
end

local format

local function format_table(t, opts, depth, seen, indent)
  if seen[t] then return '<cycle>' end
  if depth >= opts.depth then return '{...}' end
  seen[t] = true
  local n = #t
  local keys, count = {}, 0
  for k in pairs(t) do
    count = count + 1
    if not (type(k) == 'number' and k >= 1 and k <= n and k == math.floor(k)) then
      keys[#keys + 1] = k
    end
  end
  table.sort(keys, key_order)
  local items = {}
  local shown = 0
  for i = 1, n do
    if shown >= MAX_ITEMS then break end
    shown = shown + 1
    items[#items + 1] = format(rawget(t, i), opts, depth + 1, seen, indent .. '  ')
  end
  for _, k in ipairs(keys) do
    if shown >= MAX_ITEMS then break end
    shown = shown + 1
    local ktext
    if type(k) == 'string' and k:match(IDENT) and not KEYWORDS[k] then
      ktext = k
    else
      ktext = '[' .. format(k, opts, depth + 1, seen, indent .. '  ') .. ']'
    end
    items[#items + 1] = ktext .. ' = ' .. format(rawget(t, k), opts, depth + 1, seen, indent .. '  ')
  end
  if count > shown then items[#items + 1] = '... (' .. (count - shown) .. ' more)' end
  seen[t] = nil
  if #items == 0 then return '{}' end
  local one_line = '{' .. table.concat(items, ', ') .. '}'
  local visible = opts.color and one_line:gsub('\27%[%d+m', '') or one_line
  if #visible + #indent <= WIDTH and not visible:find('\n') then return one_line end
  return '{\n' .. indent .. '  ' .. table.concat(items, ',\n' .. indent .. '  ') .. '\n' .. indent .. '}'
end

format = function(v, opts, depth, seen, indent)
  local t = type(v)
  if t == 'string' then return paint(opts, 'string', quote(v)) end
  if t == 'number' then return paint(opts, 'number', number_text(v)) end
  if t == 'boolean' or t == 'nil' then return paint(opts, t, tostring(v)) end
  if t == 'table' and not has_tostring(v) then return format_table(v, opts, depth, seen, indent) end
  local ok, s = pcall(tostring, v)
  if not ok then s = '<' .. t .. ': __tostring failed: ' .. tostring(s) .. '>' end
  if t == 'table' or t == 'userdata' then return s end
  return paint(opts, 'other', s)
end

-- format(v, {color = false, depth = 4}) -> text
function M.format(v, opts)
  opts = opts or {}
  return format(v, { color = opts.color, depth = opts.depth or 4 }, 0, {}, '')
end

-- Prints n values on one line, tab-separated, as the REPL shows results.
function M.print_values(color, n, ...)
  local parts = {}
  for i = 1, n do parts[i] = M.format((select(i, ...)), { color = color }) end
  io.stdout:write(table.concat(parts, '\t'), '\n')
end

-- ---- :who ----------------------------------------------------------------

local baseline = {}

-- The globals that exist now are the start-up's (:who leaves them out).
function M.mark_globals()
  baseline = {}
  for k in pairs(_G) do baseline[k] = true end
end

local dtype_bytes = { float64 = 8, int64 = 8, float32 = 4, int32 = 4, float16 = 2, bfloat16 = 2,
  uint8 = 1, int8 = 1, bool = 1 }

local function bytes_text(n)
  if n >= 2 ^ 30 then return ('%.1f GiB'):format(n / 2 ^ 30) end
  if n >= 2 ^ 20 then return ('%.1f MiB'):format(n / 2 ^ 20) end
  if n >= 2 ^ 10 then return ('%.1f KiB'):format(n / 2 ^ 10) end
  return ('%d B'):format(n)
end

-- What :who prints about one value.
local function describe(v)
  local mx = rawget(_G, 'mx')
  if mx and mx.nd.is_ndarray(v) then
    local shape = table.concat(v.shape, 'x')
    return ('NDArray  %-16s %-8s %-8s %s'):format(shape == '' and '()' or shape, v.dtype,
      tostring(v.ctx), bytes_text(v.size * (dtype_bytes[v.dtype] or 4)))
  end
  if mx and mx.sym.is_symbol(v) then
    return 'Symbol   ' .. table.concat(v:list_outputs(), ', ')
  end
  if type(v) == 'table' then
    local n = 0
    for _ in pairs(v) do n = n + 1 end
    local mt = getmetatable(v)
    local name = type(mt) == 'table' and rawget(mt, '__name')
    return name and ('%s instance'):format(name) or ('table    %d entries'):format(n)
  end
  if type(v) == 'string' then return ('string   %d bytes'):format(#v) end
  if type(v) == 'number' or type(v) == 'boolean' then return ('%-8s %s'):format(type(v), tostring(v)) end
  return type(v)
end

-- The globals made since mark_globals, one line each, sorted by name.
function M.who()
  local names = {}
  for k in pairs(_G) do
    if type(k) == 'string' and not baseline[k] then names[#names + 1] = k end
  end
  table.sort(names)
  if #names == 0 then return '(no globals defined in this session)\n' end
  local width = 4
  for _, n in ipairs(names) do width = math.max(width, #n) end
  local lines = {}
  for _, n in ipairs(names) do
    lines[#lines + 1] = ('%-' .. width .. 's  %s'):format(n, describe(rawget(_G, n)))
  end
  return table.concat(lines, '\n') .. '\n'
end

return M
