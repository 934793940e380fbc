-- mx.nd.linalg / mx.sym.linalg (MXNet's _linalg_* operators): MXNet's
-- documented examples and the constants of its test_laop tests, the
-- identities each op must satisfy, bad input, and the gradients of the ops
-- that read only one triangle of a symmetric input (potrf, syevd), checked
-- through a symmetrised input as MXNet's tests do. The other linalg
-- gradients are in gradient_test.lua.

local tu = mx.test_utils
local la = mx.nd.linalg

local function close(a, b, tol)
  tu.assert_almost_equal(a, b, {rtol = tol or 1e-5, atol = tol or 1e-5})
end
local function f64(t) return mx.nd.array(t, {dtype = 'float64'}) end

-- test_laop's matrices: matrix = trian trian^T, inv = matrix^-1.
local matrix = {{9, 3, -6, 12}, {3, 26, -7, -11}, {-6, -7, 9, 7}, {12, -11, 7, 65}}
local trian = {{3, 0, 0, 0}, {1, 5, 0, 0}, {-2, -1, 2, 0}, {4, -3, 6, 2}}
local inv = {{8.95 / 3, 0.05 / 3, 2.65, -2.5 / 3}, {0.05 / 3, 0.05, 0.05, 0},
             {2.65, 0.05, 2.5, -0.75}, {-2.5 / 3, 0, -0.75, 0.25}}
local function transposed(t)
  local r = {}
  for i = 1, #t[1] do
    r[i] = {}
    for j = 1, #t do r[i][j] = t[j][i] end
  end
  return r
end

test('gemm and gemm2: MXNet examples, batches, transposes', function()
  local A, B = mx.nd.ones({2, 2}), mx.nd.ones({3, 2})
  local C = mx.nd.ones({2, 3})
  assert_eq(la.gemm(A, B, C, {transpose_b = true, alpha = 2, beta = 10}):totable(),
            {{14, 14, 14}, {14, 14, 14}})
  assert_eq(la.gemm2(A, B, {transpose_b = true, alpha = 2}):totable(), {{4, 4, 4}, {4, 4, 4}})
  local Ab = mx.nd.array({{{1, 1}}, {{0.1, 0.1}}})
  close(la.gemm(Ab, Ab, mx.nd.array({{{10}}, {{0.01}}}), {transpose_b = true, alpha = 2, beta = 10}),
        {{{104}}, {{0.14}}})
  close(la.gemm2(Ab, Ab, {transpose_b = true, alpha = 2}), {{{4}}, {{0.04}}})
  -- Every transpose combination against dot.
  local a, b = mx.nd.random.uniform(-1, 1, {3, 4}), mx.nd.random.uniform(-1, 1, {4, 5})
  local want = mx.nd.dot(a, b) * 3
  close(la.gemm2(a, b, {alpha = 3}), want)
  close(la.gemm2(a:transpose(), b, {transpose_a = true, alpha = 3}), want)
  close(la.gemm2(a, b:transpose(), {transpose_b = true, alpha = 3}), want)
  close(la.gemm2(a:transpose(), b:transpose(), {transpose_a = true, transpose_b = true, alpha = 3}),
        want)
end)

test('gemm and gemm2: rows on another axis', function()
  -- (3, m=2, 4, n=5) with rows on axis 2 (Lua) is the batch (3, 4) of 2 x 5
  -- matrices: the same as moving that axis next to the last.
  local a = mx.nd.random.uniform(-1, 1, {3, 2, 4, 5})
  local b = mx.nd.random.uniform(-1, 1, {3, 6, 4, 5})
  local c = mx.nd.random.uniform(-1, 1, {3, 2, 4, 6})
  local function moved(x) return mx.nd.swapaxes(x, {dim1 = 2, dim2 = 3}) end
  local want = la.gemm(moved(a), moved(b), moved(c), {transpose_b = true, alpha = 0.5, beta = -2})
  local got = la.gemm(a, b, c, {transpose_b = true, alpha = 0.5, beta = -2, axis = 2})
  assert_eq(got.shape, {3, 2, 4, 6})
  close(moved(got), want)
  close(la.gemm2(a, b, {transpose_b = true, axis = -3}), moved(la.gemm2(moved(a), moved(b),
        {transpose_b = true})))
  assert_error(function() la.gemm2(a, b, {axis = 4}) end, "the columns' axis")
  assert_error(function() la.gemm2(a, c) end,
               '_linalg_gemm2: op%(A%) from %(3,2,4,5%) has 5 columns but op%(B%) from %(3,2,4,6%) has 4')
  assert_error(function() la.gemm2(a, b) end, 'differ on batch axis 1')
  assert_error(function() la.gemm2(mx.nd.ones({2, 3}), mx.nd.ones({2, 3, 4})) end,
               'the same number of axes')
  assert_error(function() la.gemm2(mx.nd.ones({2, 2}, {dtype = 'int32'}),
                                   mx.nd.ones({2, 2}, {dtype = 'int32'})) end,
               'dtype int32 is not supported')
end)

test('trmm, trsm and syrk: MXNet examples and identities', function()
  local A = mx.nd.array({{1, 0}, {1, 1}})
  assert_eq(la.trmm(A, mx.nd.ones({2, 3}), {alpha = 2}):totable(), {{2, 2, 2}, {4, 4, 4}})
  assert_eq(la.trsm(A, mx.nd.array({{2, 2, 2}, {4, 4, 4}}), {alpha = 0.5}):totable(),
            {{1, 1, 1}, {1, 1, 1}})
  local m, t = f64(matrix), f64(trian)
  local tt = f64(transposed(trian))
  for _, lower in ipairs({true, false}) do
    local T = lower and t or tt
    -- The other triangle holds garbage: it must not be read.
    local garbage = f64(lower and {{0, 9, 9, 9}, {0, 0, 9, 9}, {0, 0, 0, 9}, {0, 0, 0, 0}}
                              or {{0, 0, 0, 0}, {9, 0, 0, 0}, {9, 9, 0, 0}, {9, 9, 9, 0}})
    local a = T + garbage
    local function with(extra)
      local q = {lower = lower}
      for k, v in pairs(extra) do q[k] = v end
      return q
    end
    close(la.trmm(a, m, with{alpha = 7, transpose = true, rightside = true}),
          mx.nd.dot(m, T:transpose()) * 7)
    close(la.trmm(a, m, with{alpha = -2}), mx.nd.dot(T, m) * -2)
    close(la.trmm(a, m, with{rightside = true}), mx.nd.dot(m, T))
    close(la.trmm(a, m, with{alpha = 1.2, transpose = true}), mx.nd.dot(T:transpose(), m) * 1.2)
    -- trsm undoes trmm on every side and transpose.
    for _, right in ipairs({false, true}) do
      for _, tr in ipairs({false, true}) do
        local prod = la.trmm(a, m, with{rightside = right, transpose = tr, alpha = 2})
        close(la.trsm(a, prod, with{rightside = right, transpose = tr, alpha = 0.5}), m, 1e-9)
      end
    end
  end
  local S = mx.nd.array({{1, 2, 3}, {4, 5, 6}})
  assert_eq(la.syrk(S):totable(), {{14, 32}, {32, 77}})
  assert_eq(la.syrk(S, {transpose = true}):totable(), {{17, 22, 27}, {22, 29, 36}, {27, 36, 45}})
  close(la.syrk(mx.nd.array({{{1, 1}}, {{0.1, 0.1}}}), {alpha = 2}), {{{4}}, {{0.04}}})
  assert_error(function() la.trsm(mx.nd.ones({2, 3}), mx.nd.ones({2, 2})) end, 'square matrices')
  assert_error(function() la.trmm(mx.nd.ones({3, 3}), mx.nd.ones({2, 2})) end, '_linalg_trmm')
end)

test('potrf and potri: MXNet examples and test_laop constants', function()
  close(la.potrf(mx.nd.array({{4, 1}, {1, 4.25}})), {{2, 0}, {0.5, 2}})
  close(la.potrf(mx.nd.array({{{4, 1}, {1, 4.25}}, {{16, 4}, {4, 17}}})),
        {{{2, 0}, {0.5, 2}}, {{4, 0}, {1, 4}}})
  close(la.potri(mx.nd.array({{2, 0}, {0.5, 2}})), {{0.265625, -0.0625}, {-0.0625, 0.25}})
  close(la.potri(mx.nd.array({{4, 0}, {1, 4}})), {{17 / 256, -4 / 256}, {-4 / 256, 16 / 256}})
  local m = f64(matrix)
  close(la.potrf(m), trian, 1e-9)
  close(la.potrf(m, {lower = false}), transposed(trian), 1e-9)
  close(la.potri(f64(trian)), inv, 1e-9)
  close(la.potri(f64(transposed(trian)), {lower = false}), inv, 1e-9)
  -- Batched over two leading axes, matrices in order.
  local stack = mx.nd.stack({m, m * 4, m * 9}, {axis = 1}):reshape({3, 1, 4, 4})
  local f = la.potrf(stack)
  close(f[2][1], mx.nd.array(trian, {dtype = 'float64'}) * 2, 1e-9)
  close(f[3][1], mx.nd.array(trian, {dtype = 'float64'}) * 3, 1e-9)
  close(la.gemm2(f, f, {transpose_b = true}), stack, 1e-9)
  assert_error(function()
    la.potrf(mx.nd.stack({m, -m}, {axis = 1})):wait_to_read()
  end, '_linalg_potrf: matrix 1 of the batch is not positive definite')
  assert_error(function()
    la.potri(mx.nd.array({{1, 0}, {1, 0}})):wait_to_read()
  end, 'matrix 0 of the batch has a zero on its diagonal')
end)

test('gelqf: MXNet example, Q Q^T = I, L Q = A', function()
  local q, l = la.gelqf(mx.nd.array({{1, 2, 3}, {4, 5, 6}}, {dtype = 'float64'}))
  close(q, {{-0.26726124, -0.53452248, -0.80178373}, {0.87287156, 0.21821789, -0.43643578}})
  close(l, {{-3.74165739, 0}, {-8.55235974, 1.96396101}})
  local a = mx.nd.random.normal(0, 10, {3, 5, 20}, {dtype = 'float64'})
  local Q, L = la.gelqf(a)
  assert_eq(Q.shape, {3, 5, 20})
  assert_eq(L.shape, {3, 5, 5})
  close(la.syrk(Q), mx.nd.broadcast_to(mx.nd.eye(5, {dtype = 'float64'}):reshape({1, 5, 5}),
        {shape = {3, 5, 5}}), 1e-9)
  close(la.trmm(L, Q), a, 1e-9)
  close(la.extracttrian(L, {offset = 1}), mx.nd.zeros({3, 10}), 0)
  local q1, l1 = la.gelqf(mx.nd.array({{-3}}))
  assert_eq({q1:totable(), l1:totable()}, {{{1}}, {{-3}}})
  assert_error(function() la.gelqf(mx.nd.ones({3, 2})) end, 'no more rows than columns')
end)

test('syevd: MXNet examples, ascending eigenvalues, signs, A = U^T diag(L) U', function()
  local u, l = la.syevd(mx.nd.array({{1, 2}, {2, 4}}, {dtype = 'float64'}))
  close(u, {{0.89442719, -0.4472136}, {0.4472136, 0.89442719}})
  close(l, {0, 5})
  u, l = la.syevd(mx.nd.array({{1, 2}, {2, 5}}))
  close(u, {{0.92387953, -0.38268343}, {0.38268343, 0.92387953}})
  close(l, {0.17157288, 5.82842712})
  local x = mx.nd.random.normal(0, 10, {2, 6, 6}, {dtype = 'float64'})
  local a = (x + mx.nd.swapaxes(x, {dim1 = 2, dim2 = 3})) * 0.5
  local U, L = la.syevd(a)
  close(la.gemm2(U, mx.nd.broadcast_mul(U, L:reshape({2, 6, 1})), {transpose_a = true}), a, 1e-8)
  close(la.syrk(U), mx.nd.broadcast_to(mx.nd.eye(6, {dtype = 'float64'}):reshape({1, 6, 6}),
        {shape = {2, 6, 6}}), 1e-9)
  local lv, uv = L:totable(), U:totable()
  for b = 1, 2 do
    for i = 2, 6 do assert(lv[b][i] >= lv[b][i - 1], 'eigenvalues ascending') end
    for i = 1, 6 do
      local k = 1
      for j = 2, 6 do if math.abs(uv[b][i][j]) > math.abs(uv[b][i][k]) then k = j end end
      assert(uv[b][i][k] > 0, 'largest entry of each eigenvector positive')
    end
  end
  -- Only the lower triangle is read.
  local lower_only = a * f64({{1, 0, 0, 0, 0, 0}, {1, 1, 0, 0, 0, 0}, {1, 1, 1, 0, 0, 0},
                              {1, 1, 1, 1, 0, 0}, {1, 1, 1, 1, 1, 0}, {1, 1, 1, 1, 1, 1}})
  local _, L2 = la.syevd(lower_only)
  close(L2, L, 1e-9)
end)

test('inverse, det and slogdet: MXNet examples, singular matrices', function()
  close(la.inverse(mx.nd.array({{1, 4}, {2, 3}})), {{-0.6, 0.8}, {0.4, -0.2}})
  close(la.inverse(mx.nd.array({{{1, 4}, {2, 3}}, {{1, 3}, {2, 4}}})),
        {{{-0.6, 0.8}, {0.4, -0.2}}, {{-2, 1.5}, {1, -0.5}}})
  close(la.det(mx.nd.array({{1, 4}, {2, 3}})), {-5})
  close(la.det(mx.nd.array({{{1, 4}, {2, 3}}, {{2, 3}, {1, 4}}})), {-5, 5})
  local s, ld = la.slogdet(mx.nd.array({{2, 3}, {1, 4}}))
  close(s, {1})
  close(ld, {1.609438})
  s, ld = la.slogdet(mx.nd.array({{{2, 3}, {1, 4}}, {{1, 2}, {2, 4}}, {{1, 2}, {4, 3}}}))
  assert_eq(s:totable(), {1, 0, -1})
  local v = ld:totable()
  assert_near(v[1], 1.609438, 1e-5)
  assert_eq(v[2], -math.huge)
  assert_near(v[3], 1.609438, 1e-5)
  assert_eq(la.det(mx.nd.array({{1, 2}, {2, 4}})):totable(), {0})
  -- Against the product of the eigenvalues, for a batch of 3 x 4 x 4.
  local x = mx.nd.random.normal(0, 1, {3, 4, 4}, {dtype = 'float64'})
  local spd = la.syrk(x) + mx.nd.eye(4, {dtype = 'float64'}):reshape({1, 4, 4})
  local _, L = la.syevd(spd)
  close(la.det(spd), mx.nd.prod(L, {axis = 2}), 1e-8)
  close(la.gemm2(spd, la.inverse(spd)), mx.nd.broadcast_to(mx.nd.eye(4, {dtype = 'float64'})
        :reshape({1, 4, 4}), {shape = {3, 4, 4}}), 1e-9)
  close(la.sumlogdiag(la.potrf(spd)) * 2, select(2, la.slogdet(spd)), 1e-9)
  assert_error(function()
    la.inverse(mx.nd.array({{1, 2}, {2, 4}})):wait_to_read()
  end, '_linalg_inverse: matrix 0 of the batch is singular')
  assert_error(function() la.det(mx.nd.ones({2, 3})) end, 'square matrices')
end)

test('sumlogdiag, extract/make diag and trian: MXNet examples, packing order', function()
  close(la.sumlogdiag(mx.nd.array({{1, 1}, {1, 7}})), {1.9459101})
  close(la.sumlogdiag(mx.nd.array({{{1, 1}, {1, 7}}, {{3, 0}, {0, 17}}})), {1.9459101, 3.9318256})
  local A = mx.nd.array({{1, 2}, {3, 4}})
  assert_eq(la.extractdiag(A):totable(), {1, 4})
  assert_eq(la.extractdiag(A, {offset = 1}):totable(), {2})
  assert_eq(la.extractdiag(mx.nd.array({{{1, 2}, {3, 4}}, {{5, 6}, {7, 8}}})):totable(),
            {{1, 4}, {5, 8}})
  assert_eq(la.makediag(mx.nd.array({1, 2})):totable(), {{1, 0}, {0, 2}})
  assert_eq(la.makediag(mx.nd.array({1, 2}), {offset = 1}):totable(),
            {{0, 1, 0}, {0, 0, 2}, {0, 0, 0}})
  assert_eq(la.makediag(mx.nd.array({{1, 2}, {3, 4}})):totable(),
            {{{1, 0}, {0, 2}}, {{3, 0}, {0, 4}}})
  assert_eq(la.extracttrian(A):totable(), {1, 3, 4})
  assert_eq(la.extracttrian(A, {lower = false}):totable(), {1, 2, 4})
  assert_eq(la.extracttrian(A, {offset = 1}):totable(), {2})
  assert_eq(la.extracttrian(A, {offset = -1}):totable(), {3})
  -- Lower packed row by row, upper column by column (MXNet's order).
  local B = mx.nd.array({{1, 2, 3}, {4, 5, 6}, {7, 8, 9}})
  assert_eq(la.extracttrian(B):totable(), {1, 4, 5, 7, 8, 9})
  assert_eq(la.extracttrian(B, {lower = false}):totable(), {1, 2, 5, 3, 6, 9})
  assert_eq(la.maketrian(mx.nd.array({1, 2, 3})):totable(), {{1, 0}, {2, 3}})
  assert_eq(la.maketrian(mx.nd.array({1, 2, 3}), {lower = false}):totable(), {{1, 2}, {0, 3}})
  assert_eq(la.maketrian(mx.nd.array({1, 2, 3}), {offset = 1}):totable(),
            {{0, 1, 2}, {0, 0, 3}, {0, 0, 0}})
  assert_eq(la.maketrian(mx.nd.array({1, 2, 3}), {offset = -1}):totable(),
            {{0, 0, 0}, {1, 0, 0}, {2, 3, 0}})
  assert_eq(la.maketrian(mx.nd.array({{1, 2, 3}, {4, 5, 6}}), {offset = 1}):totable(),
            {{{0, 1, 2}, {0, 0, 3}, {0, 0, 0}}, {{0, 4, 5}, {0, 0, 6}, {0, 0, 0}}})
  -- Round trips against tril / triu for every offset of 1..4 x 1..4.
  for n = 1, 4 do
    local x = mx.nd.random.uniform(-1, 1, {2, n, n})
    local xv = x:totable()
    for k = 1 - n, n - 1 do
      for _, lower in ipairs(k == 0 and {true, false} or {true}) do
        local got = la.maketrian(la.extracttrian(x, {offset = k, lower = lower}),
                                 {offset = k, lower = lower}):totable()
        for b = 1, 2 do
          for r = 1, n do
            for c = 1, n do
              local keep
              if k < 0 or (k == 0 and lower) then keep = c - r <= k else keep = c - r >= k end
              assert_eq(got[b][r][c], keep and xv[b][r][c] or 0)
            end
          end
        end
        close(la.extractdiag(la.makediag(la.extractdiag(x, {offset = k}), {offset = k}),
                             {offset = k}), la.extractdiag(x, {offset = k}), 0)
      end
    end
  end
  -- The packing order on a large matrix (each packed element finds its row
  -- from its index): lower row by row, upper column by column.
  local n = 70
  local big = mx.nd.arange(0, n * n, 1, {dtype = 'float64'}):reshape({n, n})
  for _, c in ipairs({{0, true}, {0, false}, {-3, true}, {5, true}}) do
    local k, lower = c[1], c[2]
    local want = {}
    local d = math.abs(k)
    for p = 0, n - d - 1 do
      for q = 0, p do
        if k < 0 or (k == 0 and lower) then
          want[#want + 1] = (p + d) * n + q
        else
          want[#want + 1] = q * n + p + d
        end
      end
    end
    assert_eq(la.extracttrian(big, {offset = k, lower = lower}):totable(), want)
  end
  assert_error(function() la.extractdiag(A, {offset = 2}) end, 'offset 2 is outside')
  assert_error(function() la.maketrian(mx.nd.ones({4})) end, 'no triangle')
end)

test('symbols: mx.sym.linalg infers shapes, aliases resolve', function()
  local a, b = mx.sym.Variable('a'), mx.sym.Variable('b')
  local _, outs = mx.sym.linalg.gemm2(a, b, {transpose_a = true}):infer_shape({a = {7, 3, 2},
    b = {7, 3, 5}})
  assert_eq(outs, {{7, 2, 5}})
  local _, o2 = mx.sym.linalg.syevd(a):infer_shape({a = {4, 3, 3}})
  assert_eq(o2, {{4, 3, 3}, {4, 3}})
  local det = mx.sym.linalg.det(a)
  assert_eq(det:list_outputs(), {det.name .. '_output'})
  local _, o3 = det:infer_shape({a = {5, 2, 2}})
  assert_eq(o3, {{5}})
  assert(mx.nd.linalg_gemm2 ~= nil and mx.nd._linalg_potrf ~= nil)
end)

-- The gradients of ops that read one triangle of a symmetric matrix are the
-- gradients for symmetric changes (MXNet's): checked through X -> (X + X^T)/2.
local function symmetrised(op, extra)
  local x = mx.sym.Variable('x')
  local s = (x + mx.sym.swapaxes(x, {dim1 = 1, dim2 = 2})) * 0.5
  return mx.sym.linalg[op](s, extra or {})
end

test('gradient of potrf (lower and upper) through a symmetric input', function()
  local spd = f64({{4, 1, 0.5}, {1, 3, 0.2}, {0.5, 0.2, 2}})
  for _, lower in ipairs({true, false}) do
    tu.check_numeric_gradient(symmetrised('potrf', {lower = lower}), {x = spd})
    tu.check_numeric_gradient(symmetrised('potrf', {lower = lower}), {x = spd},
                              {grad_req = 'add'})
  end
end)

test('gradient of syevd through a symmetric input', function()
  local sym = f64({{4, 1, 0.5}, {1, 2, 0.2}, {0.5, 0.2, -1}})
  tu.check_numeric_gradient(symmetrised('syevd'), {x = sym})
  -- Each output alone (the other's gradient absent).
  local x = mx.sym.Variable('x')
  local s = (x + mx.sym.swapaxes(x, {dim1 = 1, dim2 = 2})) * 0.5
  local u, l = mx.sym.linalg.syevd(s)[1], mx.sym.linalg.syevd(s)[2]
  tu.check_numeric_gradient(u, {x = sym})
  tu.check_numeric_gradient(l, {x = sym})
end)

test('docs/linalg.md: its example runs', function()
  local here = debug.getinfo(1, 'S').source:match('^@(.*)/[^/]*$') or '.'
  assert_eq(run_doc_examples(here .. '/../../docs/linalg.md'), 1)
end)

test('a batch split over threads gives each matrix as alone', function()
  -- 8 matrices of 40 x 40 are enough work for the op's threads to share.
  local x = mx.nd.random.normal(0, 1, {8, 40, 40}, {dtype = 'float64'})
  local spd = la.syrk(x) + mx.nd.eye(40, {dtype = 'float64'}):reshape({1, 40, 40})
  local function check(batched, single)
    for b = 1, 8 do close(batched[b], single(b), 1e-10) end
  end
  check(la.potrf(spd), function(b) return la.potrf(spd[b]) end)
  check(la.inverse(spd), function(b) return la.inverse(spd[b]) end)
  check((la.syevd(spd)), function(b) return (la.syevd(spd[b])) end)
  check((la.gelqf(x)), function(b) return (la.gelqf(x[b])) end)
  check(la.det(spd):reshape({8, 1}), function(b) return la.det(spd[b]) end)
  check(la.trsm(la.potrf(spd), x), function(b) return la.trsm(la.potrf(spd[b]), x[b]) end)
end)
