-- The scoped forms of mx.autograd: each sets a mode, calls fn, and restores
-- the mode when fn returns or raises; they return what fn returns.
--
-- The modes belong to the code inside the block. fn runs as a coroutine of
-- its own, so a coroutine.yield inside it (a generator, a scheduler of
-- coroutines) suspends the block: the modes of the code outside come back
-- for as long as it stays suspended, and the block's return when it is
-- resumed. A coroutine abandoned inside a block, never resumed, leaves
-- nothing switched on. PyTorch's grad-mode decorators treat generators the
-- same way.
local help = require 'tessera.help'

local unpack = unpack or table.unpack

local function pack(...) return { n = select('#', ...), ... } end

local function scoped(set_rec, rec, set_train, train, fn, ...)
  assert(type(fn) == 'function', 'expected a function to run')
  local co = coroutine.create(fn)
  local args = pack(...)
  while true do
    local old_rec = set_rec and set_rec(rec)
    local old_train = set_train and set_train(train)
    local res = pack(coroutine.resume(co, unpack(args, 1, args.n)))
    if set_train then set_train(old_train) end
    if set_rec then set_rec(old_rec) end
    if not res[1] then error(res[2], 0) end
    if coroutine.status(co) == 'dead' then return unpack(res, 2, res.n) end
    -- fn yielded: pass the yield on, outside the block's modes, and carry
    -- what the resumer sends back in.
    args = pack(coroutine.yield(unpack(res, 2, res.n)))
  end
end

return function(mx)
  local ag = mx.autograd
  local set_rec, set_train = ag.set_recording, ag.set_training

  ag.record = help.doc(function(fn, train_mode)
    if train_mode == nil then train_mode = true end
    return scoped(set_rec, true, set_train, train_mode, fn)
  end, [[
mx.autograd.record(fn, train_mode) -> what fn returns. NDArray calls inside fn
are recorded for y:backward(); train_mode (default true) runs them in training
mode (Dropout drops, BatchNorm uses batch statistics).
  x:attach_grad()
  local y = mx.autograd.record(function() return (x * x):sum() end)
  y:backward(); print(x.grad)]])
  ag.pause = help.doc(function(fn, train_mode)
    return scoped(set_rec, false, set_train, train_mode or false, fn)
  end, 'mx.autograd.pause(fn, train_mode) -> runs fn without recording (inside record)')
  ag.train_mode = help.doc(function(fn)
    return scoped(nil, nil, set_train, true, fn)
  end, 'mx.autograd.train_mode(fn) -> runs fn with ops in training mode')
  ag.predict_mode = help.doc(function(fn)
    return scoped(nil, nil, set_train, false, fn)
  end, 'mx.autograd.predict_mode(fn) -> runs fn with ops in inference mode')
end
