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

  -- ---- resizing and crops (MXNet's mx.image) ----
  -- Pixel coordinates (x0, y0) are 0-based offsets from the top-left
  -- corner, as in MXNet and Torch7's image package; sizes are {width, height}.

  local function check_int(v, who, what, lo)
    if type(v) ~= 'number' or v ~= math.floor(v) or v < (lo or 0) or v > 65535 then
      error(('%s: %s must be a whole number from %d to 65535, got %s'):format(who, what, lo or 0,
        tostring(v)), 4)
    end
    return v
  end

  -- MXNet's interpolation codes: OpenCV's 0-4, 9 (by the sizes: bicubic to
  -- enlarge, area to shrink, else bilinear) and 10 (one of 0-4 at random).
  local function interp_method(interp, h, w, new_h, new_w)
    if interp == 9 then
      if new_w > w and new_h > h then return 2 end
      if new_w < w and new_h < h then return 3 end
      return 1
    elseif interp == 10 then
      return math.random(0, 4)
    end
    return interp
  end

  local function image_hw(src, who)
    if type(src) ~= 'userdata' or type(src.shape) ~= 'table' then
      error(who .. ': src must be an NDArray image (height, width, channels)', 3)
    end
    local shape = src.shape
    if #shape ~= 3 then
      error(('%s: src must have shape (height, width, channels), got (%s)'):format(who,
        table.concat(shape, ',')), 3)
    end
    return shape[1], shape[2], shape[3]
  end

  local function imresize(src, w, h, opts)
    opts = opts or {}
    local sh, sw = image_hw(src, 'imresize')
    check_int(w, 'imresize', 'w', 1)
    check_int(h, 'imresize', 'h', 1)
    local interp = interp_method(opts.interp or 1, sh, sw, h, w)
    return io_c.resize_image(src, w, h, interp, 'imresize')
  end
  M.imresize = kwargs.wrap(imresize, 'imresize', { 'src', 'w', 'h' }, 4)

  -- resize_short(src, size[, {interp = 2}]): the shorter side becomes `size`.
  local function resize_short(src, size, opts)
    opts = opts or {}
    local h, w = image_hw(src, 'resize_short')
    check_int(size, 'resize_short', 'size', 1)
    local new_h, new_w
    if h > w then
      new_h, new_w = math.floor(size * h / w), size
    else
      new_h, new_w = size, math.floor(size * w / h)
    end
    return io_c.resize_image(src, new_w, new_h, interp_method(opts.interp or 2, h, w, new_h, new_w),
      'resize_short')
  end
  M.resize_short = kwargs.wrap(resize_short, 'resize_short', { 'src', 'size' }, 3)

  -- fixed_crop(src, x0, y0, w, h[, {size = {w, h}, interp = 2}]): the
  -- rectangle at (x0, y0), resized to `size` when one is given.
  local function fixed_crop(src, x0, y0, w, h, opts)
    opts = opts or {}
    local sh, sw, c = image_hw(src, 'fixed_crop')
    check_int(x0, 'fixed_crop', 'x0')
    check_int(y0, 'fixed_crop', 'y0')
    check_int(w, 'fixed_crop', 'w', 1)
    check_int(h, 'fixed_crop', 'h', 1)
    if x0 + w > sw or y0 + h > sh then
      error(('fixed_crop: the rectangle x0=%d y0=%d w=%d h=%d leaves the %dx%d image'):format(x0,
        y0, w, h, sw, sh), 3)
    end
    local out = mx.nd.slice(src, { begin = { y0, x0, 0 }, ['end'] = { y0 + h, x0 + w, c } })
    local size = opts.size
    if size and (size[1] ~= w or size[2] ~= h) then
      out = io_c.resize_image(out, size[1], size[2],
        interp_method(opts.interp or 2, h, w, size[2], size[1]), 'fixed_crop')
    end
    return out
  end
  M.fixed_crop = kwargs.wrap(fixed_crop, 'fixed_crop', { 'src', 'x0', 'y0', 'w', 'h' }, 6)

  -- scale_down(src_size, size) -> w, h: `size` ({w, h}) scaled down to fit
  -- in `src_size` ({w, h}), keeping its aspect ratio.
  function M.scale_down(src_size, size)
    local w, h = size[1], size[2]
    local sw, sh = src_size[1], src_size[2]
    if sh < h then w, h = w * sh / h, sh end
    if sw < w then w, h = sw, h * sw / w end
    return math.floor(w), math.floor(h)
  end

  local function crop_at(src, size, opts, who, pick)
    opts = opts or {}
    local h, w = image_hw(src, who)
    if type(size) ~= 'table' or #size ~= 2 then
      error(who .. ': size must be {width, height}', 3)
    end
    local new_w, new_h = M.scale_down({ w, h }, size)
    local x0, y0 = pick(w - new_w, h - new_h)
    local out = fixed_crop(src, x0, y0, new_w, new_h, { size = size, interp = opts.interp })
    return out, { x0, y0, new_w, new_h }
  end

  -- center_crop(src, size[, {interp = 2}]) -> out, {x0, y0, w, h}
  M.center_crop = kwargs.wrap(function(src, size, opts)
    return crop_at(src, size, opts, 'center_crop', function(dx, dy)
      return math.floor(dx / 2), math.floor(dy / 2)
    end)
  end, 'center_crop', { 'src', 'size' }, 3)

  -- random_crop(src, size[, {interp = 2}]) -> out, {x0, y0, w, h}
  M.random_crop = kwargs.wrap(function(src, size, opts)
    return crop_at(src, size, opts, 'random_crop', function(dx, dy)
      return math.random(0, dx), math.random(0, dy)
    end)
  end, 'random_crop', { 'src', 'size' }, 3)

  -- color_normalize(src, mean[, std]) -> (src - mean) / std, in float32.
  function M.color_normalize(src, mean, std)
    local out = src.dtype == 'uint8' and src:astype('float32') or src
    local function as_array(v)
      if type(v) == 'table' then return mx.nd.array(v) end
      return v
    end
    out = out - as_array(mean)
    if std ~= nil then out = out / as_array(std) end
    return out
  end

  -- random_size_crop(src, size, area, ratio[, {interp = 2}]) -> out, rect:
  -- a crop of a random area (a fraction of the image, or {lo, hi}) and
  -- aspect ratio ({lo, hi}, drawn log-uniformly), resized to `size`; after
  -- ten misses, center_crop. MXNet's.
  local function random_size_crop(src, size, area, ratio, opts)
    opts = opts or {}
    local h, w = image_hw(src, 'random_size_crop')
    if type(area) == 'number' then area = { area, 1.0 } end
    local src_area = h * w
    for _ = 1, 10 do
      local target = (area[1] + math.random() * (area[2] - area[1])) * src_area
      local lo, hi = math.log(ratio[1]), math.log(ratio[2])
      local r = math.exp(lo + math.random() * (hi - lo))
      local new_w = math.floor(math.sqrt(target * r) + 0.5)
      local new_h = math.floor(math.sqrt(target / r) + 0.5)
      if new_w >= 1 and new_h >= 1 and new_w <= w and new_h <= h then
        local x0, y0 = math.random(0, w - new_w), math.random(0, h - new_h)
        return fixed_crop(src, x0, y0, new_w, new_h, { size = size, interp = opts.interp }),
          { x0, y0, new_w, new_h }
      end
    end
    return M.center_crop(src, size, opts)
  end
  M.random_size_crop = kwargs.wrap(random_size_crop, 'random_size_crop',
    { 'src', 'size', 'area', 'ratio' }, 5)

  -- ---- augmenters (MXNet's): aug(src) -> the augmented image ----

  local Augmenter = {}
  Augmenter.__index = Augmenter
  Augmenter.__call = function(self, src) return self.fn(src) end
  Augmenter.__tostring = function(self) return self:dumps() end

  local function json_value(v)
    if type(v) == 'table' then
      local parts = {}
      for i, x in ipairs(v) do parts[i] = json_value(x) end
      return '[' .. table.concat(parts, ', ') .. ']'
    elseif type(v) == 'string' then
      return ('%q'):format(v)
    elseif type(v) == 'userdata' and type(v.totable) == 'function' then
      return json_value(v:totable())
    end
    return tostring(v)
  end

  -- dumps() -> '["name", {"arg": value, ...}]', as MXNet's.
  function Augmenter:dumps()
    local keys = {}
    for k in pairs(self.kwargs) do keys[#keys + 1] = k end
    table.sort(keys)
    local parts = {}
    for i, k in ipairs(keys) do parts[i] = ('"%s": %s'):format(k, json_value(self.kwargs[k])) end
    return ('["%s", {%s}]'):format(self.name:lower(), table.concat(parts, ', '))
  end

  local function augmenter(name, kwargs_, fn)
    return setmetatable({ name = name, kwargs = kwargs_, fn = fn }, Augmenter)
  end
  M.Augmenter = Augmenter

  local function uniform(lo, hi) return lo + math.random() * (hi - lo) end
  local function normal(mean, sd)  -- Box-Muller
    local u = 1 - math.random()
    return mean + sd * math.sqrt(-2 * math.log(u)) * math.cos(2 * math.pi * math.random())
  end
  local gray_coef = { 0.299, 0.587, 0.114 }

  M.ResizeAug = function(size, interp)
    return augmenter('ResizeAug', { size = size, interp = interp or 2 }, function(src)
      return M.resize_short(src, size, { interp = interp or 2 })
    end)
  end
  M.ForceResizeAug = function(size, interp)
    return augmenter('ForceResizeAug', { size = size, interp = interp or 2 }, function(src)
      local h, w = image_hw(src, 'ForceResizeAug')
      return io_c.resize_image(src, size[1], size[2],
        interp_method(interp or 2, h, w, size[2], size[1]), 'ForceResizeAug')
    end)
  end
  M.RandomCropAug = function(size, interp)
    return augmenter('RandomCropAug', { size = size, interp = interp or 2 }, function(src)
      return (M.random_crop(src, size, { interp = interp or 2 }))
    end)
  end
  M.RandomSizedCropAug = function(size, area, ratio, interp)
    return augmenter('RandomSizedCropAug',
      { size = size, area = area, ratio = ratio, interp = interp or 2 }, function(src)
        return (random_size_crop(src, size, area, ratio, { interp = interp or 2 }))
      end)
  end
  M.CenterCropAug = function(size, interp)
    return augmenter('CenterCropAug', { size = size, interp = interp or 2 }, function(src)
      return (M.center_crop(src, size, { interp = interp or 2 }))
    end)
  end
  M.RandomOrderAug = function(ts)
    return augmenter('RandomOrderAug', { ts = ts }, function(src)
      local order = {}
      for i = 1, #ts do order[i] = ts[i] end
      for i = #order, 2, -1 do
        local j = math.random(1, i)
        order[i], order[j] = order[j], order[i]
      end
      for _, t in ipairs(order) do src = t(src) end
      return src
    end)
  end
  -- The color augmenters work on float images (after CastAug).
  M.BrightnessJitterAug = function(brightness)
    return augmenter('BrightnessJitterAug', { brightness = brightness }, function(src)
      return src * (1 + uniform(-brightness, brightness))
    end)
  end
  M.ContrastJitterAug = function(contrast)
    return augmenter('ContrastJitterAug', { contrast = contrast }, function(src)
      local alpha = 1 + uniform(-contrast, contrast)
      local gray = (src * mx.nd.array({ { gray_coef } })):sum():asscalar()
      return src * alpha + 3 * (1 - alpha) / src.size * gray
    end)
  end
  M.SaturationJitterAug = function(saturation)
    return augmenter('SaturationJitterAug', { saturation = saturation }, function(src)
      local alpha = 1 + uniform(-saturation, saturation)
      local gray = mx.nd.sum(src * mx.nd.array({ { gray_coef } }), { axis = 3, keepdims = true })
      return src * alpha + gray * (1 - alpha)
    end)
  end
  -- Hue: a rotation of the chroma plane in YIQ space by up to hue * 180
  -- degrees, as MXNet's (which keeps the luma Y).
  local tyiq = { { 0.299, 0.587, 0.114 }, { 0.596, -0.274, -0.321 }, { 0.211, -0.523, 0.311 } }
  local ityiq = { { 1.0, 0.956, 0.621 }, { 1.0, -0.272, -0.647 }, { 1.0, -1.107, 1.705 } }
  local function matmul(a, b)
    local c = {}
    for i = 1, 3 do
      c[i] = {}
      for j = 1, 3 do
        local v = 0
        for k = 1, 3 do v = v + a[i][k] * b[k][j] end
        c[i][j] = v
      end
    end
    return c
  end
  M.HueJitterAug = function(hue)
    return augmenter('HueJitterAug', { hue = hue }, function(src)
      local alpha = uniform(-hue, hue)
      local u, w = math.cos(alpha * math.pi), math.sin(alpha * math.pi)
      local t = matmul(matmul(ityiq, { { 1, 0, 0 }, { 0, u, -w }, { 0, w, u } }), tyiq)
      local tt = {}  -- pixels are rows: out = src . t^T
      for i = 1, 3 do tt[i] = { t[1][i], t[2][i], t[3][i] } end
      return mx.nd.dot(src, mx.nd.array(tt))
    end)
  end
  M.ColorJitterAug = function(brightness, contrast, saturation)
    local ts = {}
    if brightness and brightness > 0 then ts[#ts + 1] = M.BrightnessJitterAug(brightness) end
    if contrast and contrast > 0 then ts[#ts + 1] = M.ContrastJitterAug(contrast) end
    if saturation and saturation > 0 then ts[#ts + 1] = M.SaturationJitterAug(saturation) end
    local order = M.RandomOrderAug(ts)
    return augmenter('ColorJitterAug',
      { brightness = brightness or 0, contrast = contrast or 0, saturation = saturation or 0 },
      order.fn)
  end
  -- AlexNet-style PCA lighting noise: src + eigvec * (alpha .* eigval).
  M.LightingAug = function(alphastd, eigval, eigvec)
    return augmenter('LightingAug', { alphastd = alphastd, eigval = eigval, eigvec = eigvec },
      function(src)
        local rgb = {}
        for i = 1, 3 do
          rgb[i] = 0
        end
        local alpha = { normal(0, alphastd), normal(0, alphastd), normal(0, alphastd) }
        for i = 1, 3 do
          for j = 1, 3 do rgb[i] = rgb[i] + eigvec[i][j] * alpha[j] * eigval[j] end
        end
        return src + mx.nd.array({ { rgb } })
      end)
  end
  M.ColorNormalizeAug = function(mean, std)
    return augmenter('ColorNormalizeAug', { mean = mean, std = std }, function(src)
      return M.color_normalize(src, mean, std)
    end)
  end
  M.RandomGrayAug = function(p)
    local mat = mx.nd.array({ { 0.21, 0.21, 0.21 }, { 0.72, 0.72, 0.72 }, { 0.07, 0.07, 0.07 } })
    return augmenter('RandomGrayAug', { p = p }, function(src)
      if math.random() < p then return mx.nd.dot(src, mat) end
      return src
    end)
  end
  M.HorizontalFlipAug = function(p)
    return augmenter('HorizontalFlipAug', { p = p }, function(src)
      if math.random() < p then return mx.nd.flip(src, { axis = 2 }) end
      return src
    end)
  end
  M.CastAug = function(typ)
    typ = typ or 'float32'
    return augmenter('CastAug', { typ = typ }, function(src) return src:astype(typ) end)
  end

  -- CreateAugmenter{data_shape = {3, h, w}, resize =, rand_crop =,
  -- rand_resize =, rand_mirror =, mean =, std =, brightness =, contrast =, hue =,
  -- saturation =, pca_noise =, rand_gray =, inter_method = 2} -> a list of
  -- augmenters in MXNet's order (mean/std = true: ImageNet's).
  local function create_augmenter(data_shape, o)
    o = o or {}
    if type(data_shape) ~= 'table' or #data_shape ~= 3 then
      error('CreateAugmenter: data_shape must be {channels, height, width}', 3)
    end
    local interp = o.inter_method or 2
    local list = {}
    if (o.resize or 0) > 0 then list[#list + 1] = M.ResizeAug(o.resize, interp) end
    local crop = { data_shape[3], data_shape[2] }
    if o.rand_resize then
      if not o.rand_crop then error('CreateAugmenter: rand_resize needs rand_crop', 3) end
      list[#list + 1] = M.RandomSizedCropAug(crop, 0.08, { 3 / 4, 4 / 3 }, interp)
    elseif o.rand_crop then
      list[#list + 1] = M.RandomCropAug(crop, interp)
    else
      list[#list + 1] = M.CenterCropAug(crop, interp)
    end
    if o.rand_mirror then list[#list + 1] = M.HorizontalFlipAug(0.5) end
    list[#list + 1] = M.CastAug()
    if (o.brightness or 0) > 0 or (o.contrast or 0) > 0 or (o.saturation or 0) > 0 then
      list[#list + 1] = M.ColorJitterAug(o.brightness, o.contrast, o.saturation)
    end
    if (o.hue or 0) > 0 then list[#list + 1] = M.HueJitterAug(o.hue) end
    if (o.pca_noise or 0) > 0 then
      list[#list + 1] = M.LightingAug(o.pca_noise, { 55.46, 4.794, 1.148 },
        { { -0.5675, 0.7192, 0.4009 }, { -0.5808, -0.0045, -0.8140 },
          { -0.5836, -0.6948, 0.4203 } })
    end
    if (o.rand_gray or 0) > 0 then list[#list + 1] = M.RandomGrayAug(o.rand_gray) end
    local mean, std = o.mean, o.std
    if mean == true then mean = { 123.68, 116.28, 103.53 } end
    if std == true then std = { 58.395, 57.12, 57.375 } end
    if mean or std then list[#list + 1] = M.ColorNormalizeAug(mean or { 0, 0, 0 }, std) end
    return list
  end
  M.CreateAugmenter = kwargs.wrap(create_augmenter, 'CreateAugmenter', { 'data_shape' }, 2)

  -- ---- ImageIter (MXNet's mx.image.ImageIter) ----

  local ImageIter = setmetatable({}, { __index = function(_, k) return mx.io.DataIter[k] end })
  ImageIter.__index = ImageIter

  local function read_list(path, label_width, who)
    if not io_c.check_file(path, who) then error(who .. ': ' .. path .. ': no such file', 4) end
    local items, n = {}, 0
    for line in io.lines(path) do
      n = n + 1
      line = line:gsub('\r$', '')
      if line ~= '' then
        local fields = {}
        for f in (line .. '\t'):gmatch('([^\t]*)\t') do fields[#fields + 1] = f end
        if #fields < 3 then
          error(('%s: %s line %d: expected index<TAB>label(s)<TAB>path'):format(who, path, n), 4)
        end
        local label = {}
        for i = 2, #fields - 1 do
          label[#label + 1] = tonumber(fields[i]) or
            error(('%s: %s line %d: label %q is not a number'):format(who, path, n, fields[i]), 4)
        end
        if #label ~= label_width then
          error(('%s: %s line %d: %d labels, label_width is %d'):format(who, path, n, #label,
            label_width), 4)
        end
        items[#items + 1] = { key = tonumber(fields[1]) or fields[1], label = label,
          path = fields[#fields] }
      end
    end
    return items
  end

  local function image_iter(opts)
    local who = 'ImageIter'
    opts = opts or {}
    local self = setmetatable({}, ImageIter)
    self.batch_size = opts.batch_size
    if type(self.batch_size) ~= 'number' or self.batch_size < 1 then
      error(who .. ': batch_size must be a positive number', 3)
    end
    local shape = opts.data_shape
    if type(shape) ~= 'table' or #shape ~= 3 or (shape[1] ~= 1 and shape[1] ~= 3) then
      error(who .. ': data_shape must be {channels (1 or 3), height, width}', 3)
    end
    self.data_shape = shape
    self.label_width = opts.label_width or 1
    self.shuffle = opts.shuffle or false
    self.last_batch_handle = opts.last_batch_handle or 'pad'
    if self.last_batch_handle ~= 'pad' and self.last_batch_handle ~= 'discard' then
      error(who .. ": last_batch_handle must be 'pad' or 'discard'", 3)
    end
    self.dtype = opts.dtype or 'float32'
    if opts.path_imgrec then
      if opts.path_imgidx then
        self.rec = mx.recordio.MXIndexedRecordIO(opts.path_imgidx, opts.path_imgrec, 'r')
        self.seq = {}
        for i, k in ipairs(self.rec.keys) do self.seq[i] = k end
      else
        if self.shuffle then error(who .. ': shuffle needs path_imgidx with path_imgrec', 3) end
        self.rec = mx.recordio.MXRecordIO(opts.path_imgrec, 'r')
      end
    elseif opts.path_imglist then
      self.items = read_list(opts.path_imglist, self.label_width, who)
      self.root = opts.path_root or '.'
    elseif opts.imglist then
      self.items = {}
      for i, e in ipairs(opts.imglist) do
        local label = type(e[1]) == 'table' and e[1] or { e[1] }
        self.items[i] = { label = label, path = e[2] }
      end
      self.root = opts.path_root or '.'
    else
      error(who .. ': give path_imgrec, path_imglist or imglist', 3)
    end
    if self.items then
      self.seq = {}
      for i = 1, #self.items do self.seq[i] = i end
    end
    local parts, part = opts.num_parts or 1, opts.part_index or 0
    if self.seq and parts > 1 then
      local c = math.floor(#self.seq / parts)
      local sub = {}
      for i = part * c + 1, (part + 1) * c do sub[#sub + 1] = self.seq[i] end
      self.seq = sub
    end
    self.auglist = opts.aug_list or M.CreateAugmenter(shape, opts)
    local label_shape = self.label_width > 1 and { self.batch_size, self.label_width }
      or { self.batch_size }
    self.provide_data = { mx.io.DataDesc(opts.data_name or 'data',
      { self.batch_size, shape[1], shape[2], shape[3] }, self.dtype) }
    self.provide_label = { mx.io.DataDesc(opts.label_name or 'softmax_label', label_shape,
      'float32') }
    self:reset()
    return self
  end

  function ImageIter:reset()
    if self.shuffle and self.seq then
      for i = #self.seq, 2, -1 do
        local j = math.random(1, i)
        self.seq[i], self.seq[j] = self.seq[j], self.seq[i]
      end
    end
    if self.rec and not self.seq then self.rec:reset() end
    self.cur = 0
  end

  -- The next (label list, encoded image bytes), or nil at the end.
  function ImageIter:next_sample()
    if self.rec then
      local s
      if self.seq then
        self.cur = self.cur + 1
        if self.cur > #self.seq then return nil end
        s = self.rec:read_idx(self.seq[self.cur])
      else
        s = self.rec:read()
        if s == nil then return nil end
      end
      local header, img = mx.recordio.unpack(s)
      local label = type(header.label) == 'table' and header.label or { header.label }
      return label, img
    end
    self.cur = self.cur + 1
    if self.cur > #self.seq then return nil end
    local item = self.items[self.seq[self.cur]]
    local f = io.open(self.root .. '/' .. item.path, 'rb')
    if not f then error('ImageIter: cannot open ' .. self.root .. '/' .. item.path, 2) end
    local bytes = f:read('*a')
    f:close()
    return item.label, bytes
  end

  function ImageIter:next()
    local c, h, w = self.data_shape[1], self.data_shape[2], self.data_shape[3]
    local bs = self.batch_size
    local data = mx.nd.zeros({ bs, c, h, w }, { dtype = self.dtype })
    local labels = {}
    local i = 0
    while i < bs do
      local label, bytes = self:next_sample()
      if label == nil then break end
      local img = io_c.decode_image(bytes, c, true, 'ImageIter')
      for _, aug in ipairs(self.auglist) do img = aug(img) end
      local shape = img.shape
      if shape[1] ~= h or shape[2] ~= w or shape[3] ~= c then
        error(('ImageIter: an augmented image is (%s), data_shape needs (%d,%d,%d) (HWC)'):format(
          table.concat(shape, ','), h, w, c), 2)
      end
      i = i + 1
      data[i] = mx.nd.transpose(img:astype(self.dtype), { axes = { 3, 1, 2 } })
      labels[i] = self.label_width > 1 and label or label[1]
    end
    if i == 0 or (i < bs and self.last_batch_handle == 'discard') then return nil end
    local pad = bs - i
    for k = i + 1, bs do labels[k] = self.label_width > 1 and labels[1] or 0 end
    return { data = { data }, label = { mx.nd.array(labels) }, pad = pad }
  end

  M.ImageIter = help.doc(function(opts) return image_iter(opts) end, [[
mx.image.ImageIter{batch_size =, data_shape = {3, h, w}, path_imgrec =,
path_imgidx =, path_imglist =, path_root =, imglist =, label_width = 1,
shuffle =, part_index =, num_parts =, aug_list =, data_name =, label_name =,
dtype = 'float32', last_batch_handle = 'pad'|'discard', ...} -> an iterator
(mx.io's protocol) of (batch, c, h, w) images decoded and augmented on the
interpreter thread; other keys go to CreateAugmenter. A .lst line is
index<TAB>label(s)<TAB>path.]])

  help.doc(M, [[
mx.image: images as uint8 NDArrays of shape (height, width, channels), RGB.
  imread(filename[, {flag = 1, to_rgb = true}])   read and decode a JPEG or PNG
  imdecode(buf[, {flag = 1, to_rgb = true}])      decode bytes (a string or uint8 NDArray)
  imencode(img[, {img_fmt = '.jpg', quality = 95}])  encode to JPEG or PNG bytes
  imresize(src, w, h[, {interp = 1}])             OpenCV's resize, as MXNet's
  resize_short(src, size[, {interp = 2}])         the shorter side to `size`
  fixed_crop(src, x0, y0, w, h[, {size =, interp =}])
  center_crop(src, {w, h}), random_crop(src, {w, h})  -> out, {x0, y0, w, h}
  color_normalize(src, mean[, std]), scale_down(src_size, size)
flag 0 decodes to grayscale (h, w, 1); to_rgb = false gives BGR, OpenCV's order.
Pixel offsets (x0, y0) count from 0, as in MXNet and Torch7's image package.
interp: 0 nearest, 1 bilinear, 2 bicubic, 3 area, 4 Lanczos, 9 by the sizes,
10 at random (MXNet's codes).
Augmenters (aug(src) -> image; aug:dumps()): ResizeAug, ForceResizeAug,
RandomCropAug, RandomSizedCropAug, CenterCropAug, RandomOrderAug,
BrightnessJitterAug, ContrastJitterAug, SaturationJitterAug, ColorJitterAug,
HueJitterAug, LightingAug, ColorNormalizeAug, RandomGrayAug, HorizontalFlipAug, CastAug, and
CreateAugmenter{data_shape = {3, h, w}, ...}, which lists them as MXNet's does.
Random choices use math.random (seed it with math.randomseed).
ImageIter{batch_size =, data_shape =, path_imgrec = | path_imglist = | imglist =, ...}
iterates over images in batches (help(mx.image.ImageIter)).]])
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
