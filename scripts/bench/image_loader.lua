-- Images per second of mx.io.ImageRecordIter from Lua, as a training script
-- sees them: random resized crop to 224, mirror, normalise, batches of 64.
--   tessera scripts/bench/image_loader.lua REC IDX [THREADS=2] [EPOCHS=3]
-- One warm-up epoch, then the best of EPOCHS (noise only slows a run down).
local rec, idx = arg[1], arg[2]
local threads, epochs = tonumber(arg[3] or 2), tonumber(arg[4] or 3)
local dtype = arg[5] or 'float32'
local opts = {path_imgrec = rec, path_imgidx = idx, data_shape = {3, 224, 224}, batch_size = 64,
  random_resized_crop = true, min_random_area = 0.08, max_aspect_ratio = 4 / 3,
  min_aspect_ratio = 3 / 4, rand_mirror = true, shuffle = true, preprocess_threads = threads,
  last_batch_handle = 'discard', dtype = dtype}
if dtype == 'float32' then
  opts.mean_r, opts.mean_g, opts.mean_b = 123.68, 116.28, 103.53
  opts.std_r, opts.std_g, opts.std_b = 58.395, 57.12, 57.375
end
local it = mx.io.ImageRecordIter(opts)
local function epoch()
  local n, start = 0, mx.mod.now()
  for b in it:batches() do n = n + b.data[1].shape[1] - b.pad end
  return n / (mx.mod.now() - start)
end
epoch()
local best = 0
for _ = 1, epochs do best = math.max(best, epoch()) end
print(('image_record_iter_lua_%s_%dt: %.1f images/s'):format(dtype, threads, best))
