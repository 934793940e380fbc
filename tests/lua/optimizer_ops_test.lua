-- Fused optimizer updates from Lua: in place with {out = weight}, the
-- states written in place, a few steps against MXNet's formulas, symbols
-- (states are auxiliary, as in MXNet), errors.

local close = function(a, b) mx.test_utils.assert_almost_equal(a, b, {rtol = 1e-5, atol = 1e-6}) end

test('sgd_update writes the weight in place with out = weight', function()
  local w = mx.nd.array({1, 2, 3})
  local g = mx.nd.array({0.5, -1, 2})
  local r = mx.nd.sgd_update(w, g, {lr = 0.5, out = w})
  assert(r == w or mx.nd.is_ndarray(r), 'returns the out array')
  close(w, {0.75, 2.5, 2})
  -- Without out the weight stays and a new array holds the update.
  local n = mx.nd.sgd_update(w, g, {lr = 0.5, wd = 0.5})
  close(w, {0.75, 2.5, 2})
  close(n, {0.75 * 0.75 - 0.25, 2.5 * 0.75 + 0.5, 2 * 0.75 - 1})
end)

test('sgd_mom_update: three steps against the formula, mom updated in place', function()
  local w0, grads = {0.5, -1, 2, 0.25}, {{0.5, -0.25, 1, -2}, {-1, 0.5, 0.25, 1}, {2, -1, -0.5, 0.5}}
  local w = mx.nd.array(w0, {dtype = 'float64'})
  local mom = mx.nd.zeros({4}, {dtype = 'float64'})
  local rw, rm = {}, {}
  for i = 1, 4 do rw[i], rm[i] = w0[i], 0 end
  local lr, m, wd, rescale, clip = 0.125, 0.5, 0.25, 0.5, 0.375
  for _, g in ipairs(grads) do
    mx.nd.sgd_mom_update(w, mx.nd.array(g, {dtype = 'float64'}), mom,
      {lr = lr, momentum = m, wd = wd, rescale_grad = rescale, clip_gradient = clip, out = w})
    for i = 1, 4 do
      local cg = math.max(-clip, math.min(clip, rescale * g[i]))
      rm[i] = m * rm[i] - lr * wd * rw[i] - lr * cg
      rw[i] = rw[i] + rm[i]
    end
    close(w, rw)
    close(mom, rm)
  end
end)

test('adam_update and rmsprop_update from Lua match the formulas', function()
  local w = mx.nd.array({1, -2}, {dtype = 'float64'})
  local mean, var = mx.nd.zeros({2}, {dtype = 'float64'}), mx.nd.zeros({2}, {dtype = 'float64'})
  local rw, rmean, rvar = {1, -2}, {0, 0}, {0, 0}
  local lr, b1, b2, eps = 0.25, 0.5, 0.75, 0.0625
  for _, g in ipairs({{1, -0.5}, {0.25, 2}}) do
    mx.nd.adam_update(w, mx.nd.array(g, {dtype = 'float64'}), mean, var,
      {lr = lr, beta1 = b1, beta2 = b2, epsilon = eps, out = w})
    for i = 1, 2 do
      rmean[i] = b1 * rmean[i] + (1 - b1) * g[i]
      rvar[i] = b2 * rvar[i] + (1 - b2) * g[i] * g[i]
      rw[i] = rw[i] - lr * rmean[i] / (math.sqrt(rvar[i]) + eps)
    end
    close(w, rw)
    close(mean, rmean)
    close(var, rvar)
  end
  local v = mx.nd.array({1, -2})
  local n = mx.nd.zeros({2})
  mx.nd.rmsprop_update(v, mx.nd.array({1, -0.5}), n, {lr = 0.5, gamma1 = 0.5, out = v})
  close(n, {0.5, 0.125})
  close(v, {1 - 0.5 / math.sqrt(0.5 + 1e-8), -2 + 0.25 / math.sqrt(0.125 + 1e-8)})
end)

