-- What the scripts that time a forward and a backward share (lstm.lua,
-- gpu_conv.lua): one warm-up step, then `reps` steps, each pass timed on
-- its own (a pass waits for its work before its clock stops), and the
-- medians in milliseconds. Loaded with dofile from the scripts' folder.
local M = {}

function M.median(t)
  table.sort(t)
  return t[math.floor((#t + 1) / 2)]
end

-- forward() returns what backward(y) takes.
function M.forward_backward(forward, backward, reps)
  backward(forward())
  local fwd, bwd = {}, {}
  for i = 1, reps do
    local t0 = mx.mod.now()
    local y = forward()
    local t1 = mx.mod.now()
    backward(y)
    fwd[i], bwd[i] = t1 - t0, mx.mod.now() - t1
  end
  return M.median(fwd) * 1e3, M.median(bwd) * 1e3
end

return M
