-- mx.image and the image records of mx.recordio: PNG round trips exactly,
-- JPEG closely, gray and BGR, files, pack_img / unpack_img, and clear errors
-- for corrupt data and wrong arguments.

local function pattern(h, w)
  local rows = {}
  for y = 1, h do
    local row = {}
    for x = 1, w do row[x] = {(y * 20 + x) % 256, (x * 30) % 256, (y * x) % 256} end
    rows[y] = row
  end
  return mx.nd.array(rows, {dtype = 'uint8'})
end

test('PNG round trips exactly; gray and BGR as MXNet gives them', function()
  local img = pattern(5, 7)
  local png = mx.image.imencode(img, {img_fmt = '.png'})
  assert_eq(png:sub(2, 4), 'PNG')
  local back = mx.image.imdecode(png)
  assert_eq(back.shape, {5, 7, 3})
  assert_eq(back.dtype, 'uint8')
  assert_eq(back:totable(), img:totable())
  local bgr = mx.image.imdecode{buf = png, to_rgb = false}
  assert_eq(bgr:totable()[2][3], {img:totable()[2][3][3], img:totable()[2][3][2],
    img:totable()[2][3][1]})
  local gray = mx.image.imdecode(png, {flag = 0})
  assert_eq(gray.shape, {5, 7, 1})
  local p = img:totable()[4][6]
  local want = math.floor((299 * p[1] + 587 * p[2] + 114 * p[3] + 500) / 1000)
  assert_eq(gray:totable()[4][6][1], want)
  -- Bytes as a uint8 NDArray, as MXNet's imdecode takes them.
  local codes = {}
  for i = 1, #png do codes[i] = png:byte(i) end
  assert_eq(mx.image.imdecode(mx.nd.array(codes, {dtype = 'uint8'})):totable(), img:totable())
end)

test('JPEG: close to the original; imread reads files', function()
  local rows = {}
  for y = 1, 16 do
    rows[y] = {}
    for x = 1, 16 do rows[y][x] = {y * 4 + x, 100 + x, 200 - y} end
  end
  local img = mx.nd.array(rows, {dtype = 'uint8'})
  local jpg = mx.image.imencode(img, {quality = 100})
  assert_eq(jpg:byte(1), 255)
  local path = os.tmpname()
  local f = assert(io.open(path, 'wb'))
  f:write(jpg)
  f:close()
  local back = mx.image.imread(path)
  assert_eq(back.shape, {16, 16, 3})
  local diff = (back:astype('float32') - img:astype('float32')):abs():mean():asscalar()
  assert(diff < 4, 'mean difference ' .. diff)
  os.remove(path)
  assert_error(function() mx.image.imread(path) end, 'no such file')
end)

test('pack_img and unpack_img: a header and an encoded image', function()
  local img = pattern(6, 4)
  local h = mx.recordio.IRHeader(0, 5, 11, 0)
  local s = mx.recordio.pack_img(h, img, 95, '.png')
  local hh, back = mx.recordio.unpack_img(s)
  assert_eq({hh.label, hh.id}, {5, 11})
  assert_eq(back:totable(), img:totable())
  local _, gray = mx.recordio.unpack_img(s, 0)
  assert_eq(gray.shape, {6, 4, 1})
  local path = os.tmpname()
  local w = mx.recordio.MXRecordIO(path, 'w')
  w:write(mx.recordio.pack_img(h, img))  -- JPEG by default
  w:close()
  local r = mx.recordio.MXRecordIO(path, 'r')
  local _, jimg = mx.recordio.unpack_img(r:read())
  assert_eq(jimg.shape, {6, 4, 3})
  os.remove(path)
end)

test('corrupt images and wrong arguments are clear errors', function()
  local png = mx.image.imencode(pattern(8, 8), {img_fmt = '.png'})
  local jpg = mx.image.imencode(pattern(64, 64))  -- cut in its scan data
  assert_error(function() mx.image.imdecode(jpg:sub(1, math.floor(#jpg * 0.75))) end,
    'corrupt or truncated JPEG')
  assert_error(function() mx.image.imdecode(png:sub(1, #png - 16)) end, 'PNG')
  assert_error(function() mx.image.imdecode('hello') end, 'not a JPEG or PNG image')
  assert_error(function() mx.image.imdecode(png, {flag = 2}) end, 'flag must be 1')
  assert_error(function() mx.image.imencode(mx.nd.ones({2, 2, 3})) end,
    'must be uint8 of shape')
  assert_error(function() mx.image.imencode(pattern(2, 2), {img_fmt = '.gif'}) end,
    "img_fmt must be '.jpg' or '.png'")
  assert_error(function() mx.image.imencode(pattern(2, 2), {quality = 0}) end,
    'quality must be 1%-100')
  assert_error(function() mx.recordio.unpack_img(mx.recordio.pack({}, 'junk')) end,
    'unpack_img: not a JPEG or PNG')
  assert_error(function() mx.recordio.unpack_img(mx.recordio.pack({}, png), 2) end,
    'iscolor must be')
end)
