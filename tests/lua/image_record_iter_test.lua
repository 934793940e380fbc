-- mx.io.ImageRecordIter: values against images computed here, the same
-- batches whatever the threads (a randomized check against one thread),
-- shuffling, shards, the last batch, labels, and bad records and options.

-- Image k: h x w RGB with values that tell the image, row and column apart.
local function image(k, h, w)
  local rows = {}
  for y = 1, h do
    rows[y] = {}
    for x = 1, w do rows[y][x] = {(k * 37 + y * 7) % 256, (x * 11 + k) % 256, (y * x + k * 3) % 256} end
  end
  return rows
end

-- n records of h x w PNG images (lossless, so crops can be found exactly);
-- image k has label k + 0.5 and key k.
local function make_records(n, h, w, opts)
  opts = opts or {}
  local rec, idx = os.tmpname(), os.tmpname()
  local wr = mx.recordio.MXIndexedRecordIO(idx, rec, 'w')
  for k = 0, n - 1 do
    local label = opts.label_width and {} or k + 0.5
    if opts.label_width then for j = 1, opts.label_width do label[j] = k * 10 + j end end
    local img = mx.nd.array(image(k, h, w), {dtype = 'uint8'})
    wr:write_idx(k, mx.recordio.pack_img(mx.recordio.IRHeader(0, label, k, 0), img, 95, '.png'))
  end
  wr:close()
  return rec, idx
end

local function assert_true(cond, msg)
  if not cond then error(msg or 'assertion failed', 2) end
end

local function cleanup(...)
  for _, p in ipairs({...}) do os.remove(p) end
end