test('nag_mom_update and rmspropalex_update run in place', function()
  local w, mom = mx.nd.array({1, 2}), mx.nd.array({0.5, -0.5})
  mx.nd.nag_mom_update(w, mx.nd.array({1, 1}), mom, {lr = 0.5, momentum = 0.5, out = w})
  -- m = 0.25, -0.25; w = w - m + 1.5 * (m - 0.5); mom = m - 0.5.
  close(w, {1 - 0.25 + 1.5 * (0.25 - 0.5), 2 + 0.25 + 1.5 * (-0.25 - 0.5)})
  close(mom, {-0.25, -0.75})
  local v = mx.nd.array({1})
  local n, g, d = mx.nd.zeros({1}), mx.nd.zeros({1}), mx.nd.zeros({1})
  mx.nd.rmspropalex_update(v, mx.nd.array({2}), n, g, d,
    {lr = 0.5, gamma1 = 0.5, gamma2 = 0.5, epsilon = 0, out = v})
  -- n = 2, g = 1, delta = -0.5 * 2 / sqrt(2 - 1) = -1.
  close(n, {2})
  close(g, {1})
  close(d, {-1})
  close(v, {0})
end)

test('optimizer symbols: states are auxiliary, as in MXNet', function()
  local s = mx.sym.sgd_mom_update({mx.sym.Variable('w'), mx.sym.Variable('g'),
    mx.sym.Variable('m')}, {lr = 0.1})
  assert_eq(s:list_arguments(), {'w', 'g'})
  assert_eq(s:list_auxiliary_states(), {'m'})
  local a = mx.sym.adam_update({mx.sym.Variable('w'), mx.sym.Variable('g'),
    mx.sym.Variable('mean'), mx.sym.Variable('var')}, {lr = 0.1})
  assert_eq(a:list_auxiliary_states(), {'mean', 'var'})
end)

test('optimizer errors name the op and the problem', function()
  local w = mx.nd.array({1, 2})
  assert_error(function() mx.nd.sgd_update(w, mx.nd.array({1, 2})) end, 'lr')
  assert_error(function() mx.nd.sgd_update(w, mx.nd.array({1, 2, 3}), {lr = 1}) end,
    'sgd_update')
  assert_error(function()
    mx.nd.sgd_update(mx.nd.array({1, 2}, {dtype = 'int32'}), mx.nd.array({1, 2}, {dtype = 'int32'}),
      {lr = 1})
  end, 'float32, float64')
end)

-- The fused updates added for Gluon's optimizers: three steps each against
-- MXNet's formulas (float64), states updated in place.
local function steps3(n)
  local gs = {{0.5, -0.25, 1, -2}, {-1, 0.5, 0.25, 1}, {2, -1, -0.5, 0.5}}
  return function(k) return gs[k] end, n or 3
end
local function f64(t) return mx.nd.array(t, {dtype = 'float64'}) end
local function sign(x) return x > 0 and 1 or (x < 0 and -1 or 0) end
local function clipv(x, c) return c >= 0 and math.max(-c, math.min(c, x)) or x end

test('signsgd_update and signum_update match the formulas', function()
  local grads = steps3()
  local w, mom = f64({0.5, -1, 2, 0.25}), f64({0, 0, 0, 0})
  local rw, rm = {0.5, -1, 2, 0.25}, {0, 0, 0, 0}
  local lr, m, wd, rescale, clip, wd_lh = 0.125, 0.75, 0.25, 0.5, 0.375, 0.0625
  for k = 1, 3 do
    local g = grads(k)
    mx.nd.signum_update(w, f64(g), mom, {lr = lr, momentum = m, wd = wd, rescale_grad = rescale,
      clip_gradient = clip, wd_lh = wd_lh, out = w})
    for i = 1, 4 do
      rm[i] = m * rm[i] - (1 - m) * wd * rw[i] - (1 - m) * clipv(rescale * g[i], clip)
      rw[i] = (1 - lr * wd_lh) * rw[i] + lr * sign(rm[i])
    end
    close(w, rw)
    close(mom, rm)
  end
  local w2 = f64({1, -1, 0.5, 0})
  mx.nd.signsgd_update(w2, f64({3, -0.1, 0, -2}), {lr = 0.5, wd = 0.5, out = w2})
  close(w2, {0.75 - 0.5, -0.75 + 0.5, 0.375, 0 + 0.5})
end)

test('ftrl_update matches the formula', function()
  local grads = steps3()
  local w, z, n = f64({0.5, -1, 2, 0.25}), f64({0, 0, 0, 0}), f64({0, 0, 0, 0})
  local rw, rz, rn = {0.5, -1, 2, 0.25}, {0, 0, 0, 0}, {0, 0, 0, 0}
  local lr, l1, beta, wd, rescale = 0.1, 0.01, 1, 0.25, 2
  for k = 1, 3 do
    local g = grads(k)
    mx.nd.ftrl_update(w, f64(g), z, n, {lr = lr, lamda1 = l1, beta = beta, wd = wd,
      rescale_grad = rescale, out = w})
    for i = 1, 4 do
      local gr = rescale * g[i]
      rz[i] = rz[i] + gr - (math.sqrt(rn[i] + gr * gr) - math.sqrt(rn[i])) * rw[i] / lr
      rn[i] = rn[i] + gr * gr
      rw[i] = math.abs(rz[i]) > l1
        and (sign(rz[i]) * l1 - rz[i]) / ((beta + math.sqrt(rn[i])) / lr + wd) or 0
    end
    close(w, rw)
    close(z, rz)
    close(n, rn)
  end
end)

