-- mx.gluon.data: datasets, samplers and the DataLoader (MXNet's gluon/data
-- in Lua), and data.vision (MNIST, FashionMNIST, transforms).
--
-- Indices are 1-based. A dataset is ds:len() samples, ds:get(i) each (a
-- sample is one value or several, returned as several values). Datasets of
-- arrays (ArrayDataset, vision.MNIST) also gather a whole batch at once
-- (ds:_batch(indices): one take per array), and a transform marked
-- batchable (the vision transforms) is then applied to the batch, not
-- sample by sample: a DataLoader epoch over MNIST is a few ops per batch.
local class = require 'tessera.class'
local help = require 'tessera.help'

local unpack = unpack or table.unpack

return function(mx, G)
  local D = {}

  local function pack(...) return { n = select('#', ...), ... } end

  -- ---- datasets ------------------------------------------------------------
  local Dataset = class.root('Dataset')
  function Dataset:len() error('Dataset: len() is not defined', 2) end
  function Dataset:get() error('Dataset: get(i) is not defined', 2) end
  function Dataset:__len() return self:len() end

  local function check_index(self, i)
    local n = self:len()
    if type(i) ~= 'number' or i < 1 or i > n or i % 1 ~= 0 then
      error(('%s: index %s out of range 1..%d'):format(rawget(getmetatable(self), '__name'),
        tostring(i), n), 3)
    end
  end

  -- fn applied to every sample (all its values), or to the first value
  -- only (transform_first). Lazy or not, it runs at get(i); the results of
  -- a non-lazy transform are kept once computed.
  local Transformed = Dataset:extend('TransformedDataset')
  function Transformed:__init(base, fn, first, lazy)
    self._base, self._fn, self._first = base, fn, first
    self._cache = (lazy == false) and {} or nil
  end
  function Transformed:len() return self._base:len() end
  local function apply(self, s)
    if self._first then
      s[1] = self._fn(s[1])
      return s
    end
    return pack(self._fn(unpack(s, 1, s.n)))
  end
  function Transformed:get(i)
    check_index(self, i)
    if self._cache and self._cache[i] then return unpack(self._cache[i], 1, self._cache[i].n) end
    local s = apply(self, pack(self._base:get(i)))
    if self._cache then self._cache[i] = s end
    return unpack(s, 1, s.n)
  end
  -- A batch in one go when the base can and the transform works on batches.
  function Transformed:_batch(idx)
    if not (self._base._batch and type(self._fn) == 'table' and self._fn.batchable) then return nil end
    local s = self._base:_batch(idx)
    if not s then return nil end
    return apply(self, s)
  end

  -- The first `count` samples (all when there are fewer), as MXNet's take.
  local Taken = Dataset:extend('TakenDataset')
  function Taken:__init(base, count) self._base, self._n = base, math.min(count, base:len()) end
  function Taken:len() return self._n end
  function Taken:get(i)
    check_index(self, i)
    return self._base:get(i)
  end
  function Taken:_batch(idx) return self._base._batch and self._base:_batch(idx) end

  function Dataset:take(count)
    if type(count) ~= 'number' or count < 0 then error('Dataset:take: count must be at least 0', 2) end
    return Taken(self, math.floor(count))
  end
  function Dataset:transform(fn, lazy) return Transformed(self, fn, false, lazy) end
  function Dataset:transform_first(fn, lazy) return Transformed(self, fn, true, lazy) end
  D.Dataset = Dataset

  local SimpleDataset = Dataset:extend('SimpleDataset')
  function SimpleDataset:__init(data)
    if type(data) ~= 'table' then error('SimpleDataset: expected a list', 2) end
    self._data = data
  end
  function SimpleDataset:len() return #self._data end
  function SimpleDataset:get(i)
    check_index(self, i)
    return self._data[i]
  end
  D.SimpleDataset = SimpleDataset

  local function length_of(v)
    if mx.nd.is_ndarray(v) then return v.shape[1] end
    if type(v) == 'table' and not class.isinstance(v, Dataset) then return #v end
    if class.isinstance(v, Dataset) then return v:len() end
    error('ArrayDataset: each argument must be an NDArray, a list or a Dataset', 4)
  end

  -- ArrayDataset(a, b, ...): sample i is (a[i], b[i], ...).
  local ArrayDataset = Dataset:extend('ArrayDataset')
  function ArrayDataset:__init(...)
    local arrays = pack(...)
    if arrays.n == 0 then error('ArrayDataset: needs at least one array', 2) end
    local n = length_of(arrays[1])
    for i = 2, arrays.n do
      local m = length_of(arrays[i])
      if m ~= n then
        error(('ArrayDataset: argument %d has %d items, argument 1 has %d'):format(i, m, n), 2)
      end
    end
    self._arrays, self._n = arrays, n
  end
  function ArrayDataset:len() return self._n end
  function ArrayDataset:get(i)
    check_index(self, i)
    local out = {}
    for k = 1, self._arrays.n do
      local a = self._arrays[k]
      if mx.nd.is_ndarray(a) then out[k] = a[i]
      elseif class.isinstance(a, Dataset) then out[k] = a:get(i)
      else out[k] = a[i] end
    end
    return unpack(out, 1, self._arrays.n)
  end
  -- Every array's rows at idx (an int32 NDArray of 0-based rows) in one take.
  function ArrayDataset:_batch(idx)
    local out = { n = self._arrays.n }
    for k = 1, self._arrays.n do
      local a = self._arrays[k]
      if not mx.nd.is_ndarray(a) then return nil end
      out[k] = mx.nd.take(a, idx, { axis = 1 })
    end
    return out
  end
  D.ArrayDataset = ArrayDataset

  -- ---- samplers: iterate over 1-based indices --------------------------------
  local Sampler = class.root('Sampler')
  function Sampler:len() return self._n end
  function Sampler:__len() return self:len() end

  local SequentialSampler = Sampler:extend('SequentialSampler')
  function SequentialSampler:__init(n, start)
    self._n, self._start = n, start or 1
  end
  function SequentialSampler:iter()
    local i = self._start - 1
    local last = self._start + self._n - 1
    return function()
      i = i + 1
      if i <= last then return i end
    end
  end
  D.SequentialSampler = SequentialSampler

  -- A new random order at every iter() (mx.random's seed makes it repeatable).
  local RandomSampler = Sampler:extend('RandomSampler')
  function RandomSampler:__init(n) self._n = n end
  function RandomSampler:iter()
    local order = mx.nd.shuffle(mx.nd.arange(1, self._n + 1, { dtype = 'float64' })):totable()
    local i = 0
    return function()
      i = i + 1
      return order[i]
    end
  end
  D.RandomSampler = RandomSampler

  -- Groups a sampler's indices into lists of batch_size; last_batch 'keep'
  -- (a short last batch), 'discard', or 'rollover' (the rest starts the
  -- next epoch's first batch).
  local BatchSampler = Sampler:extend('BatchSampler')
  function BatchSampler:__init(sampler, batch_size, last_batch)
    if type(batch_size) ~= 'number' or batch_size < 1 or batch_size % 1 ~= 0 then
      error('BatchSampler: batch_size must be a positive whole number', 2)
    end
    last_batch = last_batch or 'keep'
    if last_batch ~= 'keep' and last_batch ~= 'discard' and last_batch ~= 'rollover' then
      error("BatchSampler: last_batch must be 'keep', 'discard' or 'rollover', not '"
        .. tostring(last_batch) .. "'", 2)
    end
    self._sampler, self._batch_size, self._last_batch = sampler, batch_size, last_batch
    self._prev = {}
  end
  function BatchSampler:len()
    local n, b = self._sampler:len(), self._batch_size
    if self._last_batch == 'keep' then return math.ceil(n / b) end
    if self._last_batch == 'discard' then return math.floor(n / b) end
    return math.floor((n + #self._prev) / b)
  end
  function BatchSampler:iter()
    local next_index = self._sampler:iter()
    local batch = self._prev
    self._prev = {}
    local done = false
    return function()
      if done then return nil end
      for i in next_index do
        batch[#batch + 1] = i
        if #batch == self._batch_size then
          local b = batch
          batch = {}
          return b
        end
      end
      done = true
      if #batch == 0 then return nil end
      if self._last_batch == 'keep' then return batch end
      if self._last_batch == 'rollover' then self._prev = batch end
      return nil
    end
  end
  D.BatchSampler = BatchSampler

  -- ---- batchify ------------------------------------------------------------
  -- Samples stacked along a new first axis: arrays by stack, numbers into
  -- one array; several values per sample give several batches.
  local function stack_values(values)
    local v1 = values[1]
    if mx.nd.is_ndarray(v1) then return mx.nd.stack(values, { axis = 1 }) end
    if type(v1) == 'number' then return mx.nd.array(values) end
    if type(v1) == 'table' then return mx.nd.array(values) end
    error('DataLoader: cannot batch samples of type ' .. type(v1), 0)
  end

  function D.default_batchify_fn(samples)
    local n = samples[1].n
    local out = { n = n }
    for k = 1, n do
      local col = {}
      for i, s in ipairs(samples) do col[i] = s[k] end
      out[k] = stack_values(col)
    end
    return out
  end

  -- ---- DataLoader ----------------------------------------------------------
  local DataLoader = class.root('DataLoader')
  function DataLoader:__init(dataset, opts)
    if type(dataset) == 'table' and not class.isinstance(dataset, Dataset) and opts == nil then
      opts = dataset
      dataset = opts.dataset
    end
    opts = opts or {}
    if not class.isinstance(dataset, Dataset) then
      error('DataLoader: dataset must be a gluon Dataset', 2)
    end
    self._dataset = dataset
    if opts.batch_sampler then
      if opts.batch_size or opts.shuffle or opts.sampler or opts.last_batch then
        error('DataLoader: batch_sampler excludes batch_size, shuffle, sampler and last_batch', 2)
      end
      self._batch_sampler = opts.batch_sampler
    else
      if not opts.batch_size then error('DataLoader: batch_size is required', 2) end
      local sampler = opts.sampler
      if sampler and opts.shuffle then error('DataLoader: give shuffle or sampler, not both', 2) end
      sampler = sampler or (opts.shuffle and RandomSampler(dataset:len())
        or SequentialSampler(dataset:len()))
      self._batch_sampler = BatchSampler(sampler, opts.batch_size, opts.last_batch or 'keep')
    end
    self._batchify = opts.batchify_fn
    local w = opts.num_workers or 0
    if type(w) ~= 'number' or w < 0 then error('DataLoader: num_workers must be at least 0', 2) end
    self._num_workers = w
  end
  function DataLoader:len() return self._batch_sampler:len() end
  function DataLoader:__len() return self:len() end

  local function make_batch(self, indices)
    local ds = self._dataset
    if not self._batchify and ds._batch then
      local rows = {}
      for i, v in ipairs(indices) do rows[i] = v - 1 end
      local b = ds:_batch(mx.nd.array(rows, { dtype = 'int32' }))
      if b then return b end
    end
    local samples = {}
    for i, v in ipairs(indices) do samples[i] = pack(ds:get(v)) end
    local b = (self._batchify or D.default_batchify_fn)(samples)
    if b.n == nil then b = pack(b) end
    return b
  end

  -- for data, label in loader:iter() do ... end (also `for ... in loader()`).
  function DataLoader:iter()
    local batches = self._batch_sampler:iter()
    return function()
      local idx = batches()
      if not idx then return nil end
      local b = make_batch(self, idx)
      return unpack(b, 1, b.n)
    end
  end
  DataLoader.__call = DataLoader.iter
  D.DataLoader = DataLoader

  -- ---- vision --------------------------------------------------------------
  local vision = { transforms = {} }
  D.vision = vision
  local T = vision.transforms

  -- A transform: fn(x) on one sample (HWC, or NCHW/NHWC batches where said).
  local function transform(name, fn, batchable)
    local C = class.root(name)
    C.batchable = batchable
    C.__call = function(self, x) return fn(self, x) end
    T[name] = C
    return C
  end

  -- uint8 HWC (or NHWC) in [0, 255] -> float32 CHW (NCHW) in [0, 1].
  local ToTensor = transform('ToTensor', function(_, x)
    local nd = #x.shape
    local y = x:astype('float32') / 255
    if nd == 3 then return mx.nd.transpose(y, { axes = { 3, 1, 2 } }) end
    if nd == 4 then return mx.nd.transpose(y, { axes = { 1, 4, 2, 3 } }) end
    error('ToTensor: expected an HWC image or an NHWC batch, got ' .. nd .. ' dimensions', 0)
  end, true)
  function ToTensor:__init() end

  -- (x - mean) / std per channel, on CHW (or NCHW) float data.
  local Normalize = transform('Normalize', function(self, x)
    local nd = #x.shape
    local c = nd == 4 and x.shape[2] or x.shape[1]
    local function per_channel(v)
      local t = type(v) == 'table' and v or {}
      if type(v) == 'number' then for i = 1, c do t[i] = v end end
      if #t ~= c then error(('Normalize: %d values for %d channels'):format(#t, c), 0) end
      local shape = nd == 4 and { 1, c, 1, 1 } or { c, 1, 1 }
      return mx.nd.array(t, { ctx = x.ctx }):reshape(shape)
    end
    return mx.nd.broadcast_div(mx.nd.broadcast_sub(x, per_channel(self.mean)), per_channel(self.std))
  end, true)
  function Normalize:__init(mean, std)
    if type(mean) == 'table' and mean.mean then mean, std = mean.mean, mean.std end
    self.mean, self.std = mean or 0, std or 1
  end

  -- Size as MXNet's transforms take it: a number (square) or {width, height}.
  local function wh(size, who)
    if type(size) == 'number' then return { size, size } end
    if type(size) == 'table' and #size == 2 then return size end
    error(who .. ': size must be a number or {width, height}', 4)
  end

  -- Resize(size, {keep_ratio = false, interpolation = 1}) of an HWC image:
  -- with keep_ratio and a number, the shorter side becomes size.
  local Resize = transform('Resize', function(self, x)
    if self.keep_ratio and type(self.size) == 'number' then
      return mx.image.resize_short(x, self.size, { interp = self.interp })
    end
    local s = wh(self.size, 'Resize')
    return mx.image.imresize(x, s[1], s[2], { interp = self.interp })
  end, false)
  function Resize:__init(size, opts)
    opts = opts or {}
    wh(size, 'Resize')
    self.size, self.keep_ratio, self.interp = size, opts.keep_ratio or false, opts.interpolation or 1
  end

  -- CenterCrop(size, {interpolation = 1}): the centre, resized to size when
  -- the image is smaller (MXNet's image.center_crop).
  local CenterCrop = transform('CenterCrop', function(self, x)
    return (mx.image.center_crop(x, self.size, { interp = self.interp }))
  end, false)
  function CenterCrop:__init(size, opts)
    self.size, self.interp = wh(size, 'CenterCrop'), (opts or {}).interpolation or 1
  end

  -- RandomResizedCrop(size, {scale = {0.08, 1}, ratio = {3/4, 4/3},
  -- interpolation = 1}): a random area and aspect ratio, resized to size.
  local RandomResizedCrop = transform('RandomResizedCrop', function(self, x)
    return (mx.image.random_size_crop(x, self.size, self.scale, self.ratio, { interp = self.interp }))
  end, false)
  function RandomResizedCrop:__init(size, opts)
    opts = opts or {}
    self.size = wh(size, 'RandomResizedCrop')
    self.scale, self.ratio = opts.scale or { 0.08, 1 }, opts.ratio or { 3 / 4, 4 / 3 }
    self.interp = opts.interpolation or 1
  end

  -- RandomFlipLeftRight(): mirrors an HWC image with probability 1/2.
  local RandomFlip = transform('RandomFlipLeftRight', function(_, x)
    if math.random() < 0.5 then return mx.nd.flip(x, { axis = 2 }) end
    return x
  end, false)
  function RandomFlip:__init() end

  -- Transforms applied in order; batchable when all are.
  local Compose = class.root('Compose')
  function Compose:__init(list)
    self._list = list
    local all = true
    for _, t in ipairs(list) do all = all and type(t) == 'table' and t.batchable == true end
    self.batchable = all
  end
  Compose.__call = function(self, x)
    for _, t in ipairs(self._list) do x = t(x) end
    return x
  end
  T.Compose = Compose

  -- MNIST-format data sets from local IDX files (gzip'd or plain): images
  -- uint8 (28, 28, 1), labels int32.
  local function idx_dataset(name, files)
    local C = Dataset:extend(name)
    function C:__init(root, opts)
      if type(root) == 'table' then opts, root = root, root.root end
      opts = opts or {}
      if type(root) ~= 'string' then
        error(name .. ': root = the folder holding the IDX files is required (nothing is downloaded)', 2)
      end
      local train = opts.train ~= false
      local f = train and files.train or files.test
      local ok, x, y = pcall(mx.io.read_mnist, root .. '/' .. f[1], root .. '/' .. f[2], { flat = true })
      if not ok then error(name .. ': ' .. tostring(x), 2) end
      local n = y.shape[1]
      self._data = mx.nd.round(x * 255):astype('uint8'):reshape({ n, 28, 28, 1 })
      self._label = y:astype('int32')
      self._transform = opts.transform
    end
    function C:len() return self._label.shape[1] end
    function C:get(i)
      check_index(self, i)
      local x, y = self._data[i], self._label[i]
      if self._transform then return self._transform(x, y) end
      return x, y
    end
    function C:_batch(idx)
      if self._transform then return nil end
      return { n = 2, mx.nd.take(self._data, idx, { axis = 1 }), mx.nd.take(self._label, idx, { axis = 1 }) }
    end
    vision[name] = C
  end
  -- ImageFolderDataset(root, {flag = 1, transform =}): root/CLASS/IMAGE,
  -- the classes (sub-folders, sorted) numbered from 0 in `synsets`, the
  -- images (.jpg, .jpeg, .png, sorted) read at get(i) as uint8 HWC arrays,
  -- with their label (MXNet's).
  local image_exts = { ['.jpg'] = true, ['.jpeg'] = true, ['.png'] = true }
  local ImageFolder = Dataset:extend('ImageFolderDataset')
  function ImageFolder:__init(root, opts)
    if type(root) == 'table' then opts, root = root, root.root end
    opts = opts or {}
    if type(root) ~= 'string' then error('ImageFolderDataset: root must be a folder path', 2) end
    local io_c = require 'tessera.io'
    local ok, _, dirs = pcall(io_c.list_dir, root, 'ImageFolderDataset')
    if not ok then error(_, 2) end
    self._root, self._flag, self._transform = root, opts.flag or 1, opts.transform
    self.synsets, self.items = {}, {}
    for _, folder in ipairs(dirs) do
      local label = #self.synsets
      self.synsets[label + 1] = folder
      local files = io_c.list_dir(root .. '/' .. folder, 'ImageFolderDataset')
      for _, f in ipairs(files) do
        local ext = (f:match('(%.[^.]+)$') or ''):lower()
        if image_exts[ext] then
          self.items[#self.items + 1] = { root .. '/' .. folder .. '/' .. f, label }
        end
      end
    end
  end
  function ImageFolder:len() return #self.items end
  function ImageFolder:get(i)
    check_index(self, i)
    local item = self.items[i]
    local img = mx.image.imread(item[1], { flag = self._flag })
    if self._transform then return self._transform(img, item[2]) end
    return img, item[2]
  end
  vision.ImageFolderDataset = ImageFolder

  -- ImageRecordDataset(filename, {flag = 1, transform =}): the images of an
  -- indexed RecordIO file (FILE.rec with FILE.idx beside it, as im2rec
  -- writes them), decoded at get(i), with the record's label (MXNet's).
  local ImageRecord = Dataset:extend('ImageRecordDataset')
  function ImageRecord:__init(filename, opts)
    if type(filename) == 'table' then opts, filename = filename, filename.filename end
    opts = opts or {}
    if type(filename) ~= 'string' then error('ImageRecordDataset: filename must be a path', 2) end
    local idx = filename:gsub('%.[^./]*$', '') .. '.idx'
    local ok, rec = pcall(mx.recordio.MXIndexedRecordIO, idx, filename, 'r')
    if not ok then error('ImageRecordDataset: ' .. tostring(rec), 2) end
    self._rec, self._flag, self._transform = rec, opts.flag or 1, opts.transform
  end
  function ImageRecord:len() return #self._rec.keys end
  function ImageRecord:get(i)
    check_index(self, i)
    local header, bytes = mx.recordio.unpack(self._rec:read_idx(self._rec.keys[i]))
    local img = mx.image.imdecode(bytes, { flag = self._flag })
    local label = header.label
    if self._transform then return self._transform(img, label) end
    return img, label
  end
  vision.ImageRecordDataset = ImageRecord

  idx_dataset('MNIST', { train = { 'train-images-idx3-ubyte', 'train-labels-idx1-ubyte' },
    test = { 't10k-images-idx3-ubyte', 't10k-labels-idx1-ubyte' } })
  idx_dataset('FashionMNIST', { train = { 'train-images-idx3-ubyte', 'train-labels-idx1-ubyte' },
    test = { 't10k-images-idx3-ubyte', 't10k-labels-idx1-ubyte' } })

  help.doc(D, [[
mx.gluon.data: Dataset (ds:len(), ds:get(i), ds:transform(fn),
ds:transform_first(fn), ds:take(n)), ArrayDataset(a, b, ...), SimpleDataset(list);
SequentialSampler(n), RandomSampler(n), BatchSampler(sampler, batch_size,
last_batch = 'keep' | 'discard' | 'rollover'); DataLoader(dataset,
{batch_size, shuffle, sampler, last_batch, batch_sampler, batchify_fn,
num_workers}) iterated as `for x, y in loader:iter() do`; vision.MNIST(root,
{train = true}), vision.FashionMNIST, vision.ImageFolderDataset(root, {flag,
transform}), vision.ImageRecordDataset(file.rec, {flag, transform}),
vision.transforms (ToTensor,
Normalize(mean, std), Resize(size, {keep_ratio}), CenterCrop(size),
RandomResizedCrop(size, {scale, ratio}), RandomFlipLeftRight(), Compose). Indices are 1-based. Batches of array
datasets are gathered with one take per array, and batchable transforms run
once per batch. num_workers is accepted; batches are made on the
interpreter's thread, their ops run on the engine's.]])
  return D
end
