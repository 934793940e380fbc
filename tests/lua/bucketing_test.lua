-- mx.rnn.encode_sentences, BucketSentenceIter, the symbolic cells, and
-- mx.mod.BucketingModule: a toy sequence task learned over three buckets
-- that share the largest bucket's parameters and memory.

local tu = mx.test_utils

test('encode_sentences builds and applies a vocabulary', function()
  local coded, vocab = mx.rnn.encode_sentences({{'a', 'b', 'a'}, {'c', 'b'}})
  assert_eq(coded, {{0, 1, 0}, {2, 1}})
  assert_eq(vocab.a, 0)
  assert_eq(vocab['\n'], -1)
  local again = mx.rnn.encode_sentences({{'c', 'a'}}, {vocab = vocab})
  assert_eq(again, {{2, 0}})
  assert_error(function() mx.rnn.encode_sentences({{'zz'}}, {vocab = vocab}) end,
               "'zz' .* is not in the vocabulary")
  local unk = mx.rnn.encode_sentences({{'zz', 'a'}}, {vocab = vocab, unknown_token = '<unk>'})
  assert_eq(unk, {{3, 0}})
  -- start_label skips invalid_label.
  local c2 = mx.rnn.encode_sentences({{'x', 'y'}}, {start_label = -1, invalid_label = -1})
  assert_eq(c2, {{0, 1}})
end)

