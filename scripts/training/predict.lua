-- Classifies MNIST images with a checkpoint (this project's or MXNet's) and
-- prints the accuracy.
--   tessera scripts/training/predict.lua PREFIX EPOCH IMAGES.idx[.gz] LABELS.idx[.gz]
--     [--flat] [--batch-size 100]
local a = arg or {}
if #a < 4 then
  error('usage: predict.lua PREFIX EPOCH IMAGES LABELS [--flat] [--batch-size N]', 0)
end
local prefix, epoch, images, labels = a[1], tonumber(a[2]), a[3], a[4]
local flat, batch = false, 100
local i = 5
while i <= #a do
  if a[i] == '--flat' then flat = true; i = i + 1
  elseif a[i] == '--batch-size' then batch = tonumber(a[i + 1]); i = i + 2
  else error('unknown option ' .. a[i], 0) end
end
local sym, args, aux = mx.mod.load_checkpoint(prefix, epoch)
-- A checkpoint of a flat model has a 2-D fc input: read the images flat.
local it = mx.io.MNISTIter{image = images, label = labels, batch_size = batch, flat = flat}
local mod = mx.mod.Module(sym)
mod:bind{data_shapes = it.provide_data, label_shapes = it.provide_label, for_training = false}
mod:init_params{arg_params = args, aux_params = aux}
local res = mod:score(it, 'acc')
print(('accuracy: %.4f on %d images'):format(res[1][2], it.num_data))
