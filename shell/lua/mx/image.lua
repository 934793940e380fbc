-- mx.image: images as MXNet's module has them, decoded by libjpeg-turbo and
-- libpng (engine/io/image_codec.h): uint8 NDArrays of shape
-- (height, width, channels), RGB by default.
--   local img = mx.image.imread('cat.jpg')          -- (h, w, 3) uint8, RGB
--   local gray = mx.image.imdecode(bytes, {flag = 0})  -- (h, w, 1)
local help = require 'tessera.help'
local kwargs = require 'tessera.kwargs'

return function(mx)
  local io_c = require 'tessera.io'
  local M = {}

  local function channels_of(flag, who)
    if flag == nil or flag == 1 then return 3 end
    if flag == 0 then return 1 end
    error(('%s: flag must be 1 (color) or 0 (grayscale), got %s'):format(who, tostring(flag)), 3)
  end

  -- The bytes of `buf`: a string, or a 1-D uint8 NDArray (as MXNet takes).
  local function bytes_of(buf, who)
    if type(buf) == 'string' then return buf end
    if type(buf) == 'userdata' and type(buf.totable) == 'function' then
      if buf.dtype ~= 'uint8' then
        error(who .. ': buf must be a string or a uint8 NDArray, got ' .. buf.dtype, 3)
      end
      local t = buf:reshape({ -1 }):totable()
      local parts = {}
      for i = 1, #t, 4096 do
        parts[#parts + 1] = string.char(unpack(t, i, math.min(#t, i + 4095)))
      end
      return table.concat(parts)
    end
    error(who .. ': buf must be a string of bytes or a uint8 NDArray, got ' .. type(buf), 3)
  end

  local function imdecode(buf, opts)
    opts = opts or {}
    local to_rgb = opts.to_rgb
    if to_rgb == nil then to_rgb = true end
    local img = io_c.decode_image(bytes_of(buf, 'imdecode'), channels_of(opts.flag, 'imdecode'),
      to_rgb and true or false, 'imdecode')
    if opts.out then return img:copyto(opts.out) end
    return img
  end
  M.imdecode = kwargs.wrap(imdecode, 'imdecode', { 'buf' }, 2)

  local function imread(filename, opts)
    opts = opts or {}
    if type(filename) ~= 'string' then
      error('imread: filename must be a path (a string), got ' .. type(filename), 2)
    end
    if not io_c.check_file(filename, 'imread') then
      error('imread: ' .. filename .. ': no such file', 2)
    end
    local f = assert(io.open(filename, 'rb'))
    local bytes = f:read('*a')
    f:close()
    local to_rgb = opts.to_rgb
    if to_rgb == nil then to_rgb = true end
    return io_c.decode_image(bytes, channels_of(opts.flag, 'imread'), to_rgb and true or false,
      'imread: ' .. filename)
  end
  M.imread = kwargs.wrap(imread, 'imread', { 'filename' }, 2)

  -- imencode(img[, {img_fmt = '.jpg', quality = 95}]) -> the encoded bytes.
  local function imencode(img, opts)
    opts = opts or {}
    return io_c.encode_image(img, opts.img_fmt or '.jpg', opts.quality or 95, 'imencode')
  end
  M.imencode = kwargs.wrap(imencode, 'imencode', { 'img' }, 2)

  help.doc(M, [[
mx.image: images as uint8 NDArrays of shape (height, width, channels), RGB.
  imread(filename[, {flag = 1, to_rgb = true}])   read and decode a JPEG or PNG
  imdecode(buf[, {flag = 1, to_rgb = true}])      decode bytes (a string or uint8 NDArray)
  imencode(img[, {img_fmt = '.jpg', quality = 95}])  encode to JPEG or PNG bytes
flag 0 decodes to grayscale (h, w, 1); to_rgb = false gives BGR, OpenCV's order.
Resizing, crops and augmenters are not built yet.]])
  help.doc(M.imdecode, [[
mx.image.imdecode(buf[, {flag = 1, to_rgb = true, out = nil}]) -> a uint8
NDArray (height, width, 3) of the JPEG or PNG in `buf` (flag = 0: gray,
(height, width, 1)). Alpha is dropped. A corrupt or truncated image is an
error saying what the decoder found.]])
  help.doc(M.imread, 'mx.image.imread(filename[, {flag = 1, to_rgb = true}]) -> imdecode of the file')
  help.doc(M.imencode, [[
mx.image.imencode(img[, {img_fmt = '.jpg', quality = 95}]) -> the bytes of
img (uint8, (h, w, 3) RGB or (h, w, 1) / (h, w) gray) as JPEG or PNG.]])
  return M
end
