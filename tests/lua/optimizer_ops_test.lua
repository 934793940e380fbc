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
