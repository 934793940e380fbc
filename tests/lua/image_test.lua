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

test('imresize, resize_short and crops, as MXNet', function()
  local src = mx.nd.array({{{0}, {4}, {8}, {12}}, {{8}, {12}, {16}, {20}},
    {{100}, {100}, {40}, {40}}, {{100}, {100}, {40}, {40}}}, {dtype = 'uint8'})
  local small = mx.image.imresize(src, 2, 2, {interp = 3})  -- area: block means
  assert_eq(small:totable(), {{{6}, {14}}, {{100}, {40}}})
  assert_eq(mx.image.imresize{src = src, w = 8, h = 2}.shape, {2, 8, 1})
  local img = mx.nd.zeros({40, 60, 3}, {dtype = 'uint8'})
  assert_eq(mx.image.resize_short(img, 20).shape, {20, 30, 3})
  assert_eq(mx.image.resize_short(mx.nd.zeros({60, 40, 3}, {dtype = 'uint8'}), 20).shape,
    {30, 20, 3})
  -- fixed_crop: 0-based pixel offsets, as MXNet's.
  local crop = mx.image.fixed_crop(src, 1, 2, 2, 2)
  assert_eq(crop:totable(), {{{100}, {40}}, {{100}, {40}}})
  assert_eq(mx.image.fixed_crop(src, 0, 0, 2, 2, {size = {1, 1}, interp = 3}):totable(), {{{6}}})
  -- center_crop of 60x40 to 30x30: x0 = 15, y0 = 5.
  local out, rect = mx.image.center_crop(img, {30, 30})
  assert_eq(out.shape, {30, 30, 3})
  assert_eq(rect, {15, 5, 30, 30})
  -- A size larger than the image is scaled down to fit, then resized up.
  local big, brect = mx.image.center_crop(img, {120, 40})
  assert_eq({big.shape, brect}, {{40, 120, 3}, {0, 10, 60, 20}})  -- y0 = (40 - 20) / 2
  for _ = 1, 20 do
    local _, r = mx.image.random_crop(img, {25, 10})
    assert(r[1] >= 0 and r[1] <= 35 and r[2] >= 0 and r[2] <= 30, 'rect out of bounds')
    assert_eq({r[3], r[4]}, {25, 10})
  end
  local norm = mx.image.color_normalize(mx.nd.array({{{10, 20, 30}}}, {dtype = 'uint8'}),
    {1, 2, 3}, {3, 3, 3})
  assert_eq(norm.dtype, 'float32')
  assert_eq(norm:totable(), {{{3, 6, 9}}})
  assert_error(function() mx.image.fixed_crop(src, 3, 3, 2, 2) end, 'leaves the 4x4 image')
  assert_error(function() mx.image.imresize(src, 0, 2) end, 'w must be a whole number')
  assert_error(function() mx.image.imresize(src, 2, 2, {interp = 7}) end, 'interp must be 0')
  assert_error(function() mx.image.imresize(mx.nd.ones({2, 2, 3}), 1, 1) end, 'must be uint8')
end)

test('augmenters: MXNet formulas, CreateAugmenter order, random_size_crop', function()
  math.randomseed(7)
  local img = mx.nd.array({{{10, 20, 30}, {40, 50, 60}}, {{70, 80, 90}, {100, 110, 120}}})
  local t = img:totable()
  assert_eq(mx.image.HorizontalFlipAug(1)(img):totable(), {{t[1][2], t[1][1]}, {t[2][2], t[2][1]}})
  assert_eq(mx.image.HorizontalFlipAug(0)(img):totable(), t)
  -- Brightness: one factor in [0.9, 1.1] for every element.
  local b = mx.image.BrightnessJitterAug(0.1)(img):totable()
  local alpha = b[1][1][1] / 10
  assert(alpha >= 0.9 and alpha <= 1.1, 'brightness factor ' .. alpha)
  assert(math.abs(b[2][2][3] - 120 * alpha) < 1e-3)
  -- Contrast: alpha * src + 3 (1 - alpha) / n * sum(src .* (0.299, 0.587, 0.114)).
  local c = mx.image.ContrastJitterAug(0.2)(img):totable()
  local ca = (c[2][2][3] - c[1][1][1]) / (120 - 10)
  local gray = 0
  for y = 1, 2 do for x = 1, 2 do
    gray = gray + 0.299 * t[y][x][1] + 0.587 * t[y][x][2] + 0.114 * t[y][x][3]
  end end
  assert(ca >= 0.8 and ca <= 1.2, 'contrast factor ' .. ca)
  assert(math.abs(c[1][2][2] - (ca * 50 + 3 * (1 - ca) / 12 * gray)) < 1e-2)
  -- Saturation: alpha * src + (1 - alpha) * the pixel's gray.
  local s = mx.image.SaturationJitterAug(0.3)(img):totable()
  local g11 = 0.299 * 10 + 0.587 * 20 + 0.114 * 30
  local sa = (s[1][1][3] - s[1][1][1]) / (30 - 10)
  assert(math.abs(s[1][1][2] - (sa * 20 + (1 - sa) * g11)) < 1e-3)
  -- Lighting with zero eigenvalues, and a zero alphastd, changes nothing.
  local eigvec = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}}
  assert_eq(mx.image.LightingAug(0.1, {0, 0, 0}, eigvec)(img):totable(), t)
  assert_eq(mx.image.LightingAug(0, {1, 1, 1}, eigvec)(img):totable(), t)
  local g = mx.image.RandomGrayAug(1)(img):totable()
  assert(math.abs(g[1][1][1] - (0.21 * 10 + 0.72 * 20 + 0.07 * 30)) < 1e-4)
  assert_eq(mx.image.CastAug()(mx.nd.ones({1, 1, 3}, {dtype = 'uint8'})).dtype, 'float32')
  -- Hue turns the chroma in YIQ space: the luma stays; hue 0 changes next to nothing.
  local function luma(p) return 0.299 * p[1] + 0.587 * p[2] + 0.114 * p[3] end
  local hj = mx.image.HueJitterAug(0.5)(img):totable()
  for y = 1, 2 do for x = 1, 2 do
    assert(math.abs(luma(hj[y][x]) - luma(t[y][x])) < 0.5, 'hue changed the luma')
  end end
  local h0 = mx.image.HueJitterAug(0)(img):totable()
  assert(math.abs(h0[2][1][3] - t[2][1][3]) < 1, 'hue 0 moved a value')
  assert_eq(mx.image.HorizontalFlipAug(0.5):dumps(), '["horizontalflipaug", {"p": 0.5}]')
  local names = {}
  for i, a in ipairs(mx.image.CreateAugmenter{data_shape = {3, 8, 8}, resize = 10,
      rand_crop = true, rand_resize = true, rand_mirror = true, brightness = 0.1,
      hue = 0.1, pca_noise = 0.1, mean = true, std = true}) do
    names[i] = a.name
  end
  assert_eq(names, {'ResizeAug', 'RandomSizedCropAug', 'HorizontalFlipAug', 'CastAug',
    'ColorJitterAug', 'HueJitterAug', 'LightingAug', 'ColorNormalizeAug'})
  local u8 = mx.nd.zeros({40, 60, 3}, {dtype = 'uint8'})
  for _ = 1, 20 do
    local out, r = mx.image.random_size_crop(u8, {10, 12}, 0.08, {3 / 4, 4 / 3})
    assert_eq(out.shape, {12, 10, 3})
    assert(r[1] + r[3] <= 60 and r[2] + r[4] <= 40, 'crop leaves the image')
    assert(r[3] * r[4] >= 0.05 * 2400, 'area ' .. r[3] * r[4])
  end
  assert_error(function() mx.image.CreateAugmenter{data_shape = {3, 8, 8}, rand_resize = true} end,
    'rand_resize needs rand_crop')
