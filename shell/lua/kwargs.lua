-- Keyword-table calls. MXNet's Python API takes its leading arguments by
-- position or by keyword (`Module(symbol=net, context=ctx)`,
-- `mod.fit(train_data=it, num_epoch=2)`); a Lua user translating that writes
-- one table: `mx.mod.Module{symbol = net, context = mx.cpu()}`,
-- `mod:fit{train_data = it, num_epoch = 2}`. kwargs.wrap makes a function
-- written with positional parameters take both forms.
local M = {}

-- A call's first argument is a keyword table when it is a plain table (no
-- metatable: not an iterator, metric, symbol or array) that names the first
-- parameter.
local function is_keywords(v, first)
  return type(v) == 'table' and getmetatable(v) == nil and v[first] ~= nil
end

-- fn(a1, ..., an[, opts]) -> a function that also takes fn{a1 = , ..., an = ,
-- option = ...}. `names`: the positional parameters in order. `opts_at`: the
-- position of fn's options table, which receives the keys that name no
-- parameter; without one, such a key is an error naming it. `who` names the
-- function in errors. `method`: fn takes self first.
function M.wrap(fn, who, names, opts_at, method)
  local lead = method and 1 or 0
  return function(...)
    local first = select(lead + 1, ...)
    if not is_keywords(first, names[1]) then return fn(...) end
    local args = {}
    if method then args[1] = (...) end
    local rest = {}
    for k, v in pairs(first) do rest[k] = v end
    for i, name in ipairs(names) do
      args[lead + i] = rest[name]
      rest[name] = nil
    end
    if opts_at then
      args[lead + opts_at] = next(rest) ~= nil and rest or nil
    else
      local key = next(rest)
      if key ~= nil then
        error(("%s: unknown keyword '%s' (keywords: %s)"):format(who, tostring(key),
          table.concat(names, ', ')), 2)
      end
    end
    local n = lead + math.max(#names, opts_at or 0)
    return fn(unpack(args, 1, n))
  end
end

return M
