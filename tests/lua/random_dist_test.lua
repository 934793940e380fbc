-- The samplers beyond uniform and normal (_random_exponential, _gamma,
-- _poisson, _negative_binomial, _generalized_negative_binomial), the
-- _sample_* family with per-row parameters, and _sample_multinomial: sample
-- moments against the distributions' (within 5 standard errors of the mean,
-- 8% of the variance), repeatability under mx.random.seed, per-element draws
-- independent of the output's shape, and bad parameters named.

local N = 20000

local function moments(a)
  local v = a:totable()
  local s, ss = 0, 0
  for _, x in ipairs(v) do s = s + x end
  local m = s / #v
  for _, x in ipairs(v) do ss = ss + (x - m) ^ 2 end
  return m, ss / (#v - 1)
end

local function check_moments(a, mean, var, what)
  local m, v = moments(a)
  local se = math.sqrt(var / a.size)
  assert(math.abs(m - mean) < 5 * se,
         ('%s: mean %.4f, expected %.4f (se %.4f)'):format(what, m, mean, se))
  assert(math.abs(v - var) < 0.08 * var,
         ('%s: variance %.4f, expected %.4f'):format(what, v, var))
end

local function is_whole(a)
  for _, x in ipairs(a:totable()) do
    if x ~= math.floor(x) or x < 0 then return false end
  end
  return true
end

test('random_exponential, gamma, poisson, negative binomials: sample moments', function()
  mx.random.seed(7)
  local o = {shape = {N}, dtype = 'float64'}
  local function with(t)
    for k, v in pairs(o) do t[k] = v end
    return t
  end
  check_moments(mx.nd.random_exponential(with{lam = 2}), 0.5, 0.25, 'exponential')
  check_moments(mx.nd.random_gamma(with{alpha = 0.5, beta = 2}), 1, 2, 'gamma(0.5, 2)')
  check_moments(mx.nd.random_gamma(with{alpha = 3, beta = 0.5}), 1.5, 0.75, 'gamma(3, 0.5)')
  local p3 = mx.nd.random_poisson(with{lam = 3})
  check_moments(p3, 3, 3, 'poisson(3)')
  assert(is_whole(p3), 'poisson draws are whole numbers')
  check_moments(mx.nd.random_poisson(with{lam = 50}), 50, 50, 'poisson(50)')
  local nb = mx.nd.random_negative_binomial(with{k = 3, p = 0.4})
  check_moments(nb, 4.5, 11.25, 'negative_binomial(3, 0.4)')
  assert(is_whole(nb), 'negative binomial draws are whole numbers')
  check_moments(mx.nd.random_generalized_negative_binomial(with{mu = 2, alpha = 0.5}), 2, 4,
                'generalized_negative_binomial(2, 0.5)')
  check_moments(mx.nd.random_generalized_negative_binomial(with{mu = 2, alpha = 0}), 2, 2,
                'generalized_negative_binomial(2, 0)')
  -- float32 by default.
  assert_eq(mx.nd.random_gamma({shape = {3}}).dtype, 'float32')
end)

test('samplers repeat under a seed, and each element is drawn alone', function()
  mx.random.seed(42)
  local a = mx.nd.random_gamma({alpha = 2.5, shape = {6, 50}}):totable()
  mx.random.seed(42)
  local b = mx.nd.random_gamma({alpha = 2.5, shape = {300}}):totable()
  for r = 1, 6 do
    for c = 1, 50 do assert_eq(a[r][c], b[(r - 1) * 50 + c]) end
  end
  mx.random.seed(43)
  local c = mx.nd.random_gamma({alpha = 2.5, shape = {300}}):totable()
  assert(c[1] ~= b[1] or c[2] ~= b[2], 'another seed, other draws')
end)

test('random_*: bad parameters are named', function()
  assert_error(function() mx.nd.random_gamma({alpha = 0, shape = {2}}) end,
               '_random_gamma: alpha and beta must be positive %(alpha = 0')
  assert_error(function() mx.nd.random_poisson({lam = -1, shape = {2}}) end, 'lam is negative')
  assert_error(function() mx.nd.random_negative_binomial({k = 2, p = 0, shape = {2}}) end,
               'p in %(0, 1%]')
  assert_error(function() mx.nd.random_exponential({lam = 0, shape = {2}}) end, 'positive')
end)

test('sample_*: per-row parameters, shapes, dtypes, bad rows', function()
  mx.random.seed(3)
  local mu = mx.nd.array({0, 10}, {dtype = 'float64'})
  local sigma = mx.nd.array({1, 0.1}, {dtype = 'float64'})
  local s = mx.nd.sample_normal(mu, sigma, {shape = {N}})
  assert_eq({s.shape, s.dtype}, {{2, N}, 'float64'})
  check_moments(s[1], 0, 1, 'sample_normal row 1')
  check_moments(s[2], 10, 0.01, 'sample_normal row 2')
  local u = mx.nd.sample_uniform(mx.nd.array({{0, 1}}), mx.nd.array({{1, 3}}), {shape = {N}})
  assert_eq(u.shape, {1, 2, N})
  check_moments(u[1][2], 2, 1 / 3, 'sample_uniform [1, 3)')
  local lam = mx.nd.array({1, 4})
  local e = mx.nd.sample_exponential(lam, {shape = {N}, dtype = 'float64'})
  check_moments(e[2], 0.25, 0.0625, 'sample_exponential')
  local p = mx.nd.sample_poisson(lam, {shape = {N}})
  assert_eq(p.dtype, 'float32')
  check_moments(p[2], 4, 4, 'sample_poisson')
  check_moments(mx.nd.sample_gamma(mx.nd.array({2}), mx.nd.array({3}), {shape = {N}})[1], 6, 18,
                'sample_gamma')
  check_moments(mx.nd.sample_negative_binomial(mx.nd.array({2}), mx.nd.array({0.5}),
                                               {shape = {N}})[1], 2, 4, 'sample_negative_binomial')
  check_moments(mx.nd.sample_generalized_negative_binomial(mx.nd.array({3}), mx.nd.array({0.2}),
                                                           {shape = {N}})[1], 3, 4.8,
                'sample_generalized_negative_binomial')
  -- No shape: one draw per parameter element.
  assert_eq(mx.nd.sample_poisson(mx.nd.ones({2, 3})).shape, {2, 3})
  assert_error(function()
    mx.nd.sample_gamma(mx.nd.array({1, -1}), mx.nd.array({1, 1})):wait_to_read()
  end, 'alpha and beta must be positive in parameter row 1')
  assert_error(function() mx.nd.sample_normal(mu, mx.nd.ones({3})) end, '_sample_normal')
end)

test('sample_multinomial: frequencies, log-probabilities and their gradient', function()
  mx.random.seed(11)
  local probs = mx.nd.array({{0.1, 0.6, 0.3}, {0.5, 0.0, 0.5}}, {dtype = 'float64'})
  local s = mx.nd.sample_multinomial(probs, {shape = {N}})
  assert_eq({s.shape, s.dtype}, {{2, N}, 'int32'})
  local v = s:totable()
  for r, want in ipairs({{0.1, 0.6, 0.3}, {0.5, 0, 0.5}}) do
    local count = {0, 0, 0}
    for _, c in ipairs(v[r]) do count[c + 1] = count[c + 1] + 1 end
    for c = 1, 3 do
      local se = math.sqrt(want[c] * (1 - want[c]) / N)
      assert(math.abs(count[c] / N - want[c]) <= 5 * se + 1e-12,
             ('row %d class %d: %.4f, expected %.4f'):format(r, c - 1, count[c] / N, want[c]))
    end
  end
  -- One draw per row without shape; log-probabilities with get_prob.
  assert_eq(mx.nd.sample_multinomial(probs).shape, {2})
  probs:attach_grad()
  local draws, logp
  mx.autograd.record(function()
    draws, logp = mx.nd.sample_multinomial(probs, {shape = {5}, get_prob = true})
    return logp
  end)
  local d, lp, pv = draws:totable(), logp:totable(), probs:totable()
  for r = 1, 2 do
    for j = 1, 5 do assert_near(lp[r][j], math.log(pv[r][d[r][j] + 1]), 1e-12) end
  end
  logp:backward(mx.nd.ones({2, 5}, {dtype = 'float64'}))
  local g = probs.grad:totable()
  for r = 1, 2 do
    local want = {0, 0, 0}
    for j = 1, 5 do
      local c = d[r][j] + 1
      want[c] = want[c] + 1 / pv[r][c]
    end
    for c = 1, 3 do assert_near(g[r][c], want[c], 1e-9) end
  end
  assert_error(function()
    mx.nd.sample_multinomial(mx.nd.array({{0.5, -0.5, 1}})):wait_to_read()
  end, 'probability %-0.5 at row 0, class 1 is negative')
end)

test('mx.nd.random and mx.random: the samplers under MXNet names', function()
  mx.random.seed(5)
  local a = mx.nd.random.gamma(2, 3, {4, 5}):totable()
  mx.random.seed(5)
  local b = mx.nd.random_gamma({alpha = 2, beta = 3, shape = {4, 5}}):totable()
  assert_eq(a, b)
  assert_eq(mx.nd.random.exponential(2, {3}).shape, {3})
  assert_eq(mx.random.poisson(4, {2, 2}, {dtype = 'float64'}).dtype, 'float64')
  assert_eq(mx.nd.random.negative_binomial(2, 0.5, {6}).shape, {6})
  assert_eq(mx.random.generalized_negative_binomial(2, 0.5, {2}).shape, {2})
end)