test('adamw_update: the decay stays out of the moments', function()
  local grads = steps3()
  local w, mean, var = f64({0.5, -1, 2, 0.25}), f64({0, 0, 0, 0}), f64({0, 0, 0, 0})
  local rw, rm, rv = {0.5, -1, 2, 0.25}, {0, 0, 0, 0}, {0, 0, 0, 0}
  local lr, b1, b2, eps, wd, eta = 0.01, 0.9, 0.99, 1e-8, 0.1, 0.5
  for k = 1, 3 do
    local g = grads(k)
    mx.nd.adamw_update(w, f64(g), mean, var, {lr = lr, beta1 = b1, beta2 = b2, epsilon = eps,
      wd = wd, eta = eta, out = w})
    for i = 1, 4 do
      rm[i] = b1 * rm[i] + (1 - b1) * g[i]
      rv[i] = b2 * rv[i] + (1 - b2) * g[i] * g[i]
      rw[i] = rw[i] - eta * (lr * rm[i] / (math.sqrt(rv[i]) + eps) + wd * rw[i])
    end
    close(w, rw)
    close(mean, rm)
    close(var, rv)
  end
end)

test('lamb_update_phase1 and phase2 match the formulas', function()
  local grads = steps3()
  local w, mean, var = f64({0.5, -1, 2, 0.25}), f64({0, 0, 0, 0}), f64({0, 0, 0, 0})
  local rw, rm, rv = {0.5, -1, 2, 0.25}, {0, 0, 0, 0}, {0, 0, 0, 0}
  local lr, b1, b2, eps, wd = 0.05, 0.9, 0.999, 1e-6, 0.01
  for t = 1, 3 do
    local g = grads(t)
    local d = mx.nd.lamb_update_phase1(w, f64(g), mean, var, {beta1 = b1, beta2 = b2,
      epsilon = eps, t = t, wd = wd})
    mx.nd.lamb_update_phase2(w, d, mx.nd.norm(w), mx.nd.norm(d), {lr = lr, out = w})
    local dir, n1, n2 = {}, 0, 0
    for i = 1, 4 do
      rm[i] = b1 * rm[i] + (1 - b1) * g[i]
      rv[i] = b2 * rv[i] + (1 - b2) * g[i] * g[i]
      dir[i] = (rm[i] / (1 - b1 ^ t)) / (math.sqrt(rv[i] / (1 - b2 ^ t)) + eps) + wd * rw[i]
      n1, n2 = n1 + rw[i] ^ 2, n2 + dir[i] ^ 2
    end
    local ratio = math.sqrt(n1) / math.sqrt(n2)
    for i = 1, 4 do rw[i] = rw[i] - lr * ratio * dir[i] end
    close(w, rw)
  end
  assert_error(function()
    mx.nd.lamb_update_phase2(w, w, mx.nd.ones({2}), mx.nd.ones({1}), {lr = 1})
  end, 'must hold one element')
  -- A zero norm leaves the ratio at 1; bounds clip r1.
  local z = f64({0, 0})
  local out = mx.nd.lamb_update_phase2(z, f64({1, 2}), f64({0}), f64({3}), {lr = 0.5})
  close(out, {-0.5, -1})
  out = mx.nd.lamb_update_phase2(z, f64({1, 2}), f64({10}), f64({2}), {lr = 1, upper_bound = 4})
  close(out, {-2, -4})
end)

