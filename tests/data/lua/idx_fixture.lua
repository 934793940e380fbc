-- IDX files (MNIST's format) for the Lua tests: a big-endian magic number
-- and sizes, then the bytes. Test files load it with dofile; it lives out of
-- tests/lua so that the test runner does not take it for tests.
local M = {}

local function be32(n)
  return string.char(math.floor(n / 16777216) % 256, math.floor(n / 65536) % 256,
    math.floor(n / 256) % 256, n % 256)
end

-- write(path, magic, dims, bytes): `bytes` a string, or a list of byte
-- values or of 1-byte strings.
function M.write(path, magic, dims, bytes)
  if type(bytes) == 'table' then
    local parts = {}
    for i, b in ipairs(bytes) do parts[i] = type(b) == 'number' and string.char(b) or b end
    bytes = table.concat(parts)
  end
  local f = assert(io.open(path, 'wb'))
  f:write(be32(magic))
  for _, d in ipairs(dims) do f:write(be32(d)) end
  f:write(bytes)
  f:close()
end

return M
