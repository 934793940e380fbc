-- mx.io: NDArrayIter (pad, discard, roll_over, shuffle), MNISTIter on small
-- IDX files written here, CSVIter, PrefetchingIter, and clear errors.

local function rows(batch) return batch.label[1]:totable() end

test('NDArrayIter: pad, discard and roll_over', function()
  local x = mx.nd.arange(0, 10):reshape({5, 2})
  local y = mx.nd.arange(0, 5)
  local it = mx.io.NDArrayIter{data = x, label = y, batch_size = 2}
  local desc = it.provide_data[1]
  assert_eq(#it.provide_data, 1)
  assert_eq({desc.name, desc.shape, desc.dtype, desc.layout}, {'data', {2, 2}, 'float32', 'NCHW'})
  assert_eq(it.provide_label[1].name, 'softmax_label')
  local got, pads = {}, {}
  for b in it:batches() do got[#got + 1] = rows(b); pads[#pads + 1] = b.pad end
  assert_eq(got, {{0, 1}, {2, 3}, {4, 0}})
  assert_eq(pads, {0, 0, 1})
  local d = mx.io.NDArrayIter{data = x, label = y, batch_size = 2, last_batch_handle = 'discard'}
  local n = 0
  for _ in d:batches() do n = n + 1 end
  assert_eq(n, 2)
  local r = mx.io.NDArrayIter{data = x, label = y, batch_size = 2, last_batch_handle = 'roll_over'}
  local epochs = {}
  for e = 1, 2 do
    local seen = {}
    for b in r:batches() do seen[#seen + 1] = rows(b) end
    epochs[e] = seen
  end
  assert_eq(epochs[1], {{0, 1}, {2, 3}})
  assert_eq(epochs[2], {{4, 0}, {1, 2}, {3, 4}})
end)

test('NDArrayIter: shuffle is a seeded permutation; named inputs', function()
  local y = mx.nd.arange(0, 8)
  local function order(seed)
    local it = mx.io.NDArrayIter{data = {img = y:reshape({8, 1})}, label = y, batch_size = 4,
      shuffle = true, seed = seed}
    local all = {}
    for b in it:batches() do for _, v in ipairs(rows(b)) do all[#all + 1] = v end end
    return all, it
  end
  local a, it = order(3)
  assert_eq(order(3), a)
  local sorted = {}
  for i, v in ipairs(a) do sorted[i] = v end
  table.sort(sorted)
  assert_eq(sorted, {0, 1, 2, 3, 4, 5, 6, 7})
  assert_eq(it.provide_data[1].name, 'img')
  assert_error(function() mx.io.NDArrayIter{data = y, label = mx.nd.zeros({3}), batch_size = 2} end,
    'label')
  assert_error(function() mx.io.NDArrayIter{data = y, last_batch_handle = 'drop'} end, 'pad')
end)

local idx_fixture = dofile((debug.getinfo(1, 'S').source:match('^@(.*)/lua/[^/]*$') or 'tests')
  .. '/data/lua/idx_fixture.lua')
local write_idx = idx_fixture.write

test('MNISTIter reads IDX files: scaling, shapes, labels, errors', function()
  local dir = os.tmpname()
  os.remove(dir)
  local img, lab = dir .. '-images', dir .. '-labels'
  local pixels = {}
  for i = 1, 3 * 2 * 2 do pixels[i] = (i * 20) % 256 end
  write_idx(img, 2051, {3, 2, 2}, pixels)
  write_idx(lab, 2049, {3}, {7, 0, 9})
  local it = mx.io.MNISTIter{image = img, label = lab, batch_size = 3}
  local b = it:next()
  assert_eq(b.data[1].shape, {3, 1, 2, 2})
  assert_eq(rows(b), {7, 0, 9})
  mx.test_utils.assert_almost_equal(b.data[1]:reshape({12}), (function()
    local t = {}
    for i, p in ipairs(pixels) do t[i] = p / 255 end
    return t
  end)())
  local flat = mx.io.MNISTIter{image = img, label = lab, batch_size = 2, flat = true}
  assert_eq(flat.provide_data[1].shape, {2, 4})
  write_idx(lab, 2049, {2}, {1, 2})
  assert_error(function() mx.io.MNISTIter{image = img, label = lab} end, '3 images but')
  write_idx(lab, 2051, {3}, {1, 2, 3})
  assert_error(function() mx.io.MNISTIter{image = img, label = lab} end, 'magic')
  write_idx(img, 2051, {3, 28, 28}, {1, 2, 3})
  write_idx(lab, 2049, {3}, {1, 2, 3})
  assert_error(function() mx.io.MNISTIter{image = img, label = lab} end, 'truncated')
  os.remove(img)
  os.remove(lab)
  assert_error(function() mx.io.MNISTIter{image = img, label = lab} end, 'Download')
end)

test('CSVIter and PrefetchingIter', function()
  local path = os.tmpname()
  local f = assert(io.open(path, 'w'))
  f:write('1,2\n3,4\n5,6\n')
  f:close()
  local lpath = os.tmpname()
  f = assert(io.open(lpath, 'w'))
  f:write('0\n1\n0\n')
  f:close()
  local it = mx.io.CSVIter{data_csv = path, data_shape = {2}, label_csv = lpath, batch_size = 3}
  local b = it:next()
  assert_eq(b.data[1]:totable(), {{1, 2}, {3, 4}, {5, 6}})
  assert_eq(rows(b), {0, 1, 0})
  local p = mx.io.PrefetchingIter(mx.io.NDArrayIter{data = mx.nd.arange(0, 6), label = mx.nd.arange(0, 6),
    batch_size = 2})
  local all = {}
  for bb in p:batches() do all[#all + 1] = rows(bb) end
  assert_eq(all, {{0, 1}, {2, 3}, {4, 5}})
  f = assert(io.open(path, 'w'))
  f:write('1,x\n')
  f:close()
  assert_error(function() mx.io.CSVIter{data_csv = path} end, 'not a number')
  os.remove(path)
  os.remove(lpath)
end)

-- Every batch of one epoch, as plain tables: data arrays, labels, pad, index.
local function epoch_tables(it)
  local out = {}
  for b in it:batches() do
    local e = {pad = b.pad, index = b.index, data = {}, label = {}}
    for i, a in ipairs(b.data) do e.data[i] = a:totable() end
    for i, a in ipairs(b.label) do e.label[i] = a:totable() end
    out[#out + 1] = e
  end
  return out
end

test('PrefetchingIter on its thread gives the batches of the iterator it wraps', function()
  local x = mx.nd.arange(0, 33):reshape({11, 3})
  local w = mx.nd.arange(0, 22, 1, {dtype = 'int32'}):reshape({11, 2})
  local y = mx.nd.arange(100, 111)
  for _, handle in ipairs({'pad', 'discard', 'roll_over'}) do
    for _, depth in ipairs({1, 2, 5}) do
      local function make()
        return mx.io.NDArrayIter{data = {a = x, b = w}, label = y, batch_size = 4, shuffle = true,
          seed = 7, last_batch_handle = handle}
      end
      local plain, p = make(), mx.io.PrefetchingIter(make(), {depth = depth})
      assert(p.native, 'an NDArrayIter is prefetched on the background thread')
      for _ = 1, 3 do  -- epochs: shuffles and roll_over carries repeat
        assert_eq(epoch_tables(p), epoch_tables(plain))
      end
    end
  end
end)

test('PrefetchingIter: a reset mid-epoch starts over; bad depth is an error', function()
  local x = mx.nd.arange(0, 12):reshape({6, 2})
  local p = mx.io.PrefetchingIter(mx.io.NDArrayIter{data = x, batch_size = 2}, {depth = 3})
  p:reset()
  assert_eq(p:next().data[1]:totable(), {{0, 1}, {2, 3}})
  p:reset()
  local all = {}
  for b in function() return p:next() end do all[#all + 1] = b.data[1]:totable() end
  assert_eq(all, {{{0, 1}, {2, 3}}, {{4, 5}, {6, 7}}, {{8, 9}, {10, 11}}})
  assert_eq(p:next(), nil)
  assert_error(function() mx.io.PrefetchingIter(mx.io.NDArrayIter{data = x}, {depth = 0}) end,
    'depth must be')
end)

test('PrefetchingIter waits for Lua work on its source, and passes its errors on', function()
  local x = mx.nd.zeros({4, 2})
  mx.engine.push(function()
    local p = x:data_ptr()
    for i = 0, 7 do p[i] = i + 1 end
  end, {write = {x}})
  local p = mx.io.PrefetchingIter(mx.io.NDArrayIter{data = x, batch_size = 2})
  assert_eq(p:next().data[1]:totable(), {{1, 2}, {3, 4}})
  local bad = mx.nd.zeros({4, 2})
  mx.engine.push(function() error('bad source') end, {write = {bad}, name = 'fill_bad'})
  local q = mx.io.PrefetchingIter(mx.io.NDArrayIter{data = bad, batch_size = 2})
  local b = q:next()
  assert_error(function() b.data[1]:totable() end, 'bad source')
  pcall(mx.nd.waitall)
end)

test('PrefetchingIter over a Lua iterator reads it one batch ahead', function()
  local n = 0
  local lua_iter = setmetatable({batch_size = 1}, {__index = mx.io.DataIter})
  function lua_iter:reset() n = 0 end
  function lua_iter:next()
    if n == 3 then return nil end
    n = n + 1
    return {data = {mx.nd.full({1}, n)}, label = {}, pad = 0}
  end
  local p = mx.io.PrefetchingIter(lua_iter)
  assert(not p.native)
  local got = {}
  for b in p:batches() do got[#got + 1] = b.data[1]:asscalar() end
  assert_eq(got, {1, 2, 3})
end)

-- A FIFO at a fresh temporary name (nil where mkfifo is missing).
local function make_fifo()
  local path = os.tmpname()
  os.remove(path)
  if not os.execute('mkfifo ' .. path .. ' 2>/dev/null') then return nil end
  return path
end

test('batch_size, seed and num_examples: whole numbers in range, or an error naming them', function()
  local x = mx.nd.arange(0, 10):reshape({5, 2})
  for _, bad in ipairs({0, -1, 2.5, 0 / 0, math.huge, -math.huge, '10', true, {}, 1e9, 6}) do
    local err = assert_error(function() mx.io.NDArrayIter{data = x, batch_size = bad} end,
      'NDArrayIter: batch_size')
    assert(err:find(tostring(type(bad) == 'table' and 'table' or bad), 1, true), err)
  end
  assert_error(function() mx.io.NDArrayIter{data = x, batch_size = 1e9} end, 'more than the 5 rows')
  assert_error(function() mx.io.NDArrayIter{data = x, batch_size = '10'} end, "'10' %(a string%)")
  for _, bad in ipairs({0 / 0, 1.5, math.huge, 'x'}) do
    assert_error(function() mx.io.NDArrayIter{data = x, shuffle = true, seed = bad} end,
      'NDArrayIter: seed must be a whole number')
  end
  assert_error(function() mx.io.NDArrayIter(5) end, 'expected a table of options')
  -- MNISTIter and CSVIter say their own name, before reading any file.
  for _, bad in ipairs({math.huge, 0 / 0, 2.5, '10'}) do
    assert_error(function() mx.io.MNISTIter{image = 'none', label = 'none', batch_size = bad} end,
      'MNISTIter: batch_size')
    assert_error(function() mx.io.CSVIter{data_csv = 'none', batch_size = bad} end,
      'CSVIter: batch_size')
  end
  assert_error(function() mx.io.MNISTIter{image = 'none', label = 'none', seed = 0 / 0} end,
    'MNISTIter: seed')
  assert_error(function() mx.io.MNISTIter{image = 'none', label = 'none', num_examples = -1} end,
    'MNISTIter: num_examples')
  -- Good values still work: the whole data in one batch.
  assert_eq(mx.io.NDArrayIter{data = x, batch_size = 5}:next().data[1].shape, {5, 2})
end)

test('PrefetchingIter refuses what is not an iterator', function()
  for _, bad in ipairs({false, 3, 'it', {}}) do
    assert_error(function() mx.io.PrefetchingIter(bad) end, 'PrefetchingIter: expected an iterator')
  end
  assert_error(function() mx.io.PrefetchingIter() end, 'got nil')
  local it = mx.io.NDArrayIter{data = mx.nd.zeros({4, 2}), batch_size = 2}
  for _, bad in ipairs({0 / 0, 1.5, 2 ^ 40, '2'}) do
    assert_error(function() mx.io.PrefetchingIter(it, {depth = bad}) end, 'depth must be')
  end
end)

test('an IDX header claiming more than the file holds is truncated, before allocating it', function()
  local img = os.tmpname()
  local lab = os.tmpname()
  write_idx(lab, 2049, {2}, {1, 2})
  -- 100 x 1000 x 1000 pixels claimed, 4 present: 100 MB if it were believed.
  write_idx(img, 2051, {100, 1000, 1000}, {1, 2, 3, 4})
  local before = collectgarbage('count')
  local err = assert_error(function() mx.io.MNISTIter{image = img, label = lab} end, 'truncated')
  assert(err:find(img, 1, true), err)
  assert(err:find('100x1000x1000', 1, true), err)
  assert(collectgarbage('count') - before < 16 * 1024, 'no large buffer was made')
  -- The same through gzip: the buffer grows with the data that arrives.
  if os.execute('gzip -f ' .. img .. ' 2>/dev/null') then
    err = assert_error(function() mx.io.MNISTIter{image = img, label = lab} end, 'truncated')
    assert(err:find(img .. '.gz', 1, true), err)
    os.remove(img .. '.gz')
  end
  os.remove(img)
  os.remove(lab)
end)

test('loaders refuse FIFOs, directories and devices by name, without blocking', function()
  local fifo = make_fifo()
  local dir = os.tmpname()
  os.remove(dir)
  assert(os.execute('mkdir ' .. dir))
  local lab = os.tmpname()
  write_idx(lab, 2049, {1}, {1})
  for _, path in ipairs({fifo, dir, '/dev/null'}) do
    if path then
      assert_error(function() mx.io.MNISTIter{image = path, label = lab} end,
        path .. ' is not a regular file')
      assert_error(function() mx.io.CSVIter{data_csv = path} end, path .. ' is not a regular file')
      assert_error(function() mx.nd.load(path) end, path .. ' is not a regular file')
      assert_error(function() mx.sym.load(path) end, path .. ' is not a regular file')
    end
  end
  -- A NUL byte would cut the path to another file's: refused.
  assert_error(function() mx.io.CSVIter{data_csv = lab .. '\0x'} end, 'CSVIter: the path .* NUL byte')
  assert_error(function() mx.io.MNISTIter{image = lab .. '\0x', label = lab} end,
    'MNISTIter: the path .* NUL byte')
  if fifo then os.remove(fifo) end
  os.remove(dir)
  os.remove(lab)
end)

test("MXNet's DataIter methods: iter_next, getdata, getlabel, getpad, getindex", function()
  local x = mx.nd.arange(0, 10):reshape({5, 2})
  local y = mx.nd.arange(0, 5)
  for _, it in ipairs({
    mx.io.NDArrayIter{data = x, label = y, batch_size = 2},
    mx.io.PrefetchingIter(mx.io.NDArrayIter{data = x, label = y, batch_size = 2}),
  }) do
    assert_error(function() it:getdata() end, 'getdata: no current batch')
    local labels, pads, index = {}, {}, {}
    while it:iter_next() do
      assert_eq(it:getdata()[1].shape, {2, 2})
      labels[#labels + 1] = it:getlabel()[1]:totable()
      pads[#pads + 1] = it:getpad()
      index[#index + 1] = it:getindex()
    end
    assert_eq(labels, {{0, 1}, {2, 3}, {4, 0}})
    assert_eq(pads, {0, 0, 1})
    assert_eq(index, {{0, 1}, {2, 3}, {4, 0}})
    assert_eq(it:iter_next(), false)
    it:reset()
    assert_error(function() it:getlabel() end, 'getlabel: no current batch')
    assert_eq(it:iter_next(), true)
    assert_eq(it:getlabel()[1]:totable(), {0, 1})
  end
end)

test('provide_data and provide_label are DataDescs', function()
  local it = mx.io.NDArrayIter{data = mx.nd.zeros({6, 3}, {dtype = 'float64'}),
                               label = mx.nd.zeros({6}), batch_size = 3}
  local d, l = it.provide_data[1], it.provide_label[1]
  assert_eq({d[1], d[2], d.dtype}, {'data', {3, 3}, 'float64'})
  assert_eq({l[1], l[2], l.dtype}, {'softmax_label', {3}, 'float32'})
  assert_eq(tostring(d), 'DataDesc[data,(3,3),float64,NCHW]')
  local made = mx.io.DataDesc('x', {4, 1, 28, 28})
  assert_eq({made.name, made.shape, made.dtype, made.layout}, {'x', {4, 1, 28, 28}, 'float32', 'NCHW'})
  local kw = mx.io.DataDesc{name = 'y', shape = {4}, dtype = 'int32', layout = 'N'}
  assert_eq({kw[1], kw[2], kw.dtype, kw.layout}, {'y', {4}, 'int32', 'N'})
  assert_eq(mx.io.DataDesc.get_batch_axis('TNC'), 2)
  assert_error(function() mx.io.DataDesc(3, {1}) end, 'DataDesc: name must be a string')
  -- a Module binds from them as from {name, shape} pairs
  local net = mx.sym.FullyConnected{data = mx.sym.Variable('data'), num_hidden = 2, name = 'fc'}
  local mod = mx.mod.Module(net, {label_names = {}})
  mod:bind{data_shapes = it.provide_data}
  assert_eq(mod.exec.arg_dict.data.shape, {3, 3})
end)

test('num_parts / part_index: contiguous shares that cover every row once', function()
  local x = mx.nd.arange(0, 10):reshape({10, 1})
  local y = mx.nd.arange(100, 110)
  local seen = {}
  local sizes = {}
  for k = 0, 2 do
    local it = mx.io.NDArrayIter{data = x, label = y, batch_size = 1, num_parts = 3, part_index = k}
    sizes[k + 1] = it.num_data
    for b in function() return it:next() end do seen[#seen + 1] = b.label[1]:totable()[1] end
  end
  -- part k of 3 over 10 rows: floor(10k/3) .. floor(10(k+1)/3) - 1
  assert_eq(sizes, {3, 3, 4})
  table.sort(seen)
  assert_eq(seen, {100, 101, 102, 103, 104, 105, 106, 107, 108, 109})
  local last = mx.io.NDArrayIter{data = x, batch_size = 2, num_parts = 3, part_index = 2}
  assert_eq(last:next().data[1]:reshape({2}):totable(), {6, 7})
  assert_error(function() mx.io.NDArrayIter{data = x, num_parts = 3, part_index = 3} end,
    'part_index must be a whole number in 0..2')
  assert_error(function() mx.io.NDArrayIter{data = x, num_parts = 0} end, 'num_parts')
  assert_error(function() mx.io.NDArrayIter{data = mx.nd.ones({2, 1}), num_parts = 3, part_index = 0} end,
    'holds none of the 2 rows')
  assert_error(function() mx.io.NDArrayIter{data = x, batch_size = 4, num_parts = 3} end,
    'batch_size 4 is more than the 3 rows')
  -- MNISTIter and CSVIter share the same way.
  local dir = os.tmpname()
  os.remove(dir)
  local img, lab = dir .. '-images', dir .. '-labels'
  local pixels = {}
  for i = 1, 4 * 2 * 2 do pixels[i] = i end
  write_idx(img, 2051, {4, 2, 2}, pixels)
  write_idx(lab, 2049, {4}, {3, 1, 4, 1})
  local it = mx.io.MNISTIter{image = img, label = lab, batch_size = 2, num_parts = 2, part_index = 1}
  assert_eq(rows(it:next()), {4, 1})
  os.remove(img)
  os.remove(lab)
  local csv = os.tmpname()
  local f = assert(io.open(csv, 'w'))
  f:write('1,2\n3,4\n5,6\n')
  f:close()
  local c = mx.io.CSVIter{data_csv = csv, data_shape = {2}, batch_size = 1, num_parts = 3, part_index = 1}
  assert_eq(c:next().data[1]:totable(), {{3, 4}})
  os.remove(csv)
end)
