-- mx.recordio: MXNet's RecordIO files, byte-compatible (the framing is in
-- engine/io/recordio.h), as MXNet's Python module:
--   local w = mx.recordio.MXRecordIO('data.rec', 'w')
--   w:write(mx.recordio.pack(mx.recordio.IRHeader(0, 3, 1, 0), payload))
--   w:close()                                  -- the file appears only now
--   local r = mx.recordio.MXRecordIO('data.rec', 'r')
--   local header, payload = mx.recordio.unpack(r:read())  -- nil at the end
-- MXIndexedRecordIO keeps a .idx beside the .rec ("key\tposition" lines)
-- for read_idx(key). Records are Lua strings of bytes.
local help = require 'tessera.help'
local kwargs = require 'tessera.kwargs'
local ffi = require 'ffi'

return function(mx)
  local io_c = require 'tessera.io'
  local M = {}

  local function check_flag(flag, who)
    if flag ~= 'r' and flag ~= 'w' then
      error(("%s: flag must be 'r' or 'w', got %s"):format(who, tostring(flag)), 3)
    end
  end

  -- ---- MXRecordIO ----------------------------------------------------------

  local MXRecordIO = {}
  MXRecordIO.__index = MXRecordIO

  local function new_record_io(uri, flag, who)
    if type(uri) ~= 'string' then
      error(who .. ': uri must be a path (a string), got ' .. type(uri), 3)
    end
    check_flag(flag, who)
    local self = setmetatable({ uri = uri, flag = flag, who = who }, MXRecordIO)
    self:open()
    return self
  end

  -- Opens the file again: a reader from the first record; a writer starts a
  -- new file (which replaces `uri` at close).
  function MXRecordIO:open()
    self:_drop()
    if self.flag == 'w' then
      self.handle = io_c.record_writer(self.uri, self.who)
      self.writable = true
    else
      self.handle = io_c.record_reader(self.uri, self.who)
      self.writable = false
    end
    self.is_open = true
  end

  -- Drops the file open before: a reader's is closed, a writer's records
  -- discarded (its file never appears).
  function MXRecordIO:_drop()
    if self.handle then
      if self.writable then self.handle:discard() else self.handle:close() end
    end
    self.handle = nil
    self.is_open = false
  end

  local function check_open(self, what)
    if not self.is_open then error(self.who .. '.' .. what .. ': the file is closed', 3) end
  end

  -- close(): a writer's records become the file `uri`; closing twice does nothing.
  function MXRecordIO:close()
    if not self.is_open then return end
    local h = self.handle
    self.handle, self.is_open = nil, false
    h:close()
  end

  function MXRecordIO:reset()
    check_open(self, 'reset')
    if self.writable then
      error(self.who .. ".reset: a writer cannot go back (open the file with 'r' to read it)", 2)
    end
    self.handle:seek(0)
  end

  function MXRecordIO:write(buf)
    check_open(self, 'write')
    if not self.writable then error(self.who .. ".write: the file is open for reading ('r')", 2) end
    if type(buf) ~= 'string' then
      error(self.who .. '.write: a record is a string of bytes, got ' .. type(buf), 2)
    end
    self.handle:write(buf)
  end

  -- read() -> the next record, or nil at the end.
  function MXRecordIO:read()
    check_open(self, 'read')
    if self.writable then error(self.who .. ".read: the file is open for writing ('w')", 2) end
    return self.handle:read()
  end

  -- tell() -> the offset of the next record.
  function MXRecordIO:tell()
    check_open(self, 'tell')
    return self.handle:tell()
  end

  MXRecordIO.__tostring = function(self)
    return ("MXRecordIO('%s', '%s')%s"):format(self.uri, self.flag,
      self.is_open and '' or ' (closed)')
  end

  M.MXRecordIO = kwargs.wrap(function(uri, flag)
    return new_record_io(uri, flag, 'MXRecordIO')
  end, 'MXRecordIO', { 'uri', 'flag' })

  -- ---- MXIndexedRecordIO ---------------------------------------------------

  local MXIndexedRecordIO = setmetatable({}, { __index = MXRecordIO })
  MXIndexedRecordIO.__index = MXIndexedRecordIO

  local function key_text(key, who)
    local t = type(key)
    if t == 'number' then
      if key ~= math.floor(key) or key ~= key or key == math.huge or key == -math.huge then
        error(('%s: a number key must be whole, got %s'):format(who, tostring(key)), 3)
      end
      return ('%d'):format(key)
    elseif t == 'string' then
      if key == '' or key:find('[\t\n\r]') then
        error(('%s: a key must be non-empty without tabs or line breaks, got %q'):format(who, key), 3)
      end
      return key
    end
    error(('%s: a key is a number or a string, got %s'):format(who, t), 3)
  end

  -- The index of a reader: every line "key<TAB>position", each position the
  -- start of a record inside the .rec.
  local function load_index(self)
    local who = self.who
    if not io_c.check_file(self.idx_path, who) then
      error(('%s: %s: no such index file'):format(who, self.idx_path), 4)
    end
    local f = assert(io.open(self.idx_path, 'rb'))
    local text = f:read('*a')
    f:close()
    local size = self.handle:size()
    local n = 0
    for line in text:gmatch('([^\n]*)\n?') do
      n = n + 1
      line = line:gsub('\r$', '')
      if line ~= '' then
        local k, pos = line:match('^([^\t]+)\t(%d+)$')
        if not k then
          error(("%s: %s line %d: expected 'key<TAB>position', got %q"):format(who,
            self.idx_path, n, line:sub(1, 60)), 4)
        end
        pos = tonumber(pos)
        if pos > size or pos % 4 ~= 0 then
          error(('%s: %s line %d: position %d is %s %s (%d bytes)'):format(who, self.idx_path, n,
            pos, pos > size and 'past the end of' or 'not the start of a record in', self.uri,
            size), 4)
        end
        local key = k
        if self.key_type == 'number' then
          key = tonumber(k)
          if key == nil then
            error(('%s: %s line %d: key %q is not a number (key_type = \'number\')'):format(who,
              self.idx_path, n, k), 4)
          end
        end
        self.idx[key] = pos
        self.keys[#self.keys + 1] = key
      end
    end
  end

  local function new_indexed(idx_path, uri, flag, opts)
    local who = 'MXIndexedRecordIO'
    if type(idx_path) ~= 'string' then
      error(who .. ': idx_path must be a path (a string), got ' .. type(idx_path), 3)
    end
    opts = opts or {}
    local key_type = opts.key_type or 'number'
    if key_type ~= 'number' and key_type ~= 'string' then
      error(who .. ": key_type must be 'number' or 'string', got " .. tostring(key_type), 3)
    end
    local self = setmetatable({ idx_path = idx_path, key_type = key_type }, MXIndexedRecordIO)
    if type(uri) ~= 'string' then
      error(who .. ': uri must be a path (a string), got ' .. type(uri), 3)
    end
    check_flag(flag, who)
    self.uri, self.flag, self.who = uri, flag, who
    self:open()
    return self
  end

  function MXIndexedRecordIO:open()
    MXRecordIO.open(self)
    self.idx, self.keys, self.index_lines = {}, {}, {}
    if not self.writable then load_index(self) end
  end

  -- close(): a writer writes the .rec, then the .idx (each whole, or not at all).
  function MXIndexedRecordIO:close()
    if not self.is_open then return end
    local writable = self.writable
    MXRecordIO.close(self)
    if writable then
      io_c.write_file(self.idx_path, table.concat(self.index_lines), self.who)
    end
  end

  -- seek(key): the next read() returns the record of `key`.
  function MXIndexedRecordIO:seek(key)
    check_open(self, 'seek')
    if self.writable then error(self.who .. ".seek: the file is open for writing ('w')", 2) end
    local pos = self.idx[key]
    if pos == nil then
      error(('%s.seek: no record with key %s in %s'):format(self.who, tostring(key),
        self.idx_path), 2)
    end
    self.handle:seek(pos)
  end

  function MXIndexedRecordIO:read_idx(key)
    self:seek(key)
    return self:read()
  end

  function MXIndexedRecordIO:write_idx(key, buf)
    check_open(self, 'write_idx')
    local text = key_text(key, self.who .. '.write_idx')
    local pos = self:tell()
    self:write(buf)
    self.index_lines[#self.index_lines + 1] = ('%s\t%d\n'):format(text, pos)
    self.idx[key] = pos
    self.keys[#self.keys + 1] = key
  end

  MXIndexedRecordIO.__tostring = function(self)
    return ("MXIndexedRecordIO('%s', '%s', '%s')%s"):format(self.idx_path, self.uri, self.flag,
      self.is_open and '' or ' (closed)')
  end

  M.MXIndexedRecordIO = kwargs.wrap(new_indexed, 'MXIndexedRecordIO',
    { 'idx_path', 'uri', 'flag' }, 4)

  -- ---- the image record header -----------------------------------------------

  -- IRHeader(flag, label, id, id2): MXNet's header tuple, as a table that
  -- also reads h[1] .. h[4].
  local IRHeader = {}
  local fields = { 'flag', 'label', 'id', 'id2' }
  IRHeader.__index = function(h, k)
    if type(k) == 'number' then return rawget(h, fields[k]) end
    return nil
  end
  IRHeader.__tostring = function(h)
    local label = h.label
    if type(label) == 'table' then label = '{' .. table.concat(label, ', ') .. '}' end
    return ('IRHeader(flag=%s, label=%s, id=%s, id2=%s)'):format(tostring(h.flag),
      tostring(label), tostring(h.id), tostring(h.id2))
  end
  local function ir_header(flag, label, id, id2)
    return setmetatable({ flag = flag or 0, label = label or 0, id = id or 0, id2 = id2 or 0 },
      IRHeader)
  end
  M.IRHeader = kwargs.wrap(ir_header, 'IRHeader', fields)

  local function as_header(h, who)
    if type(h) ~= 'table' then error(who .. ': header must be an IRHeader or a table', 3) end
    if getmetatable(h) == IRHeader then return h end
    if h.flag ~= nil or h.label ~= nil or h.id ~= nil or h.id2 ~= nil then
      return ir_header(h.flag, h.label, h.id, h.id2)
    end
    return ir_header(h[1], h[2], h[3], h[4])
  end

  -- A label vector as a list of numbers (a table or an NDArray).
  local function label_list(label, who)
    if type(label) == 'userdata' and type(label.totable) == 'function' then
      label = label:reshape({ -1 }):totable()  -- an NDArray
    end
    if type(label) == 'table' then
      for i, v in ipairs(label) do
        if type(v) ~= 'number' then
          error(('%s: label[%d] is a %s, not a number'):format(who, i, type(v)), 4)
        end
      end
      return label
    end
    error(who .. ': label must be a number, a list of numbers or an NDArray, got ' .. type(label), 4)
  end

  -- pack(header, s) -> the record: the header, a label vector after it as
  -- float32 values (flag = their count, label = 0), then s. A number label
  -- is stored in the header (flag = 0).
  M.pack = function(header, s)
    local h = as_header(header, 'pack')
    s = s or ''
    if type(s) ~= 'string' then error('pack: s must be a string of bytes, got ' .. type(s), 2) end
    if type(h.label) == 'number' then
      return io_c.pack_header(0, h.label, h.id, h.id2) .. s
    end
    local labels = label_list(h.label, 'pack')
    local n = #labels
    local buf = ffi.new('float[?]', math.max(n, 1))
    for i = 1, n do buf[i - 1] = labels[i] end
    return io_c.pack_header(n, 0, h.id, h.id2) .. ffi.string(buf, 4 * n) .. s
  end

  -- unpack(s) -> header, payload. A header with flag > 0 gets its label
  -- vector (a list of flag numbers) from the bytes after it.
  M.unpack = function(s)
    if type(s) ~= 'string' then error('unpack: s must be a string of bytes, got ' .. type(s), 2) end
    local flag, label, id, id2 = io_c.unpack_header(s)
    local at = 24
    if flag > 0 then
      if #s < at + 4 * flag then
        error(('unpack: a record of %d bytes is shorter than its header (24 bytes) and the %d '
          .. 'labels it declares'):format(#s, flag), 2)
      end
      local p = ffi.cast('const float*', ffi.cast('const char*', s) + at)
      label = {}
      for i = 1, flag do label[i] = tonumber(p[i - 1]) end
      at = at + 4 * flag
    end
    return ir_header(flag, label, id, id2), s:sub(at + 1)
  end

  -- pack_img(header, img[, quality, img_fmt]) -> a record: the header, then
  -- img (a uint8 (h, w, 3) RGB or gray NDArray) encoded as JPEG or PNG.
  M.pack_img = function(header, img, quality, img_fmt)
    local bytes = io_c.encode_image(img, img_fmt or '.jpg', quality or 95, 'pack_img')
    return M.pack(header, bytes)
  end

  -- unpack_img(s[, iscolor]) -> header, the decoded image (RGB; iscolor 0
  -- gray, 1 or -1 (the default) color).
  M.unpack_img = function(s, iscolor)
    local header, bytes = M.unpack(s)
    iscolor = iscolor == nil and -1 or iscolor
    if iscolor ~= -1 and iscolor ~= 0 and iscolor ~= 1 then
      error('unpack_img: iscolor must be -1, 0 or 1, got ' .. tostring(iscolor), 2)
    end
    return header, io_c.decode_image(bytes, iscolor == 0 and 1 or 3, true, 'unpack_img')
  end

  help.doc(M, [[
mx.recordio: MXNet's RecordIO record files, byte for byte.
  MXRecordIO(uri, flag)                 flag 'r' or 'w'; :read() (nil at the end),
                                        :write(s), :tell(), :reset(), :close()
  MXIndexedRecordIO(idx_path, uri, flag[, {key_type = 'number'|'string'}])
                                        adds :read_idx(key), :write_idx(key, s),
                                        :seek(key), .keys
  IRHeader(flag, label, id, id2)        the image record header
  pack(header, s), unpack(s)            header + payload <-> a record
  pack_img(header, img[, quality, img_fmt]), unpack_img(s[, iscolor])
                                        the same with an image (JPEG or PNG)
A writer's file (and index) appear whole at close(); a reader checks every
record's framing and names the file and offset of a bad one.]])
  help.doc(M.MXRecordIO, [[
mx.recordio.MXRecordIO(uri, flag) -> a record file open for reading ('r') or
writing ('w'). :read() returns the next record (a string) or nil at the end;
:write(s) appends one; :tell() is the offset of the next record; :reset()
goes back to the first; :close() ends a writer's file, which replaces `uri`
only then (an unclosed writer leaves no file).]])
  help.doc(M.MXIndexedRecordIO, [[
mx.recordio.MXIndexedRecordIO(idx_path, uri, flag[, {key_type = 'number'}])
-> a record file with an index (MXNet's .idx: a "key<TAB>offset" line per
record). :write_idx(key, s) appends and indexes a record; :read_idx(key) and
:seek(key) find one; .keys lists the keys in file order. Keys are numbers
(key_type 'number', the default) or strings.]])
  help.doc(M.pack, [[
mx.recordio.pack(header, s) -> a record: MXNet's 24-byte image record header
(flag, label, id, id2), then s. A label vector (a list or an NDArray) is
stored after the header as float32 values, with flag its length.]])
  help.doc(M.unpack, [[
mx.recordio.unpack(s) -> header, payload: the header's label is a number, or
(flag > 0) a list of flag numbers.]])
  help.doc(M.pack_img, [[
mx.recordio.pack_img(header, img[, quality = 95, img_fmt = '.jpg']) -> a
record: the header, then img (a uint8 (h, w, 3) RGB or gray NDArray) as JPEG
or PNG ('.png').]])
  help.doc(M.unpack_img, [[
mx.recordio.unpack_img(s[, iscolor = -1]) -> header, image: the image as a
uint8 NDArray (h, w, 3) in RGB order (MXNet's, decoded by OpenCV, is BGR);
iscolor = 0 gives (h, w, 1) gray.]])
  help.doc(M.IRHeader, 'mx.recordio.IRHeader(flag, label, id, id2) -> a header for pack')
  return M
end
