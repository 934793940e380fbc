-- mx.recordio: MXRecordIO and MXIndexedRecordIO round trips, MXNet's bytes
-- (computed here from the format, not read back from Tessera), pack and
-- unpack with number and vector labels, files that appear only at close,
-- and clear errors for bad files, indexes and arguments.

local rio = mx.recordio

local function read_file(path)
  local f = assert(io.open(path, 'rb'))
  local s = f:read('*a')
  f:close()
  return s
end

local function write_file(path, s)
  local f = assert(io.open(path, 'wb'))
  f:write(s)
  f:close()
end

local function exists(path)
  local f = io.open(path, 'rb')
  if f then f:close() end
  return f ~= nil
end

local function le32(v)
  return string.char(v % 256, math.floor(v / 256) % 256, math.floor(v / 65536) % 256,
    math.floor(v / 16777216) % 256)
end
local MAGIC = le32(0xced7230a)

test('MXRecordIO writes MXNet framing and reads it back; reset and tell', function()
  local path = os.tmpname()
  local w = rio.MXRecordIO(path, 'w')
  assert_eq(w:tell(), 0)
  w:write('abc')
  assert_eq(w:tell(), 12)
  w:write('')
  w:write(MAGIC .. 'xy')
  w:close()
  w:close()  -- twice is harmless
  assert_eq(read_file(path), MAGIC .. le32(3) .. 'abc\0' .. MAGIC .. le32(0)
    .. MAGIC .. le32(2 ^ 29) .. MAGIC .. le32(3 * 2 ^ 29 + 2) .. 'xy\0\0')
  local r = rio.MXRecordIO{uri = path, flag = 'r'}
  assert_eq({r:read(), r:read(), r:read(), r:read()}, {'abc', '', MAGIC .. 'xy'})
  r:reset()
  assert_eq(r:read(), 'abc')
  r:close()
  assert_error(function() r:read() end, 'MXRecordIO.read: the file is closed')
  os.remove(path)
end)

test('a writer that is not closed leaves no file', function()
  local path = os.tmpname()
  os.remove(path)
  local w = rio.MXRecordIO(path, 'w')
  w:write('lost')
  w = nil
  collectgarbage()
  collectgarbage()
  assert(not exists(path), 'an unclosed writer left a file')
end)

test('MXIndexedRecordIO: write_idx, read_idx in any order, keys, the .idx text', function()
  local idx, rec = os.tmpname(), os.tmpname()
  local w = rio.MXIndexedRecordIO(idx, rec, 'w')
  for i = 0, 9 do w:write_idx(i, ('record %d'):format(i)) end
  w:close()
  local lines = {}
  for line in read_file(idx):gmatch('[^\n]+') do lines[#lines + 1] = line end
  assert_eq(lines[1], '0\t0')
  assert_eq(lines[2], '1\t16')  -- an 8-byte header and 'record 0', 8 bytes (no padding)
  local r = rio.MXIndexedRecordIO(idx, rec, 'r')
  assert_eq(#r.keys, 10)
  assert_eq(r.keys[4], 3)
  assert_eq(r:read_idx(7), 'record 7')
  assert_eq(r:read_idx(2), 'record 2')
  assert_eq(r:read(), 'record 3')
  assert_error(function() r:read_idx(11) end, 'no record with key 11')
  r:close()
  -- String keys.
  local ws = rio.MXIndexedRecordIO{idx_path = idx, uri = rec, flag = 'w', key_type = 'string'}
  ws:write_idx('cat', 'meow')
  ws:write_idx('dog', 'woof')
  ws:close()
  local rs = rio.MXIndexedRecordIO(idx, rec, 'r', {key_type = 'string'})
  assert_eq(rs.keys, {'cat', 'dog'})
  assert_eq(rs:read_idx('dog'), 'woof')
  rs:close()
  assert_error(function() rio.MXIndexedRecordIO(idx, rec, 'r') end, 'key "cat" is not a number')
  os.remove(idx)
  os.remove(rec)
end)

test('bad indexes: malformed lines and positions past the end name the file and line', function()
  local idx, rec = os.tmpname(), os.tmpname()
  local w = rio.MXRecordIO(rec, 'w')
  w:write('abcd')
  w:close()
  write_file(idx, '0\t0\n1\t400\n')
  assert_error(function() rio.MXIndexedRecordIO(idx, rec, 'r') end,
    'line 2: position 400 is past the end of')
  write_file(idx, '0\t0\n1 12\n')
  assert_error(function() rio.MXIndexedRecordIO(idx, rec, 'r') end, "line 2: expected 'key<TAB>")
  write_file(idx, '0\t6\n')
  assert_error(function() rio.MXIndexedRecordIO(idx, rec, 'r') end, 'not the start of a record')
  os.remove(idx)
  assert_error(function() rio.MXIndexedRecordIO(idx, rec, 'r') end, 'no such index file')
  os.remove(rec)
end)

test('cut and corrupt record files are errors with the file and the offset', function()
  local path = os.tmpname()
  local w = rio.MXRecordIO(path, 'w')
  w:write('hello')
  w:write('world!')
  w:close()
  local good = read_file(path)
  write_file(path, good:sub(1, #good - 3))
  local r = rio.MXRecordIO(path, 'r')
  assert_eq(r:read(), 'hello')
  assert_error(function() r:read() end, 'at offset 16, a record of 6 bytes, but the file has')
  write_file(path, 'GARBAGE!' .. good)
  assert_error(function() rio.MXRecordIO(path, 'r'):read() end,
    'is not a valid RecordIO file: at offset 0, the magic number is')
  os.remove(path)
  assert_error(function() rio.MXRecordIO(path, 'r') end, 'MXRecordIO')
  assert_error(function() rio.MXRecordIO(path, 'x') end, "flag must be 'r' or 'w'")
end)

test('pack and unpack: the 24-byte header, number and vector labels', function()
  -- struct.pack('IfQQ', 0, 3.0, 7, 0) + payload, from the format.
  local s = rio.pack(rio.IRHeader(0, 3, 7, 0), 'payload')
  assert_eq(s, le32(0) .. le32(0x40400000) .. le32(7) .. le32(0) .. le32(0) .. le32(0)
    .. 'payload')
  local h, p = rio.unpack(s)
  assert_eq({h.flag, h.label, h.id, h.id2, p}, {0, 3, 7, 0, 'payload'})
  assert_eq({h[1], h[2], h[3], h[4]}, {0, 3, 7, 0})
  -- A label vector goes after the header, flag = its length.
  local v = rio.pack({flag = 0, label = {1, 2.5}, id = 1, id2 = 2}, 'x')
  assert_eq(#v, 24 + 8 + 1)
  assert_eq(v:sub(1, 4), le32(2))
  assert_eq(v:sub(25, 32), le32(0x3f800000) .. le32(0x40200000))
  local hv, pv = rio.unpack(v)
  assert_eq({hv.flag, hv.label, pv}, {2, {1, 2.5}, 'x'})
  local hn = rio.unpack(rio.pack(rio.IRHeader(0, mx.nd.array({4, 5, 6}), 0, 0)))
  assert_eq(hn.label, {4, 5, 6})
  assert_error(function() rio.unpack(v:sub(1, 28)) end, 'shorter than its header')
  assert_error(function() rio.unpack('short') end, 'has no image record header')
  assert_error(function() rio.pack(rio.IRHeader(0, 1, -1, 0), '') end, 'id must be a whole number')
  assert_error(function() rio.pack_img(rio.IRHeader(), nil) end,
    'pack_img: the image: expected an NDArray')
end)