local function epoch(it)
  local out = {}
  for b in it:batches() do out[#out + 1] = b end
  return out
end

test('centred crops, normalised as MXNet: (x - mean) * scale / std, CHW', function()
  local rec, idx = make_records(5, 6, 8)
  local it = mx.io.ImageRecordIter{path_imgrec = rec, path_imgidx = idx, data_shape = {3, 4, 4},
    batch_size = 2, mean_r = 10, mean_g = 20, mean_b = 30, std_r = 2, std_g = 4, std_b = 5,
    scale = 0.5, preprocess_threads = 2}
  assert_eq(it.provide_data[1].name, 'data')
  assert_eq(it.provide_data[1].shape, {2, 3, 4, 4})
  assert_eq(it.provide_label[1].shape, {2})
  local batches = epoch(it)
  assert_eq(#batches, 3)
  assert_eq(batches[3].pad, 1)
  assert_eq(batches[1].label[1]:totable(), {0.5, 1.5})
  assert_eq(batches[3].label[1]:totable(), {4.5, 0.5})  -- filled from the start
  assert_eq(batches[2].index, {2, 3})
  local mean, std = {10, 20, 30}, {2, 4, 5}
  for bi, b in ipairs(batches) do
    local d = b.data[1]:totable()
    for r = 1, 2 do
      local k = b.index[r]
      local src = image(k, 6, 8)
      for c = 1, 3 do
        for y = 1, 4 do
          for x = 1, 4 do  -- the centre: x0 = (8 - 4) / 2, y0 = (6 - 4) / 2
            local want = (src[y + 1][x + 2][c] - mean[c]) * 0.5 / std[c]
            assert_near(d[r][c][y][x], want, 1e-5)
          end
        end
      end
    end
    assert_eq(b.data[1].dtype, 'float32', 'batch ' .. bi)
  end
  cleanup(rec, idx)
end)

-- Where the row (c, h, w) of a batch sits in image k: the offset and
-- mirroring that reproduce it exactly, or nil.
local function find_crop(row, k, h, w, ch, cw)
  local src = image(k, h, w)
  for mirror = 0, 1 do
    for y0 = 0, h - ch do
      for x0 = 0, w - cw do
        local ok = true
        for c = 1, 3 do
          for y = 1, ch do
            for x = 1, cw do
              local sx = mirror == 1 and (cw - x + 1) or x
              if row[c][y][x] ~= src[y0 + y][x0 + sx][c] then ok = false break end
            end
            if not ok then break end
          end
          if not ok then break end
        end
        if ok then return y0, x0, mirror end
      end
    end
  end
end

test('random crops and mirrors: real crops of the right image, the same for any threads', function()
  local rec, idx = make_records(13, 7, 9)
  local function run(threads, prefetch)
    local it = mx.io.ImageRecordIter{path_imgrec = rec, path_imgidx = idx, data_shape = {3, 5, 5},
      batch_size = 4, rand_crop = true, rand_mirror = true, shuffle = true, seed = 7,
      dtype = 'uint8', preprocess_threads = threads, prefetch_buffer = prefetch}
    local out = {}
    for e = 1, 2 do
      for b in it:batches() do
        out[#out + 1] = {data = b.data[1]:totable(), index = b.index, pad = b.pad,
          label = b.label[1]:totable()}
      end
    end
    return out
  end
  local ref = run(1, 1)
  assert_eq(#ref, 8)
  local positions, mirrors = {}, {0, 0}
  for _, b in ipairs(ref) do
    for r = 1, 4 do
      local k = b.index[r]
      assert_eq(b.label[r], k + 0.5)
      local y0, x0, m = find_crop(b.data[r], k, 7, 9, 5, 5)
      assert_true(y0 ~= nil, 'row is not a crop of image ' .. k)
      positions[y0 * 10 + x0] = true
      mirrors[m + 1] = mirrors[m + 1] + 1
    end
  end
  local distinct = 0
  for _ in pairs(positions) do distinct = distinct + 1 end
  assert_true(distinct >= 4, 'crop positions should vary, got ' .. distinct)
  assert_true(mirrors[1] > 0 and mirrors[2] > 0, 'some rows mirrored, some not')
  -- Threads and prefetch depth change nothing.
  for trial = 1, 6 do
    local threads, prefetch = math.random(1, 6), math.random(1, 5)
    assert_eq(run(threads, prefetch), ref, ('threads %d, prefetch %d'):format(threads, prefetch))
  end
  cleanup(rec, idx)
end)

test('shuffle: each epoch a new permutation, repeatable by seed; shards split the records', function()
  local rec, idx = make_records(10, 4, 4)
  local function keys(opts)
    local base = {path_imgrec = rec, path_imgidx = idx, data_shape = {3, 4, 4}, batch_size = 1,
      dtype = 'uint8', last_batch_handle = 'discard'}
    for k, v in pairs(opts) do base[k] = v end
    local it = mx.io.ImageRecordIter(base)
    local epochs = {}
    for e = 1, 2 do
      local ks = {}
      for b in it:batches() do ks[#ks + 1] = b.index[1] end
      epochs[e] = ks
    end
    return epochs
  end
  local plain = keys({})
  assert_eq(plain[1], {0, 1, 2, 3, 4, 5, 6, 7, 8, 9})
  local s = keys({shuffle = true, seed = 3})
  local sorted = {unpack(s[1])}
  table.sort(sorted)
  assert_eq(sorted, plain[1])
  assert_true(not table.concat(s[1], ','):match('^0,1,2,3,4,5,6,7,8,9$'), 'shuffled')
  assert_true(table.concat(s[1], ',') ~= table.concat(s[2], ','), 'a new order each epoch')
  assert_eq(keys({shuffle = true, seed = 3}), s)
  -- Chunked shuffle (a chunk per record here) still visits every record once.
  local c = keys({shuffle = true, seed = 3, shuffle_chunk_size = 1})
  table.sort(c[1])
  assert_eq(c[1], plain[1])
  -- Shards: disjoint, together all; without the index too (read through).
  local seen = {}
  for part = 0, 2 do
    for _, k in ipairs(keys({num_parts = 3, part_index = part})[1]) do
      assert_true(not seen[k], 'key in two parts: ' .. k)
      seen[k] = true
    end
  end
  for k = 0, 9 do assert_true(seen[k], 'key in no part: ' .. k) end
  assert_eq(keys({path_imgidx = nil})[1], plain[1])
  cleanup(rec, idx)
end)

test('the last batch: pad, discard, roll_over', function()
  local rec, idx = make_records(5, 4, 4)
  local function run(handle)
    local it = mx.io.ImageRecordIter{path_imgrec = rec, path_imgidx = idx, data_shape = {3, 4, 4},
      batch_size = 2, dtype = 'uint8', last_batch_handle = handle}
    local out = {}
    for e = 1, 2 do
      local bs = {}
      for b in it:batches() do bs[#bs + 1] = {index = b.index, pad = b.pad} end
      out[e] = bs
    end
    return out
  end
  local pad = run('pad')
  assert_eq(#pad[1], 3)
  assert_eq(pad[1][3], {index = {4, 0}, pad = 1})
  assert_eq(#run('discard')[1], 2)
  local roll = run('roll_over')
  assert_eq(#roll[1], 2)
  assert_eq(roll[2][1].index, {4, 0})  -- the record left over leads the next epoch
  assert_eq(#roll[2], 3)
  cleanup(rec, idx)
end)

test('label vectors, gray images, resize, random resized crops', function()
  local rec, idx = make_records(3, 10, 12, {label_width = 3})
  local it = mx.io.ImageRecordIter{path_imgrec = rec, path_imgidx = idx, data_shape = {1, 5, 5},
    batch_size = 3, label_width = 3, resize = 6}
  assert_eq(it.provide_label[1].shape, {3, 3})
  local b = it:next()
  assert_eq(b.label[1]:totable(), {{1, 2, 3}, {11, 12, 13}, {21, 22, 23}})
  assert_eq(b.data[1].shape, {3, 1, 5, 5})
  local rr = mx.io.ImageRecordIter{path_imgrec = rec, path_imgidx = idx, data_shape = {3, 8, 8},
    batch_size = 3, label_width = 3, random_resized_crop = true, min_random_area = 0.3,
    max_aspect_ratio = 4 / 3, min_aspect_ratio = 3 / 4, rand_mirror = true}
  local x = rr:next().data[1]
  assert_eq(x.shape, {3, 3, 8, 8})
  local mn, mx_ = x:min():asscalar(), x:max():asscalar()
  assert_true(mn >= 0 and mx_ <= 255 and mx_ > mn, 'pixel values')
  -- A label vector where one label is wanted is an error naming the record.
  local bad = mx.io.ImageRecordIter{path_imgrec = rec, path_imgidx = idx, data_shape = {3, 4, 4},
    batch_size = 1}
  assert_error(function() bad:next() end, 'record 0 at offset 0: .*label of 3 values')
  cleanup(rec, idx)
end)

test('bad records and options: clear errors, or counted skips', function()
  local rec, idx = os.tmpname(), os.tmpname()
  local wr = mx.recordio.MXIndexedRecordIO(idx, rec, 'w')
  local good = mx.nd.array(image(1, 4, 4), {dtype = 'uint8'})
  for k = 0, 5 do
    local payload = mx.recordio.pack_img(mx.recordio.IRHeader(0, k, k, 0), good, 95, '.png')
    if k == 2 then payload = payload:sub(1, 40) end                 -- a PNG cut short
    if k == 4 then payload = payload:sub(1, 24) .. 'not an image' end
    wr:write_idx(k, payload)
  end
  wr:close()
  local function it(extra)
    local o = {path_imgrec = rec, path_imgidx = idx, data_shape = {3, 4, 4}, batch_size = 3}
    for k, v in pairs(extra or {}) do o[k] = v end
    return mx.io.ImageRecordIter(o)
  end
  assert_error(function() epoch(it()) end, 'record 2 at offset %d+: image: .*PNG')
  local skipping = it({skip_corrupt = true})
  local bs = epoch(skipping)
  assert_eq(#bs, 2)
  assert_eq(skipping:num_skipped(), 2)
  for _, b in ipairs(bs) do
    for _, k in ipairs(b.index) do assert_true(k ~= 2 and k ~= 4, 'a bad record served') end
  end
  -- The iterator carries on after an error: the next epoch fails the same way.
  local failing = it()
  assert_error(function() epoch(failing) end, 'record 2')
  assert_error(function() epoch(failing) end, 'record 2')
  -- Files: cut short (read through without an index), an index past the end.
  local f = assert(io.open(rec, 'rb'))
  local bytes = f:read('*a')
  f:close()
  local cut = os.tmpname()
  f = assert(io.open(cut, 'wb'))
  f:write(bytes:sub(1, #bytes - 7))
  f:close()
  assert_error(function() mx.io.ImageRecordIter{path_imgrec = cut, data_shape = {3, 4, 4},
    batch_size = 1} end, 'not a valid RecordIO file: at offset %d+')
  local badidx = os.tmpname()
  f = assert(io.open(badidx, 'w'))
  f:write('0\t0\n1\t999999\n')
  f:close()
  assert_error(function() it({path_imgidx = badidx}) end, 'line 2: offset 999999 is past the end')
  f = assert(io.open(badidx, 'w'))
  f:write('0\tzero\n')
  f:close()
  assert_error(function() it({path_imgidx = badidx}) end, "line 1: expected 'key<TAB>offset'")
  assert_error(function() it({path_imgrec = '/nonexistent/x.rec', path_imgidx = nil}) end,
    'x.rec')
  -- Options.
  assert_error(function() it({max_rotate_angle = 10}) end, 'max_rotate_angle is not supported')
  assert_error(function() it({batch_sise = 3}) end, 'unknown option batch_sise')
  assert_error(function() it({batch_size = 0}) end, 'batch_size must be a whole number')
  assert_error(function() it({data_shape = {3, 4}}) end, 'data_shape must be')
  assert_error(function() epoch(it({data_shape = {3, 9, 9}, skip_corrupt = false})) end,
    'smaller than data_shape')
  assert_error(function() it({num_parts = 2, part_index = 2}) end, 'part_index must be')
  assert_error(function() it({dtype = 'uint8', mean_r = 3}) end, 'mean_r applies to float32')
  assert_error(function() it({last_batch_handle = 'wrap'}) end, "last_batch_handle must be")
  assert_error(function() it({inter_method = 7}) end, 'inter_method must be')
  cleanup(rec, idx, cut, badidx)
end)

test('reset mid-epoch starts over; batches for a GPU use pinned memory', function()
  local rec, idx = make_records(6, 4, 4)
  local it = mx.io.ImageRecordIter{path_imgrec = rec, path_imgidx = idx, data_shape = {3, 4, 4},
    batch_size = 2, dtype = 'uint8', prefetch_buffer = 3, preprocess_threads = 3}
  assert_eq(it:next().index, {0, 1})
  it:reset()
  assert_eq(it:next().index, {0, 1})
  assert_eq(it:next().index, {2, 3})
  assert_eq(it:num_records(), 6)
  assert_eq(it:num_batches(), 3)
  local pinned = mx.io.ImageRecordIter{path_imgrec = rec, path_imgidx = idx,
    data_shape = {3, 4, 4}, batch_size = 2, ctx = mx.gpu(0)}
  assert_eq(tostring(pinned:next().data[1].ctx), 'cpu_pinned(0)')
  -- Closing with batches in flight joins the workers cleanly.
  local busy = mx.io.ImageRecordIter{path_imgrec = rec, path_imgidx = idx, data_shape = {3, 4, 4},
    batch_size = 1, preprocess_threads = 4, prefetch_buffer = 6}
  busy:close()
  cleanup(rec, idx)
end)
