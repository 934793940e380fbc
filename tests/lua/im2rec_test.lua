-- scripts/tools/im2rec.lua: lists from a folder tree (classes, splits,
-- shuffling) and packing them into .rec/.idx that ImageIter reads.

local here = debug.getinfo(1, 'S').source:match('^@(.*)/tests/lua/') or '.'
_G.IM2REC_AS_MODULE = true
local im2rec = dofile(here .. '/scripts/tools/im2rec.lua')
_G.IM2REC_AS_MODULE = nil
local idx_fixture = dofile(here .. '/tests/data/lua/idx_fixture.lua')

local function tree()
  local root = os.tmpname()
  os.remove(root)
  for c, class in ipairs({'cat', 'dog'}) do
    os.execute(('mkdir -p %s/%s'):format(root, class))
    for k = 1, 3 do
      local rows = {}
      for y = 1, 6 do
        rows[y] = {}
        for x = 1, 8 do rows[y][x] = {c * 50 + k, y * 10, x * 10} end
      end
      local f = assert(io.open(('%s/%s/%d.png'):format(root, class, k), 'wb'))
      f:write(mx.image.imencode(mx.nd.array(rows, {dtype = 'uint8'}), {img_fmt = '.png'}))
      f:close()
    end
  end
  local f = assert(io.open(root .. '/cat/notes.txt', 'w'))  -- not an image
  f:write('x')
  f:close()
  return root
end

local function lines(path)
  local out = {}
  for l in io.lines(path) do out[#out + 1] = l end
  return out
end

test('--list: one label per sub-folder, splits, no other files', function()
  local root = tree()
  local prefix = root .. '/data'
  local made = im2rec.main({'--list', '--no-shuffle', prefix, root})
  assert_eq(#made, 1)
  assert_eq(lines(prefix .. '.lst'), {'0\t0\tcat/1.png', '1\t0\tcat/2.png', '2\t0\tcat/3.png',
    '3\t1\tdog/1.png', '4\t1\tdog/2.png', '5\t1\tdog/3.png'})
  local split = im2rec.main({'--list', '--train-ratio', '0.5', '--test-ratio', '0.2',
    '--seed', '3', root .. '/s', root})
  local counts = {}
  for _, w in ipairs(split) do counts[w.path:match('(_%a+)%.lst$')] = w.count end
  assert_eq(counts, {_test = 1, _train = 3, _val = 2})
  assert_error(function() im2rec.main({'--list', '--train-ratio', '2', prefix, root}) end,
    'sum to at most 1')
  os.execute('rm -rf ' .. root)
end)

test('packing: resized PNG records with labels and ids, read back by ImageIter', function()
  local root = tree()
  local prefix = root .. '/data'
  im2rec.main({'--list', '--no-shuffle', prefix, root})
  local packed = im2rec.main({'--resize', '3', '--encoding', '.png', '--quiet', prefix, root})
  assert_eq(packed[1].count, 6)
  local r = mx.recordio.MXIndexedRecordIO(prefix .. '.idx', prefix .. '.rec', 'r')
  assert_eq(#r.keys, 6)
  local header, img = mx.recordio.unpack_img(r:read_idx(4))
  assert_eq({header.label, header.id}, {1, 4})
  assert_eq(img.shape, {3, 4, 3})  -- the shorter side 6 -> 3, 8 -> 4
  r:close()
  local it = mx.image.ImageIter{batch_size = 6, data_shape = {3, 3, 3},
    path_imgrec = prefix .. '.rec', path_imgidx = prefix .. '.idx'}
  assert_eq(it:next().label[1]:totable(), {0, 0, 0, 1, 1, 1})
  assert_error(function() im2rec.main({root .. '/none', root}) end, 'make one with %-%-list first')
  os.execute('rm -rf ' .. root)
end)

test('mnist_to_rec: IDX images to gray PNG records that ImageIter reads back', function()
  local dir = os.tmpname()
  os.remove(dir)
  os.execute('mkdir -p ' .. dir)
  local function write_idx(name, magic, dims, bytes)
    idx_fixture.write(dir .. '/' .. name, magic, dims, bytes)
  end
  -- Three 28x28 images: image k holds k * 40 + (pixel index mod 7).
  local pixels = {}
  for k = 0, 2 do
    for p = 0, 783 do pixels[#pixels + 1] = string.char(k * 40 + p % 7) end
  end
  for _, part in ipairs({{'train', 'train'}, {'t10k', 'test'}}) do
    write_idx(part[1] .. '-images-idx3-ubyte.gz', 2051, {3, 28, 28}, table.concat(pixels))
    write_idx(part[1] .. '-labels-idx1-ubyte.gz', 2049, {3}, string.char(4, 1, 9))
  end
  local saved = rawget(_G, 'arg')
  _G.arg = {'--data', dir, '--prefix', dir .. '/m'}
  local ok, err = pcall(dofile, here .. '/scripts/tools/mnist_to_rec.lua')
  _G.arg = saved
  assert(ok, err)
  local it = mx.image.ImageIter{batch_size = 3, data_shape = {1, 28, 28},
    path_imgrec = dir .. '/m_test.rec', path_imgidx = dir .. '/m_test.idx', aug_list = {}}
  local b = it:next()
  assert_eq(b.label[1]:totable(), {4, 1, 9})
  local d = b.data[1]:totable()
  assert_eq({d[2][1][1][1], d[2][1][1][2], d[3][1][28][28]}, {40, 41, 80 + 783 % 7})
  os.execute('rm -rf ' .. dir)
end)

test('packing on several threads: the same records in list order; a bad file is named', function()
  local root = tree()
  local prefix = root .. '/data'
  im2rec.main({'--list', '--no-shuffle', prefix, root})
  local function packed_bytes(threads)
    im2rec.main({'--resize', '4', '--center-crop', '--quality', '90', '--num-thread', threads,
      '--quiet', prefix, root})
    local f = assert(io.open(prefix .. '.rec', 'rb'))
    local bytes = f:read('*a')
    f:close()
    return bytes
  end
  local one = packed_bytes('1')
  assert_eq(#one > 0, true)
  assert_eq(packed_bytes('3'), one)
  -- Centre-cropped 6x6 from 6x8, then 4x4: every record decodes to 4x4.
  local r = mx.recordio.MXIndexedRecordIO(prefix .. '.idx', prefix .. '.rec', 'r')
  local _, img = mx.recordio.unpack_img(r:read_idx(0))
  assert_eq(img.shape, {4, 4, 3})
  r:close()
  local f = assert(io.open(root .. '/dog/2.png', 'wb'))
  f:write('not an image at all')
  f:close()
  assert_error(function() im2rec.main({'--num-thread', '2', '--quiet', prefix, root}) end,
    'dog/2.png: not a JPEG or PNG')
  os.execute('rm -rf ' .. root)
end)