test('BucketSentenceIter: buckets, padding and next-word labels', function()
  local sentences = {}
  for i = 1, 7 do sentences[#sentences + 1] = {1, 2, 3} end      -- length 3
  for i = 1, 5 do sentences[#sentences + 1] = {4, 5, 6, 7, 8} end -- length 5
  sentences[#sentences + 1] = {1, 1, 1, 1, 1, 1, 1, 1, 1}        -- too long: dropped
  local it = mx.rnn.BucketSentenceIter(sentences, 2, {buckets = {3, 6}, shuffle = false})
  assert_eq(it.default_bucket_key, 6)
  assert_eq(it.ndiscard, 1)
  assert_eq(it.provide_data[1].shape, {2, 6})
  local n, keys = 0, {}
  for batch in it:batches() do
    n = n + 1
    keys[batch.bucket_key] = (keys[batch.bucket_key] or 0) + 1
    assert_eq(batch.data[1].shape, {2, batch.bucket_key})
    if batch.bucket_key == 6 then
      assert_eq(batch.data[1]:totable()[1], {4, 5, 6, 7, 8, -1})
      assert_eq(batch.label[1]:totable()[1], {5, 6, 7, 8, -1, -1})
    else
      assert_eq(batch.label[1]:totable()[1], {2, 3, -1})
    end
  end
  assert_eq(keys, {[3] = 3, [6] = 2})  -- 7 and 5 sentences in batches of 2
  assert_eq(n, 5)
  -- Without buckets: every length with a full batch.
  local auto = mx.rnn.BucketSentenceIter(sentences, 4)
  assert_eq(auto.buckets, {3, 5})
end)

test('symbolic cells: FusedRNNCell and LSTMCell unroll into symbols that agree', function()
  mx.random.seed(3)
  local data = mx.sym.Variable('data')
  local fused = mx.rnn.FusedRNNCell(4, {prefix = 'f_'})
  local out = fused:unroll(5, data, {merge_outputs = true})
  local stepped = mx.rnn.LSTMCell(4, {prefix = 's_'})
  local out2 = stepped:unroll(5, data, {merge_outputs = true, layout = 'NTC',
                                        begin_state = {mx.sym.Variable('h0'), mx.sym.Variable('c0')}})
  local args = out:infer_shape({data = {2, 5, 3}})
  assert_eq(out:list_arguments(), {'data', 'f_parameters'})
  assert_eq(args[2], {4 * 4 * (3 + 4) + 2 * 4 * 4})
  -- The same weights through both: pack the step cell's into the fused vector.
  local x = mx.nd.random.uniform(-1, 1, {2, 5, 3})
  local W = mx.nd.random.uniform(-0.5, 0.5, {16, 3})
  local U = mx.nd.random.uniform(-0.5, 0.5, {16, 4})
  local b1, b2 = mx.nd.random.uniform(-0.5, 0.5, {16}), mx.nd.random.uniform(-0.5, 0.5, {16})
  local packed = mx.nd.concat({W:reshape({-1}), U:reshape({-1}), b1, b2}, {dim = 1})
  local e1 = out:bind{args = {data = x, f_parameters = packed}}
  e1:forward()
  local z = mx.nd.zeros({2, 4})
  local e2 = out2:bind{args = {data = x, h0 = z, c0 = z, s_i2h_weight = W, s_h2h_weight = U,
                               s_i2h_bias = b1, s_h2h_bias = b2}}
  e2:forward()
  tu.assert_almost_equal(e1.outputs[1]:totable(), e2.outputs[1]:totable(), {rtol = 1e-5, atol = 1e-6})
end)

-- The toy task: sequences counting up modulo V; the label of each step is
-- the next token. One LSTM network per length.
local V = 7
local function sym_gen(len)
  local data = mx.sym.Variable('data')
  local label = mx.sym.Variable('softmax_label')
  local embed = mx.sym.Embedding{data = data, input_dim = V, output_dim = 8, name = 'embed'}
  local cell = mx.rnn.FusedRNNCell(16, {prefix = 'lstm_'})
  local out = cell:unroll(len, embed, {merge_outputs = true})
  local pred = mx.sym.FullyConnected{data = mx.sym.Reshape{data = out, shape = {-1, 16}},
                                     num_hidden = V, name = 'pred'}
  return mx.sym.SoftmaxOutput{data = pred, label = mx.sym.Reshape{data = label, shape = {-1}},
                              name = 'softmax', use_ignore = true, ignore_label = -1},
      {'data'}, {'softmax_label'}
end

local function counting_sentences(n)
  local out = {}
  for i = 1, n do
    local len = ({4, 8, 12})[i % 3 + 1] - (i % 2)
    local start = i % V
    local s = {}
    for t = 1, len do s[t] = (start + t - 1) % V end
    out[i] = s
  end
  return out
end

test('BucketingModule learns over three buckets sharing parameters and memory', function()
  mx.random.seed(5)
  math.randomseed(5)
  local it = mx.rnn.BucketSentenceIter(counting_sentences(300), 16, {buckets = {4, 8, 12}})
  local mod = mx.mod.BucketingModule(sym_gen, {default_bucket_key = it.default_bucket_key})
  local history = mod:fit(it, {num_epoch = 6, optimizer = 'adam',
    optimizer_params = {learning_rate = 0.01}, eval_metric = mx.metric.Perplexity(-1),
    initializer = mx.init.Xavier(), progress = false})
  local first, last = history[1].train[2], history[#history].train[2]
  assert(last < 1.3 and last < first / 2, ('perplexity %g -> %g'):format(first, last))
  assert_eq(#mod:bucket_keys(), 3)
  -- One set of parameters: every bucket's executor holds the same arrays.
  local w = mod._default.exec.arg_dict['lstm_parameters']
  for _, key in ipairs(mod:bucket_keys()) do
    local exe = mod._buckets[key].exec
    exe.arg_dict['lstm_parameters']:wait_to_read()
    assert(exe.arg_dict['lstm_parameters'] == w or
           (exe.arg_dict['lstm_parameters'] - w):abs():max():asscalar() == 0)
  end
  -- Memory: the smaller buckets take their storage from the largest's.
  local rows, total = mod:memory_report()
  local default_storage
  for _, r in ipairs(rows) do
    if r.key == it.default_bucket_key then default_storage = r.added end
    assert(r.planned > 0)
  end
  for _, r in ipairs(rows) do
    if r.key ~= it.default_bucket_key then
      assert(r.added == 0, ('bucket %d added %d bytes of storage'):format(r.key, r.added))
    end
  end
  assert_eq(total, default_storage)
  -- Scoring and prediction run through the buckets too.
  local res = mod:score(it, mx.metric.Perplexity(-1))
  assert(res[1][2] < 1.3, res[1][2])
end)

test('BucketingModule: errors name the bucket', function()
  local mod = mx.mod.BucketingModule(function(len)
    local s = sym_gen(len)
    if len == 3 then
      s = mx.sym.FullyConnected{data = s, num_hidden = 2, name = 'extra'}
    end
    return s, {'data'}, {'softmax_label'}
  end, {default_bucket_key = 6})
  mod:bind{data_shapes = {{'data', {2, 6}}}, label_shapes = {{'softmax_label', {2, 6}}}}
  mod:init_params{initializer = mx.init.Xavier()}
  assert_error(function() mod:switch_bucket(3, {{'data', {2, 3}}}, {{'softmax_label', {2, 3}}}) end,
               "bucket 3's network has parameter 'extra_")
  assert_error(function() mx.mod.BucketingModule(sym_gen) end, 'default_bucket_key is required')
end)

test('mx.init.FusedRNN fills a packed vector piece by piece', function()
  local H, I = 2, 3
  local P = 4 * H * (I + H) + 2 * 4 * H
  local arr = mx.nd.zeros({P})
  mx.init.FusedRNN(mx.init.One(), H, 1, 'lstm', false, 1.5)('lstm_parameters', arr)
  local v = arr:totable()
  for i = 1, 4 * H * (I + H) do assert(v[i] == 1, 'weight ' .. i) end
  local b = 4 * H * (I + H)
  -- i2h bias: gates i f g o, forget at units 3..4; h2h bias all zero.
  assert_eq({unpack(v, b + 1, b + 8)}, {0, 0, 1.5, 1.5, 0, 0, 0, 0})
  assert_eq({unpack(v, b + 9, b + 16)}, {0, 0, 0, 0, 0, 0, 0, 0})
  assert_error(function() mx.init.FusedRNN(mx.init.One(), H, 1, 'lstm')('p', mx.nd.zeros({7})) end,
               'no input size gives')
end)