test('optimizers by name: adamw, signum, ftrl, adadelta, lamb take steps', function()
  for _, name in ipairs({'adamw', 'signum', 'ftrl', 'adadelta', 'lamb'}) do
    local opt = mx.optimizer.create(name, {learning_rate = 0.1})
    local w = mx.nd.array({1, -2, 3})
    local st = opt:create_state(1, w)
    for _ = 1, 3 do opt:update(1, w, mx.nd.array({0.5, 0.5, -1}), st) end
    local v = w:totable()
    assert(v[1] < 1 and v[3] > 3 - 1e-9 or name == 'ftrl', name .. ' moved the wrong way')
  end
  -- AdaDelta against MXNet's formula, two steps.
  local opt = mx.optimizer.create('adadelta', {rho = 0.9, epsilon = 1e-5, wd = 0.1})
  local w = f64({1, -1})
  local st = opt:create_state(1, w)
  local rw, ag, ad = {1, -1}, {0, 0}, {0, 0}
  for _ = 1, 2 do
    local g = {0.5, 2}
    opt:update(1, w, f64(g), st)
    for i = 1, 2 do
      ag[i] = 0.9 * ag[i] + 0.1 * g[i] ^ 2
      local d = math.sqrt(ad[i] + 1e-5) / math.sqrt(ag[i] + 1e-5) * g[i]
      ad[i] = 0.9 * ad[i] + 0.1 * d * d
      rw[i] = rw[i] - (d + 0.1 * rw[i])
    end
  end
  close(w, rw)
end)

test('Poly and Cosine schedules, warm-up on every schedule', function()
  local poly = mx.lr_scheduler.PolyScheduler{max_update = 100, base_lr = 1, pwr = 2, final_lr = 0.1,
    warmup_steps = 10, warmup_begin_lr = 0.5}
  assert_near(poly(0), 0.5)
  assert_near(poly(5), 0.75)
  assert_near(poly(10), 1)
  assert_near(poly(55), 0.1 + 0.9 * 0.25)
  assert_near(poly(100), 0.1)
  assert_near(poly(500), 0.1)
  local cos = mx.lr_scheduler.CosineScheduler{max_update = 10, base_lr = 2, final_lr = 0}
  assert_near(cos(0), 2)
  assert_near(cos(5), 1)
  assert_near(cos(10), 0)
  local f = mx.optimizer.FactorScheduler{step = 10, factor = 0.5, base_lr = 1, warmup_steps = 4,
    warmup_mode = 'constant', warmup_begin_lr = 0.1}
  assert_near(f(3), 0.1)
  assert_near(f(25), 0.25)
  assert_error(function() mx.lr_scheduler.PolyScheduler{base_lr = 1} end, 'max_update is required')
  assert_error(function() mx.lr_scheduler.CosineScheduler{max_update = 5, warmup_steps = 5} end,
    'above warmup_steps')
  assert_error(function() mx.optimizer.FactorScheduler{step = 2, warmup_mode = 'cubic'} end,
    'warmup_mode')
end)

test('ftml_update: two steps against MXNet\'s FTML kernel', function()
  local w0 = {0.5, -1, 2}
  local w = mx.nd.array(w0, {dtype = 'float64'})
  local d, v, z = mx.nd.zeros({3}, {dtype = 'float64'}), mx.nd.zeros({3}, {dtype = 'float64'}),
                  mx.nd.zeros({3}, {dtype = 'float64'})
  local rw, rd, rv, rz = {0.5, -1, 2}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}
  local lr, b1, b2, eps, wd, rescale, clip = 0.1, 0.6, 0.999, 1e-8, 0.01, 0.5, 0.4
  for t, g in ipairs({{1, -2, 0.5}, {-0.25, 0.75, 3}}) do
    mx.nd.ftml_update(w, mx.nd.array(g, {dtype = 'float64'}), d, v, z, {lr = lr, beta1 = b1,
      beta2 = b2, epsilon = eps, t = t, wd = wd, rescale_grad = rescale, clip_grad = clip, out = w})
    for i = 1, 3 do
      local gi = math.max(-clip, math.min(clip, rescale * g[i])) + wd * rw[i]
      rv[i] = b2 * rv[i] + (1 - b2) * gi * gi
      local dt = (1 - b1 ^ t) / lr * (math.sqrt(rv[i] / (1 - b2 ^ t)) + eps)
      rz[i] = b1 * rz[i] + (1 - b1) * gi - (dt - b1 * rd[i]) * rw[i]
      rd[i] = dt
      rw[i] = -rz[i] / dt
    end
    close(w, rw)
    close(d, rd)
    close(v, rv)
    close(z, rz)
  end
  assert_error(function() mx.nd.ftml_update(w, w, d, v, z, {lr = 0.1, t = 0}) end, 't')
end)