end)

test('ImageIter over records, a .lst and a list: batches as MXNet makes them', function()
  local function img(k)  -- 6x8 RGB, values from k
    local rows = {}
    for y = 1, 6 do
      rows[y] = {}
      for x = 1, 8 do rows[y][x] = {k * 10 + y, x, k} end
    end
    return mx.nd.array(rows, {dtype = 'uint8'})
  end
  local rec, idx = os.tmpname(), os.tmpname()
  local w = mx.recordio.MXIndexedRecordIO(idx, rec, 'w')
  for k = 0, 3 do w:write_idx(k, mx.recordio.pack_img(mx.recordio.IRHeader(0, k, k, 0), img(k), 95, '.png')) end
  w:close()
  local it = mx.image.ImageIter{batch_size = 3, data_shape = {3, 4, 4}, path_imgrec = rec,
    path_imgidx = idx}
  assert_eq(it.provide_data[1].shape, {3, 3, 4, 4})
  local batches = {}
  for b in it:batches() do batches[#batches + 1] = b end
  assert_eq(#batches, 2)
  assert_eq(batches[1].label[1]:totable(), {0, 1, 2})
  assert_eq(batches[2].pad, 2)
  -- Center crop 4x4 of 6x8: x0 = 2, y0 = 1; then HWC -> CHW.
  local d = batches[1].data[1]:totable()
  assert_eq(d[2][1][1][1], 10 + 2)      -- image 1, R at crop (0, 0) = row y0 + 1
  assert_eq(d[2][2][1], {3, 4, 5, 6})   -- G = x + 1 over the crop's columns
  assert_eq(d[3][3][4][4], 2)           -- image 2, B
  -- Sequential records (no index), discard the last partial batch.
  local seq = mx.image.ImageIter{batch_size = 3, data_shape = {3, 4, 4}, path_imgrec = rec,
    last_batch_handle = 'discard'}
  local n = 0
  for _ in seq:batches() do n = n + 1 end
  assert_eq(n, 1)
  -- A .lst beside image files.
  local dir = os.tmpname()
  os.remove(dir)
  os.execute('mkdir -p ' .. dir)
  local lst = assert(io.open(dir .. '/list.lst', 'w'))
  for k = 0, 1 do
    local f = assert(io.open(('%s/%d.png'):format(dir, k), 'wb'))
    f:write(mx.image.imencode(img(k), {img_fmt = '.png'}))
    f:close()
    lst:write(('%d\t%d\t%d.png\n'):format(k, 5 + k, k))
  end
  lst:close()
  local li = mx.image.ImageIter{batch_size = 2, data_shape = {3, 4, 4},
    path_imglist = dir .. '/list.lst', path_root = dir}
  local b = li:next()
  assert_eq(b.label[1]:totable(), {5, 6})
  local l2 = mx.image.ImageIter{batch_size = 2, data_shape = {3, 4, 4}, path_root = dir,
    imglist = {{7, '1.png'}, {8, '0.png'}}}
  assert_eq(l2:next().label[1]:totable(), {7, 8})
  assert_error(function() mx.image.ImageIter{batch_size = 2, data_shape = {3, 9, 9},
    path_imgrec = rec, aug_list = {}}:next() end, 'data_shape needs')
  os.execute('rm -rf ' .. dir)
  os.remove(rec)
  os.remove(idx)
end)
