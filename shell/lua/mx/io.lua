-- mx.io: data iterators. The protocol (MXNet's DataIter):
--   it:reset()                  back to the first batch
--   it:next() -> DataBatch|nil  {data = {NDArray}, label = {NDArray}, pad = n, index = {..}}
--   it:iter_next() -> bool, then it:getdata(), getlabel(), getpad(), getindex()
--   it.provide_data, it.provide_label   {DataDesc{name, shape, dtype, layout}, ...}
--   for batch in it:batches() do ... end   (reset, then every batch)
-- Batches are gathered with `take` on the engine, so the copy of the next
-- batch overlaps the work on the current one; PrefetchingIter makes them
-- ahead on a background thread.
local help = require 'tessera.help'

return function(mx)
  local M = {}

  local DataIter = {}
  DataIter.__index = DataIter

  function DataIter:batches()
    self:reset()
    return function() return self:next() end
  end

  -- MXNet's other way through an epoch: iter_next() moves to the next batch
  -- and says whether there is one; the getters read it.
  function DataIter:iter_next()
    self.current_batch = self:next()
    return self.current_batch ~= nil
  end
  local function current(self, who)
    local b = self.current_batch
    if b == nil then
      error(who .. ': no current batch (call iter_next() first; it returns false at the end)', 3)
    end
    return b
  end
  function DataIter:getdata() return current(self, 'getdata').data end
  function DataIter:getlabel() return current(self, 'getlabel').label end
  function DataIter:getpad() return current(self, 'getpad').pad or 0 end
  function DataIter:getindex() return current(self, 'getindex').index end

  -- DataDesc: what an iterator provides, as MXNet's (a name and shape that
  -- also read as d[1], d[2], a dtype, and a layout, 'NCHW' by default as in
  -- MXNet, whose batch axis is where 'N' stands).
  local DataDesc = {}
  DataDesc.__index = function(d, k)
    if k == 1 then return rawget(d, 'name') end
    if k == 2 then return rawget(d, 'shape') end
    return DataDesc[k]
  end
  DataDesc.__tostring = function(d)
    return ('DataDesc[%s,(%s),%s,%s]'):format(d.name, table.concat(d.shape, ','), d.dtype,
      d.layout)
  end
  function DataDesc.get_batch_axis(layout)
    if layout == nil then return 1 end
    local at = layout:find('N', 1, true)
    return at
  end
  local function data_desc(name, shape, dtype, layout)
    if type(name) == 'table' and getmetatable(name) == nil then
      name, shape, dtype, layout = name.name, name.shape, name.dtype, name.layout
    end
    if type(name) ~= 'string' then error('DataDesc: name must be a string, got ' .. type(name), 3) end
    if type(shape) ~= 'table' then error('DataDesc: shape must be a table, got ' .. type(shape), 3) end
    return setmetatable({ name = name, shape = shape, dtype = dtype or 'float32',
      layout = layout or 'NCHW' }, DataDesc)
  end
  M.DataDesc = setmetatable({ get_batch_axis = DataDesc.get_batch_axis },
    { __call = function(_, ...) return data_desc(...) end })
  help.doc(M.DataDesc, [[
mx.io.DataDesc(name, shape, dtype = 'float32', layout = 'NCHW') or
DataDesc{name =, shape =, dtype =, layout =}: what an iterator's provide_data
and provide_label list. d.name and d.shape also read as d[1] and d[2];
DataDesc.get_batch_axis(layout) is the (1-based) position of 'N'.]])

  -- A Lua LCG, so shuffles repeat for a seed and never touch math.random.
  local function rng(seed)
    local s = (seed or 0) % 2147483648
    return function(n)  -- integer in [1, n]
      s = (s * 1103515245 + 12345) % 2147483648
      return 1 + math.floor(s / 2147483648 * n)
    end
  end

  -- A value as the user gave it, for messages: strings quoted, numbers as
  -- Lua prints them (nan, inf, 2.5).
  local function shown(v)
    if type(v) == 'string' then return ("'%s' (a string)"):format(v) end
    if type(v) == 'number' then return tostring(v) end
    return tostring(v) .. ' (a ' .. type(v) .. ')'
  end

  -- A count given by the user (batch_size, num_examples): a whole number
  -- from `min` to `max`; strings are not converted, and NaN, infinities and
  -- fractions are errors rather than loops that never end.
  local function check_count(v, who, name, min, max, level)
    if type(v) ~= 'number' or v ~= v or v % 1 ~= 0 or v < min or v > (max or 2 ^ 53) then
      error(('%s: %s must be a whole number%s, got %s'):format(who, name,
        max and (' from %d to %d'):format(min, max) or (' of at least %d'):format(min),
        shown(v)), level + 1)
    end
    return v
  end

  -- A seed: any whole number (the shuffle uses it modulo 2^31).
  local function check_seed(v, who, level)
    if v == nil then return 0 end
    if type(v) ~= 'number' or v ~= v or v % 1 ~= 0 then
      error(('%s: seed must be a whole number, got %s'):format(who, shown(v)), level + 1)
    end
    return v
  end

  local function as_named(v, default_name, what)
    if v == nil then return {} end
    if mx.nd.is_ndarray(v) then return { { name = default_name, array = v } } end
    if type(v) ~= 'table' then error(what .. ': expected an NDArray or a table of them', 3) end
    local out = {}
    if v[1] ~= nil then
      for i, a in ipairs(v) do
        out[i] = { name = (#v == 1) and default_name or (default_name .. (i - 1)), array = a }
      end
    else
      local names = {}
      for k in pairs(v) do names[#names + 1] = k end
      table.sort(names)
      for _, k in ipairs(names) do out[#out + 1] = { name = k, array = v[k] } end
    end
    for _, e in ipairs(out) do
      if not mx.nd.is_ndarray(e.array) then
        e.array = mx.nd.array(e.array)
      end
    end
    return out
  end

  local function shape_with_batch(a, batch)
    local s = { batch }
    for i = 2, #a.shape do s[i] = a.shape[i] end
    return s
  end

  local NDArrayIter = setmetatable({}, { __index = DataIter })
  NDArrayIter.__index = NDArrayIter

  -- `who` names the iterator the user made (MNISTIter and CSVIter are
  -- NDArrayIters) in errors raised `level` calls up.
  -- num_parts / part_index: this worker's share of the rows, contiguous
  -- (part k of p holds rows floor(k n / p) .. floor((k + 1) n / p) - 1,
  -- 0-based), as MXNet's MNISTIter and dmlc's input splits share them.
  function NDArrayIter:_shard(parts, index, who, level)
    parts, index = parts or 1, index or 0
    check_count(parts, who, 'num_parts', 1, nil, level)
    if type(index) ~= 'number' or index % 1 ~= 0 or index < 0 or index >= parts then
      error(('%s: part_index must be a whole number in 0..%d (num_parts %d), got %s'):format(who,
        parts - 1, parts, tostring(index)), level)
    end
    if parts == 1 then return end
    local n = self.num_data
    local first, stop = math.floor(index * n / parts), math.floor((index + 1) * n / parts)
    if stop <= first then
      error(('%s: part %d of %d holds none of the %d rows'):format(who, index, parts, n), level)
    end
    for _, list in ipairs({ self.data, self.label }) do
      for _, e in ipairs(list) do e.array = e.array[{ first + 1, stop }] end
    end
    self.num_data = stop - first
  end

  local function new_ndarray_iter(opts, who, level)
    level = level + 1
    local self = setmetatable({}, NDArrayIter)
    self.data = as_named(opts.data, opts.data_name or 'data', who .. ' data')
    self.label = as_named(opts.label, opts.label_name or 'softmax_label', who .. ' label')
    if #self.data == 0 then error(who .. ': data is required', level) end
    self.batch_size = check_count(opts.batch_size or 1, who, 'batch_size', 1, nil, level)
    local seed = check_seed(opts.seed, who, level)
    self.shuffle = opts.shuffle or false
    self.last_batch_handle = opts.last_batch_handle or 'pad'
    if self.last_batch_handle ~= 'pad' and self.last_batch_handle ~= 'discard'
        and self.last_batch_handle ~= 'roll_over' then
      error(who .. ": last_batch_handle must be 'pad', 'discard' or 'roll_over', got '"
        .. tostring(self.last_batch_handle) .. "'", level)
    end
    self.num_data = self.data[1].array.shape[1]
    for _, e in ipairs(self.data) do
      if e.array.shape[1] ~= self.num_data then
        error(('%s: %s has %d rows, %s has %d'):format(who, self.data[1].name, self.num_data,
          e.name, e.array.shape[1]), level)
      end
    end
    for _, e in ipairs(self.label) do
      if e.array.shape[1] ~= self.num_data then
        error(('%s: label %s has %d rows for %d data rows'):format(who, e.name,
          e.array.shape[1], self.num_data), level)
      end
    end
    self:_shard(opts.num_parts, opts.part_index, who, level + 1)
    -- A batch takes each row at most once (MXNet asks the same): a larger
    -- one would only repeat rows, and one of 1e9 would build its list of
    -- rows for ever.
    if self.batch_size > self.num_data then
      error(('%s: batch_size %d is more than the %d rows of data'):format(who, self.batch_size,
        self.num_data), level)
    end
    self.provide_data, self.provide_label = {}, {}
    for i, e in ipairs(self.data) do
      self.provide_data[i] = data_desc(e.name, shape_with_batch(e.array, self.batch_size),
        e.array.dtype)
    end
    for i, e in ipairs(self.label) do
      self.provide_label[i] = data_desc(e.name, shape_with_batch(e.array, self.batch_size),
        e.array.dtype)
    end
    self.rand = rng(seed)
    self.carry = {}  -- roll_over: rows left from the last epoch
    self:reset()
    return self
  end

  function M.NDArrayIter(opts)
    if opts ~= nil and type(opts) ~= 'table' then
      error('NDArrayIter: expected a table of options, got ' .. shown(opts), 2)
    end
    return new_ndarray_iter(opts or {}, 'NDArrayIter', 2)
  end

  function NDArrayIter:reset()
    self.current_batch = nil
    local order = {}
    for i = 1, self.num_data do order[i] = i - 1 end
    if self.shuffle then
      for i = self.num_data, 2, -1 do
        local j = self.rand(i)
        order[i], order[j] = order[j], order[i]
      end
    end
    if self.last_batch_handle == 'roll_over' and #self.carry > 0 then
      local merged = {}
      for _, v in ipairs(self.carry) do merged[#merged + 1] = v end
      for _, v in ipairs(order) do merged[#merged + 1] = v end
      order = merged
      self.carry = {}
    end
    self.order = order
    self.cursor = 0
  end

  local function gather(entries, idx)
    local out = {}
    for i, e in ipairs(entries) do out[i] = mx.nd.take(e.array, idx, { axis = 1 }) end
    return out
  end

  -- The rows (0-based) of the next batch and its pad, or nil at the end of
  -- the epoch: the plan of a batch without its copies (PrefetchingIter's
  -- background thread makes those).
  function NDArrayIter:next_rows()
    local n, b = #self.order, self.batch_size
    if self.cursor >= n then return nil end
    local left = n - self.cursor
    local pad = 0
    if left < b then
      if self.last_batch_handle == 'discard' then
        self.cursor = n
        return nil
      elseif self.last_batch_handle == 'roll_over' then
        for k = self.cursor + 1, n do self.carry[#self.carry + 1] = self.order[k] end
        self.cursor = n
        return nil
      end
      pad = b - left
    end
    local idx = {}
    for k = 1, b do
      local p = self.cursor + k
      idx[k] = self.order[p <= n and p or ((p - n - 1) % n) + 1]
    end
    self.cursor = self.cursor + b
    return idx, pad
  end

  function NDArrayIter:next()
    local idx, pad = self:next_rows()
    if not idx then return nil end
    local idx_nd = mx.nd.array(idx, { dtype = 'int32' })
    return { data = gather(self.data, idx_nd), label = gather(self.label, idx_nd), pad = pad,
      index = idx }
  end

  help.doc(M.NDArrayIter, [[
mx.io.NDArrayIter{data = x | {x1, x2} | {name = x}, label = y, batch_size = 1,
  shuffle = false, last_batch_handle = 'pad' | 'discard' | 'roll_over',
  data_name = 'data', label_name = 'softmax_label', seed = 0, num_parts = 1,
  part_index = 0}
Batches of rows of in-memory arrays. 'pad' fills the last batch from the
start (batch.pad says how many rows are filler); 'discard' drops it;
'roll_over' carries its rows into the next epoch. batch_size is a whole
number from 1 to the number of rows (of this part). num_parts / part_index
(from 0) keep this worker's contiguous share of the rows: part k of p holds
rows floor(k n / p) to floor((k + 1) n / p) - 1 (0-based).]])

  -- ---- MNIST (gzip'd or plain IDX files). The readers are C++
  -- (engine/io): they check every size a header claims against what the
  -- file holds before allocating.

  local readers = require 'tessera.io'

  -- file_size(path, who): the size of the regular file `path`, or nil when
  -- there is none; a FIFO, a directory or a device is an error here, before
  -- anything opens it (an open or read of a FIFO would wait for a writer for
  -- ever), and so is a path with a NUL byte.
  local file_size = readers.check_file

  -- The elements of an IDX file of `ndim` dimensions (as a byte pointer,
  -- with the string that holds them) and its dims.
  local function read_idx(path, ndim, what)
    if not file_size(path, 'MNISTIter') then
      if file_size(path .. '.gz', 'MNISTIter') then path = path .. '.gz'
      else
        error(('MNISTIter: %s file %s not found. Download the four MNIST files '
          .. '(train-images-idx3-ubyte.gz, train-labels-idx1-ubyte.gz, t10k-images-idx3-ubyte.gz, '
          .. 't10k-labels-idx1-ubyte.gz, from http://yann.lecun.com/exdb/mnist/ or a mirror) '
          .. 'into one folder and pass it'):format(what, path), 4)
      end
    end
    local ok, bytes, dims = pcall(readers.read_idx, path, ndim, 'MNISTIter')
    if not ok then error(bytes, 4) end
    return require('ffi').cast('const uint8_t *', bytes), dims, bytes
  end

  function M.read_mnist(image_path, label_path, opts)
    opts = opts or {}
    -- The strings keep the bytes the pointers see alive.
    local img, idims, img_bytes = read_idx(image_path, 3, 'image')
    local lab, ldims, lab_bytes = read_idx(label_path, 1, 'label')
    local n = idims[1]
    if ldims[1] ~= n then
      error(('MNISTIter: %s has %d images but %s has %d labels'):format(image_path, n,
        label_path, ldims[1]), 2)
    end
    if opts.num_examples and opts.num_examples < n then n = opts.num_examples end
    local h, w = idims[2], idims[3]
    local x = mx.nd.empty({ n, h * w })
    local p = x:data_ptr()
    for i = 0, n * h * w - 1 do p[i] = img[i] / 255 end
    local y = mx.nd.empty({ n })
    local q = y:data_ptr()
    for i = 0, n - 1 do q[i] = lab[i] end
    if not opts.flat then x = x:reshape({ n, 1, h, w }) end
    img_bytes, lab_bytes = nil, nil
    return x, y
  end

  function M.MNISTIter(opts)
    opts = opts or {}
    local image = opts.image or error('MNISTIter: image = path is required', 2)
    local label = opts.label or error('MNISTIter: label = path is required', 2)
    -- Before reading 50 MB: the options that need no data.
    local batch_size = check_count(opts.batch_size or 128, 'MNISTIter', 'batch_size', 1, nil, 2)
    local seed = check_seed(opts.seed, 'MNISTIter', 2)
    if opts.num_examples ~= nil then
      check_count(opts.num_examples, 'MNISTIter', 'num_examples', 1, nil, 2)
    end
    local x, y = M.read_mnist(image, label, opts)
    return new_ndarray_iter({ data = x, label = y, batch_size = batch_size,
      shuffle = opts.shuffle, seed = seed, last_batch_handle = opts.last_batch_handle or 'pad',
      data_name = opts.data_name or 'data', label_name = opts.label_name or 'softmax_label',
      num_parts = opts.num_parts, part_index = opts.part_index }, 'MNISTIter', 2)
  end
  help.doc(M.MNISTIter, [[
mx.io.MNISTIter{image = path, label = path, batch_size = 128, flat = false,
  shuffle = false, seed = 0, num_examples = n, num_parts = 1, part_index = 0} ->
an NDArrayIter over MNIST's IDX files (gzip'd or plain): pixels scaled to
[0, 1], data (batch, 1, 28, 28) or (batch, 784) with flat = true, labels 0..9
as float32. num_parts / part_index: this worker's contiguous share of the
images (part_index from 0).]])
  help.doc(M.read_mnist, 'mx.io.read_mnist(image_path, label_path, {flat, num_examples}) -> images, labels')

  -- ---- CSV.

  local function read_csv(path, what)
    if type(path) ~= 'string' then
      error(('CSVIter: %s_csv must be a path, got %s'):format(what, shown(path)), 3)
    end
    if not file_size(path, 'CSVIter') then
      error(('CSVIter: cannot open %s file %s: no such file'):format(what, path), 3)
    end
    local ok, rows = pcall(readers.read_csv, path, 'CSVIter')
    if not ok then error(rows, 3) end
    return rows
  end

  function M.CSVIter(opts)
    opts = opts or {}
    local batch_size = check_count(opts.batch_size or 1, 'CSVIter', 'batch_size', 1, nil, 2)
    local rows = read_csv(opts.data_csv or error('CSVIter: data_csv is required', 2), 'data')
    local shape = opts.data_shape or { #(rows[1] or {}) }
    local flat = {}
    local per = 1
    for _, d in ipairs(shape) do per = per * d end
    for i, r in ipairs(rows) do
      if #r ~= per then
        error(('CSVIter: row %d of %s has %d values, data_shape needs %d'):format(i,
          opts.data_csv, #r, per), 2)
      end
      for _, v in ipairs(r) do flat[#flat + 1] = v end
    end
    local full = { #rows }
    for i, d in ipairs(shape) do full[i + 1] = d end
    local data = mx.nd.array(flat):reshape(full)
    local label
    if opts.label_csv then
      local lrows = read_csv(opts.label_csv, 'label')
      local lflat = {}
      for _, r in ipairs(lrows) do for _, v in ipairs(r) do lflat[#lflat + 1] = v end end
      label = mx.nd.array(lflat)
      if #lrows ~= #rows then
        error(('CSVIter: %d data rows but %d label rows'):format(#rows, #lrows), 2)
      end
    end
    return new_ndarray_iter({ data = data, label = label, batch_size = batch_size,
      shuffle = opts.shuffle, seed = opts.seed, last_batch_handle = opts.last_batch_handle or 'pad',
      num_parts = opts.num_parts, part_index = opts.part_index }, 'CSVIter', 2)
  end
  help.doc(M.CSVIter, 'mx.io.CSVIter{data_csv =, data_shape =, label_csv =, batch_size =, '
    .. 'num_parts =, part_index =} -> an NDArrayIter over CSV rows (num_parts / part_index: '
    .. "this worker's contiguous share)")

  -- ---- Prefetching. Over an NDArrayIter (MNISTIter and CSVIter are ones)
  -- a background thread makes the batches: the iterator plans the epoch's
  -- rows (its shuffle, pad, discard and roll_over rules), the thread makes
  -- each batch's arrays and pushes their row copies to the engine, up to
  -- `depth` batches ahead. Any other iterator is Lua, and Lua runs on one
  -- thread: it is asked for its next batch one call ahead instead, which
  -- still overlaps the engine work that batch pushes.
  local PrefetchingIter = setmetatable({}, { __index = DataIter })
  PrefetchingIter.__index = PrefetchingIter

  local function host_arrays(iter)
    if getmetatable(iter) ~= NDArrayIter then return nil end
    local arrays = {}
    for _, list in ipairs({ iter.data, iter.label }) do
      for _, e in ipairs(list) do
        if e.array.ctx.device_type ~= 'cpu' then return nil end
        arrays[#arrays + 1] = e.array
      end
    end
    return arrays
  end

  function M.PrefetchingIter(iter, opts)
    if type(iter) ~= 'table' or type(iter.next) ~= 'function' or type(iter.reset) ~= 'function' then
      error('PrefetchingIter: expected an iterator (a table with next and reset methods, such as '
        .. 'an NDArrayIter) as the first argument, got ' .. shown(iter), 2)
    end
    opts = opts or {}
    local depth = check_count(opts.depth or 2, 'PrefetchingIter', 'depth', 1, 2 ^ 31 - 1, 2)
    local self = setmetatable({ iter = iter, depth = depth }, PrefetchingIter)
    self.provide_data, self.provide_label = iter.provide_data, iter.provide_label
    self.batch_size = iter.batch_size
    self.num_data = iter.num_data  -- rows per epoch, as the wrapped iterator's
    local arrays = host_arrays(iter)
    if arrays then
      self.native = require('tessera.io').prefetcher(arrays, depth)
      self.num_arrays = #iter.data  -- data arrays first, then labels
    end
    self:begin_epoch()  -- from where iter stands: no extra reset, no extra shuffle
    return self
  end

  function PrefetchingIter:reset()
    self.current_batch = nil
    self.iter:reset()
    self:begin_epoch()
  end

  function PrefetchingIter:begin_epoch()
    if not self.native then
      self.ahead = self.iter:next()
      return
    end
    -- Plan the whole epoch now. The rows roll_over carries into the next
    -- epoch are held back until this one has been read to its end, as
    -- the iterator itself would only carry them then.
    local iter = self.iter
    local carry = iter.carry
    iter.carry = {}
    local rows, plans, last_pad = {}, {}, 0
    for idx, pad in function() return iter:next_rows() end do
      plans[#plans + 1] = idx
      for _, r in ipairs(idx) do rows[#rows + 1] = r end
      last_pad = pad
    end
    self.held_carry, iter.carry = iter.carry, carry
    self.plans, self.taken = plans, 0
    self.native:start(rows, self.batch_size, last_pad)
  end

  function PrefetchingIter:next()
    if not self.native then
      local b = self.ahead
      if b ~= nil then self.ahead = self.iter:next() end
      return b
    end
    local arrays, pad = self.native:take()
    if not arrays then
      if self.held_carry then
        for _, r in ipairs(self.held_carry) do self.iter.carry[#self.iter.carry + 1] = r end
        self.held_carry = nil
      end
      return nil
    end
    self.taken = self.taken + 1
    local data, label = {}, {}
    for i, a in ipairs(arrays) do
      if i <= self.num_arrays then data[i] = a else label[i - self.num_arrays] = a end
    end
    return { data = data, label = label, pad = pad, index = self.plans[self.taken] }
  end
  help.doc(M.PrefetchingIter, [[
mx.io.PrefetchingIter(iter, {depth = 2}) -> an iterator giving iter's batches.
Over an NDArrayIter (MNISTIter, CSVIter) a background thread makes up to
depth batches ahead, their copies pushed to the engine; over any other
iterator the next batch is asked for one call ahead.]])

  -- ---- ImageRecordIter: MXNet's iterator over image RecordIO files, in
  -- C++ (engine/io/image_record_iter.h): records read, decoded and augmented
  -- on preprocess_threads threads, prefetch_buffer batches ahead.
  local ImageRecordIter = setmetatable({}, { __index = DataIter })
  ImageRecordIter.__index = ImageRecordIter

  -- The options and what each must be ('path', 'count', 'int', 'number',
  -- 'bool', 'string'); data_shape and ctx are read apart.
  local record_iter_options = {
    path_imgrec = 'path', path_imgidx = 'path', batch_size = 'count', label_width = 'count',
    resize = 'int', rand_crop = 'bool', rand_mirror = 'bool', mirror = 'bool',
    random_resized_crop = 'bool', min_random_area = 'number', max_random_area = 'number',
    min_random_scale = 'number', max_random_scale = 'number', max_aspect_ratio = 'number',
    min_aspect_ratio = 'number', min_crop_size = 'int', max_crop_size = 'int', pad = 'int',
    fill_value = 'int', inter_method = 'int', mean_r = 'number', mean_g = 'number',
    mean_b = 'number', std_r = 'number', std_g = 'number', std_b = 'number', scale = 'number',
    shuffle = 'bool', seed = 'int', shuffle_chunk_size = 'int', num_parts = 'count',
    part_index = 'int', preprocess_threads = 'count', prefetch_buffer = 'count',
    round_batch = 'bool', last_batch_handle = 'string', skip_corrupt = 'bool', dtype = 'string',
    data_name = 'string', label_name = 'string', data_shape = 'shape', ctx = 'ctx',
    device_id = 'int', verbose = 'bool',
  }
  -- MXNet's options that are not built here, refused by name rather than ignored.
  local record_iter_unsupported = {
    max_rotate_angle = 'rotation', rotate = 'rotation', rotate_list = 'rotation',
    max_shear_ratio = 'shear', random_h = 'HSL jitter', random_s = 'HSL jitter',
    random_l = 'HSL jitter', brightness = 'color jitter', contrast = 'color jitter',
    saturation = 'color jitter', pca_noise = 'lighting noise', max_random_contrast =
    'contrast noise', max_random_illumination = 'illumination noise', mean_img = 'mean images',
    path_imglist = 'label lists', mean_a = 'RGBA', std_a = 'RGBA', max_img_size = 'size limits',
    min_img_size = 'size limits', seed_aug = 'seed_aug (augmentation follows seed)',
  }

  local function check_record_iter_option(k, v)
    local who = 'ImageRecordIter'
    local kind = record_iter_options[k]
    if kind == nil then
      if record_iter_unsupported[k] then
        error(('%s: %s is not supported (%s is not built; see help(mx.io.ImageRecordIter))')
          :format(who, k, record_iter_unsupported[k]), 3)
      end
      error(('%s: unknown option %s (see help(mx.io.ImageRecordIter))'):format(who, tostring(k)), 3)
    end
    if kind == 'path' or kind == 'string' then
      if type(v) ~= 'string' then error(('%s: %s must be a string, got %s'):format(who, k, shown(v)), 3) end
    elseif kind == 'bool' then
      if type(v) ~= 'boolean' then
        error(('%s: %s must be true or false, got %s'):format(who, k, shown(v)), 3)
      end
    elseif kind == 'count' then
      check_count(v, who, k, 1, 2 ^ 31 - 1, 3)
    elseif kind == 'int' then
      if type(v) ~= 'number' or v ~= v or v % 1 ~= 0 then
        error(('%s: %s must be a whole number, got %s'):format(who, k, shown(v)), 3)
      end
    elseif kind == 'number' then
      if type(v) ~= 'number' or v ~= v then
        error(('%s: %s must be a number, got %s'):format(who, k, shown(v)), 3)
      end
    end
  end

  function M.ImageRecordIter(opts)
    local who = 'ImageRecordIter'
    if type(opts) ~= 'table' then
      error(who .. ': expected a table of options, got ' .. shown(opts), 2)
    end
    local c = {}
    for k, v in pairs(opts) do
      check_record_iter_option(k, v)
      c[k] = v
    end
    if c.path_imgrec == nil then error(who .. ': path_imgrec is required', 2) end
    if c.batch_size == nil then error(who .. ': batch_size is required', 2) end
    local ds = c.data_shape
    if type(ds) ~= 'table' or #ds ~= 3 then
      error(who .. ': data_shape must be {channels, height, width}, got ' .. shown(ds), 2)
    end
    for i = 1, 3 do check_count(ds[i], who, 'data_shape[' .. i .. ']', 1, 2 ^ 31 - 1, 2) end
    c.channels, c.height, c.width, c.data_shape = ds[1], ds[2], ds[3], nil
    -- round_batch (MXNet's, default true) is last_batch_handle = 'pad' either
    -- way: the last batch is filled from the start and pad counts the filler.
    c.round_batch, c.verbose = nil, nil
    -- Batches bound for a GPU are made in pinned memory (MXNet's ctx = 'gpu'
    -- or a device_id); a context or its name.
    local ctx = c.ctx
    if ctx ~= nil and type(ctx) ~= 'string' then ctx = tostring(ctx) end
    if (ctx ~= nil and ctx:match('^gpu')) or (c.device_id ~= nil and c.device_id >= 0) then
      c.ctx = ('cpu_pinned(%d)'):format(c.device_id or tonumber(ctx:match('%((%d+)%)') or 0))
    elseif ctx ~= nil then
      c.ctx = ctx
    end
    c.device_id = nil
    if (c.dtype or 'float32') == 'uint8' then
      for _, k in ipairs({ 'mean_r', 'mean_g', 'mean_b', 'std_r', 'std_g', 'std_b', 'scale' }) do
        if c[k] ~= nil then
          error(('%s: %s applies to float32 batches; dtype = uint8 gives raw pixels'):format(who, k), 2)
        end
      end
    end
    local data_name, label_name = c.data_name or 'data', c.label_name or 'softmax_label'
    c.data_name, c.label_name = nil, nil
    local native = require('tessera.io').image_record_iter(c)
    local self = setmetatable({ native = native, batch_size = c.batch_size,
      skips_reported = 0 }, ImageRecordIter)
    local lw = c.label_width or 1
    self.provide_data = { data_desc(data_name, { c.batch_size, ds[1], ds[2], ds[3] },
      c.dtype or 'float32') }
    self.provide_label = { data_desc(label_name, lw == 1 and { c.batch_size } or
      { c.batch_size, lw }, 'float32') }
    return self
  end

  function ImageRecordIter:reset()
    self.current_batch = nil
    self.native:reset()
  end

  function ImageRecordIter:next()
    local data, label, pad, index = self.native:next()
    if data == nil then
      self:report_skips()
      return nil
    end
    return { data = { data }, label = { label }, pad = pad, index = index }
  end

  -- Corrupt records skipped (skip_corrupt = true), said once per epoch on stderr.
  function ImageRecordIter:report_skips()
    local n, first = self.native:skipped()
    if n > self.skips_reported then
      io.stderr:write(('ImageRecordIter: skipped %d corrupt record%s so far (the first: %s)\n')
        :format(n, n == 1 and '' or 's', first))
      self.skips_reported = n
    end
  end
  function ImageRecordIter:num_skipped() return (self.native:skipped()) end
  function ImageRecordIter:num_records() return self.native:num_records() end
  function ImageRecordIter:num_batches() return self.native:num_batches() end
  function ImageRecordIter:close() self.native:close() end

  help.doc(M.ImageRecordIter, [[
mx.io.ImageRecordIter{path_imgrec =, data_shape = {c, h, w}, batch_size =, ...}
Batches of images from a RecordIO file (im2rec's .rec, with its .idx when
given), read, decoded and augmented on preprocess_threads threads in C++,
prefetch_buffer batches ahead; data (batch, c, h, w) float32 (or uint8 with
dtype = 'uint8'), label (batch) or (batch, label_width). MXNet's options:
  path_imgidx      the index: shuffles and shards without reading the file through
  label_width = 1  labels per image (records packed with a label vector)
  resize = -1      shorter edge to this first
  rand_crop        random crop position (else centred); rand_mirror, mirror
  min_random_scale, max_random_scale, max_aspect_ratio (min_aspect_ratio),
  pad, fill_value, min_crop_size, max_crop_size, inter_method = 1
  random_resized_crop with min_random_area, max_random_area and the aspect
                   ratio range (Inception's crop, as gluon's RandomResizedCrop)
  mean_r/g/b, std_r/g/b, scale   (x - mean) * scale / std, per channel (RGB)
  shuffle, seed, shuffle_chunk_size (MB: chunks of the file, then records)
  num_parts, part_index   this worker's share of the records
  preprocess_threads = 4, prefetch_buffer = 4
  round_batch, last_batch_handle = 'pad' | 'discard' | 'roll_over'
  ctx = mx.gpu(i) (or device_id): batches in pinned memory for that GPU
  skip_corrupt     a record that fails to read or decode is counted
                   (it:num_skipped(), said on stderr) and replaced by the next
Not built: rotation, shear, HSL/color jitter, mean images, label lists.]])

  M.DataIter = help.doc(DataIter, [[
mx.io.DataIter: the base class of the iterators, whose methods are built on
an iterator's own reset() and next(): batches(), and MXNet's iter_next()
with the getters of the batch it moved to.

it:batches() resets, then returns a function giving each batch in turn (for
batch in it:batches() do ... end). it:iter_next() moves to the next batch
and says whether there was one; it:getdata(), getlabel(), getindex() and
getpad() (0 when the batch has none) read that batch, and are errors until
iter_next() has moved to one. An iterator of one's own defines reset() and
next() -> {data = {...}, label = {...}, pad = n} or nil, and gets the rest
with setmetatable(it, mx.io.DataIter); Module:fit binds from its
provide_data and provide_label.]])
  help.doc(M, [[
mx.io: NDArrayIter, MNISTIter, CSVIter, ImageRecordIter, PrefetchingIter, DataDesc,
read_mnist.
An iterator has reset(), next() -> {data = {..}, label = {..}, pad = n,
index = {..}} or nil, batches() for loops, MXNet's iter_next() with
getdata(), getlabel(), getpad(), getindex(), and provide_data and
provide_label (lists of DataDesc).]])
  return M
end