test('mp_sgd_update and mp_sgd_mom_update: float16 weights, float32 masters', function()
  local w32 = mx.nd.array({1, -2, 0.001}, {dtype = 'float32'})
  local w = w32:astype('float16')
  local g = mx.nd.array({0.5, 1, -0.25}, {dtype = 'float16'})
  mx.nd.mp_sgd_update(w, g, w32, {lr = 0.5, wd = 0.1, out = w})
  local want = {1 - 0.5 * (0.5 + 0.1), -2 - 0.5 * (1 - 0.2), 0.001 - 0.5 * (-0.25 + 0.0001)}
  mx.test_utils.assert_almost_equal(w32, want, {rtol = 1e-6, atol = 1e-7})
  assert_eq(w.dtype, 'float16')
  mx.test_utils.assert_almost_equal(w, want, {rtol = 1e-3, atol = 1e-3})
  -- Many small steps: the float32 master keeps what float16 would round away.
  local m32 = mx.nd.array({1}, {dtype = 'float32'})
  local m16 = m32:astype('float16')
  local mom = mx.nd.zeros({1}, {dtype = 'float32'})
  for _ = 1, 100 do
    mx.nd.mp_sgd_mom_update(m16, mx.nd.array({1}, {dtype = 'float16'}), mom, m32,
                            {lr = 1e-5, momentum = 0.5, out = m16})
  end
  assert_near(m32:asscalar(), 1 - 1e-5 * (100 * 2 - (1 - 0.5 ^ 100) / 0.5), 1e-5)  -- float32 sums
  assert(m16:asscalar() < 1, 'the float16 weight moves too')
  assert_error(function()
    mx.nd.mp_sgd_update(w, g, w, {lr = 0.1})
  end, 'weight32')
end)

test('multi_sgd_update and friends: each weight as its single-weight update', function()
  local function arr(t) return mx.nd.array(t, {dtype = 'float32'}) end
  local w = {arr({1, 2}), arr({-1, 0.5, 3})}
  local g = {arr({0.5, -0.5}), arr({1, 1, -2})}
  local want = {mx.nd.sgd_update(w[1], g[1], {lr = 0.1, wd = 0.01, clip_gradient = 0.75}),
                mx.nd.sgd_update(w[2], g[2], {lr = 0.2, wd = 0, clip_gradient = 0.75})}
  local out = {mx.nd.multi_sgd_update({w[1], g[1], w[2], g[2]},
    {lrs = {0.1, 0.2}, wds = {0.01, 0}, clip_gradient = 0.75, num_weights = 2})}
  close(out[1], want[1])
  close(out[2], want[2])
  -- With momentum: the moms advance as sgd_mom_update's.
  local m = {mx.nd.zeros({2}), mx.nd.zeros({3})}
  local rm = {mx.nd.zeros({2}), mx.nd.zeros({3})}
  local rw = {mx.nd.sgd_mom_update(w[1], g[1], rm[1], {lr = 0.1, momentum = 0.9}),
              mx.nd.sgd_mom_update(w[2], g[2], rm[2], {lr = 0.2, momentum = 0.9})}
  out = {mx.nd.multi_sgd_mom_update({w[1], g[1], m[1], w[2], g[2], m[2]},
    {lrs = {0.1, 0.2}, wds = {0, 0}, momentum = 0.9, num_weights = 2})}
  close(out[1], rw[1])
  close(out[2], rw[2])
  close(m[2], rm[2])
  -- Mixed precision, with and without momentum.
  local w16 = {w[1]:astype('float16'), w[2]:astype('float16')}
  local g16 = {g[1]:astype('float16'), g[2]:astype('float16')}
  local m32 = {w[1]:copy(), w[2]:copy()}
  out = {mx.nd.multi_mp_sgd_update({w16[1], g16[1], m32[1], w16[2], g16[2], m32[2]},
    {lrs = {0.1, 0.2}, wds = {0.01, 0}, clip_gradient = 0.75, num_weights = 2})}
  close(m32[1], want[1])
  close(m32[2], want[2])
  assert_eq(out[1].dtype, 'float16')
  local mm = {mx.nd.zeros({2}), mx.nd.zeros({3})}
  local mw = {w[1]:copy(), w[2]:copy()}
  mx.nd.multi_mp_sgd_mom_update({w16[1], g16[1], mm[1], mw[1], w16[2], g16[2], mm[2], mw[2]},
    {lrs = {0.1, 0.2}, wds = {0, 0}, momentum = 0.9, num_weights = 2})
  close(mw[2], rw[2])
  assert_error(function()
    mx.nd.multi_sgd_update({w[1], g[1]}, {lrs = {0.1, 0.2}, wds = {0}, num_weights = 1})
  end, 'lrs has 2 and wds 1 values')
end)
