-- MNIST (or Fashion-MNIST) IDX files to RecordIO: every image a gray PNG
-- record with its label, as im2rec would pack the same images.
--   tessera scripts/tools/mnist_to_rec.lua --data DIR --prefix PREFIX [--num-examples N]
-- writes PREFIX_train.rec/.idx (from train-*) and PREFIX_test.rec/.idx (t10k-*).
local opts = { data = 'data/mnist', prefix = 'mnist', num_examples = 0 }
local args = arg or {}
local i = 1
while i <= #args do
  local key = args[i]:match('^%-%-([%w%-]+)$')
  if not key or args[i + 1] == nil or opts[key:gsub('%-', '_')] == nil then
    error('usage: mnist_to_rec.lua --data DIR --prefix PREFIX [--num-examples N]', 0)
  end
  key = key:gsub('%-', '_')
  opts[key] = type(opts[key]) == 'number' and tonumber(args[i + 1]) or args[i + 1]
  i = i + 2
end

local reader = require 'tessera.io'
local ffi = require 'ffi'

local function convert(images, labels, out)
  local ibytes, idims = reader.read_idx(opts.data .. '/' .. images, 3, 'mnist_to_rec')
  local lbytes = reader.read_idx(opts.data .. '/' .. labels, 1, 'mnist_to_rec')
  local n, h, w = idims[1], idims[2], idims[3]
  if opts.num_examples > 0 then n = math.min(n, opts.num_examples) end
  local px = ffi.cast('const uint8_t *', ibytes)
  local rec = mx.recordio.MXIndexedRecordIO(out .. '.idx', out .. '.rec', 'w')
  local img = mx.nd.zeros({ h, w, 1 }, { dtype = 'uint8' })
  local plane = h * w
  for k = 0, n - 1 do
    ffi.copy(img:data_ptr(), px + k * plane, plane)
    local label = lbytes:byte(k + 1)
    rec:write_idx(k, mx.recordio.pack_img(mx.recordio.IRHeader(0, label, k, 0), img, 95, '.png'))
    if (k + 1) % 10000 == 0 or k + 1 == n then
      io.stderr:write(('\r%s.rec: %d/%d images'):format(out, k + 1, n))
    end
  end
  io.stderr:write('\n')
  rec:close()
  return n
end

convert('train-images-idx3-ubyte.gz', 'train-labels-idx1-ubyte.gz', opts.prefix .. '_train')
convert('t10k-images-idx3-ubyte.gz', 't10k-labels-idx1-ubyte.gz', opts.prefix .. '_test')
