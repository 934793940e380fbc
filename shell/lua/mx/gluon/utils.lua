-- mx.gluon.utils: split_and_load, clip_global_norm (MXNet's gluon/utils.py).
local help = require 'tessera.help'

return function(mx)
  local U = {}

  -- Splits data along batch_axis (1-based) into len(ctx_list) near-equal
  -- slices, each copied to its context.
  function U.split_data(data, num_slice, batch_axis, even_split)
    batch_axis = batch_axis or 1
    local size = data.shape[batch_axis]
    if even_split ~= false and size % num_slice ~= 0 then
      error(('split_data: %d items along axis %d do not split evenly into %d slices '
        .. '(even_split = false allows uneven ones)'):format(size, batch_axis, num_slice), 2)
    end
    if size < num_slice then
      error(('split_data: %d items cannot fill %d slices'):format(size, num_slice), 2)
    end
    local step = math.floor(size / num_slice)
    local out = {}
    for i = 1, num_slice do
      local b = (i - 1) * step
      local e = i == num_slice and size or i * step
      out[i] = mx.nd.slice_axis(data, { axis = batch_axis, begin = b, ['end'] = e })
    end
    return out
  end

  function U.split_and_load(data, ctx_list, batch_axis, even_split)
    if not mx.nd.is_ndarray(data) then data = mx.nd.array(data) end
    if mx.context.is_context(ctx_list) then ctx_list = { ctx_list } end
    if #ctx_list == 1 then return { data:as_in_context(ctx_list[1]) } end
    local slices = U.split_data(data, #ctx_list, batch_axis, even_split)
    for i, s in ipairs(slices) do slices[i] = s:as_in_context(ctx_list[i]) end
    return slices
  end

  -- Scales the arrays in place so that their joint 2-norm is at most
  -- max_norm; returns the norm before scaling.
  function U.clip_global_norm(arrays, max_norm)
    if #arrays == 0 then error('clip_global_norm: no arrays given', 2) end
    local total = 0
    for _, a in ipairs(arrays) do
      local n = mx.nd.norm(a):totable()[1]
      total = total + n * n
    end
    total = math.sqrt(total)
    if total ~= total or total == math.huge then
      io.stderr:write('warning: clip_global_norm: the norm is not finite\n')
    end
    local scale = max_norm / (total + 1e-8)
    if scale < 1 then
      for _, a in ipairs(arrays) do mx.nd._mul_scalar(a, { scalar = scale, out = a }) end
    end
    return total
  end

  help.doc(U, [[
mx.gluon.utils: split_data(data, n, batch_axis = 1, even_split = true),
split_and_load(data, ctx_list, batch_axis = 1, even_split = true) -> one
slice per context, clip_global_norm(arrays, max_norm) -> the norm (arrays
scaled in place when it exceeds max_norm).]])
  return U
end
