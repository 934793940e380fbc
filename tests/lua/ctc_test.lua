-- CTCLoss: hand-computed cases, PyTorch's ctc_loss (tests/data/ctc, values
-- and gradients), central differences, and bad labels.

local tu = mx.test_utils

local flat = mx.test_utils.flatten

test('CTCLoss: hand-computed probabilities', function()
  -- Two classes (0 = blank), uniform activations: every step is 1/2 each.
  local function loss(T, label)
    local data = mx.nd.zeros({T, 1, 2}, {dtype = 'float64'})
    return mx.nd.CTCLoss({data, mx.nd.array({label})}):asscalar()
  end
  assert(math.abs(loss(1, {1}) - math.log(2)) < 1e-12)
  -- "1" in 2 steps: 1 1, blank 1, 1 blank.
  assert(math.abs(loss(2, {1}) + math.log(3 / 4)) < 1e-12)
  -- "1 1" in 3 steps: only 1 blank 1.
  assert(math.abs(loss(3, {1, 1}) + math.log(1 / 8)) < 1e-12)
  -- Too long for the steps: infinite, and no gradient.
  assert(loss(2, {1, 1}) == math.huge)
  local x = mx.nd.zeros({2, 1, 2})
  x:attach_grad()
  mx.autograd.record(function() return mx.nd.CTCLoss({x, mx.nd.array({{1, 1}})}) end):backward()
  assert_eq(flat(x.grad), {0, 0, 0, 0})
  -- blank_label 'last': class 1 is the blank, label 0, padding -1.
  local data = mx.nd.zeros({2, 1, 2}, {dtype = 'float64'})
  local l = mx.nd.CTCLoss({data, mx.nd.array({{0, -1}})}, {blank_label = 'last'}):asscalar()
  assert(math.abs(l + math.log(3 / 4)) < 1e-12)
end)

local cases = dofile((debug.getinfo(1, 'S').source:match('^@(.*)/lua/[^/]*$') or 'tests')
  .. '/data/ctc/torch_reference.lua')
for k, c in ipairs(cases) do
  test(('CTCLoss against PyTorch, case %d (blank %s)'):format(k, c.blank), function()
    local data = mx.nd.array(c.data, {dtype = 'float64'}):reshape({c.T, c.N, c.C})
    data:attach_grad()
    local label = mx.nd.array(c.label)
    local proj = mx.nd.array(c.proj, {dtype = 'float64'})
    local inputs = {data, label, mx.nd.array(c.data_lengths), mx.nd.array(c.label_lengths)}
    local opts = {use_data_lengths = true, use_label_lengths = true, blank_label = c.blank}
    local loss = mx.autograd.record(function() return mx.nd.CTCLoss(inputs, opts) end)
    tu.assert_almost_equal(flat(loss), c.loss, {rtol = 1e-10, atol = 1e-12,
                                                names = {'tessera', 'pytorch'}})
    mx.autograd.record(function() return (mx.nd.CTCLoss(inputs, opts) * proj):sum() end):backward()
    tu.assert_almost_equal(flat(data.grad), c.ddata, {rtol = 1e-9, atol = 1e-11,
                                                      names = {'tessera d data', 'pytorch'}})
    -- Without label_lengths the padding ends each label, the same loss.
    local cut = mx.nd.CTCLoss({data, label, mx.nd.array(c.data_lengths)},
                              {use_data_lengths = true, blank_label = c.blank})
    tu.assert_almost_equal(flat(cut), c.loss, {rtol = 1e-10, atol = 1e-12})
  end)
end

test('CTCLoss gradient against central differences', function()
  local s = mx.sym.CTCLoss({mx.sym.Variable('data'), mx.sym.Variable('label')})
  local data = mx.nd.random.uniform(-1, 1, {5, 2, 4}, {dtype = 'float64'})
  tu.check_numeric_gradient(s, {data = data, label = mx.nd.array({{1, 3}, {2, 2}})},
                            {grad_nodes = {'data'}, numeric_eps = 1e-6, rtol = 1e-6, atol = 1e-8})
end)

test('CTCLoss: bad input is named', function()
  local data = mx.nd.zeros({4, 2, 3})
  assert_error(function()
    mx.nd.CTCLoss({data, mx.nd.array({{1, 5}, {1, 0}})}):wait_to_read()
  end, 'label%[0, 1%] = 5 is not a class of 3')
  assert_error(function()
    mx.nd.CTCLoss({data, mx.nd.array({{1, 2}, {1, 0}}), mx.nd.array({4, 9})},
                  {use_data_lengths = true}):wait_to_read()
  end, 'data_lengths%[1%] = 9')
  assert_error(function() mx.nd.CTCLoss({mx.nd.zeros({4, 3}), mx.nd.array({{1}})}) end,
               'data must be %(sequence, batch, classes%)')
  assert_error(function() mx.nd.CTCLoss({data, mx.nd.array({{1}, {2}, {1}})}) end, 'label must be')
  assert_eq(mx.nd.ctc_loss({data, mx.nd.array({{1, 2}, {1, 0}})}).shape, {2})
end)
