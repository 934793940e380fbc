-- BucketingModule's memory: a 2-layer LSTM language model (vocabulary 10000,
-- embedding and hidden 256, batch 32) over buckets of 10, 20, 30 and 40
-- steps, each bound and run for one training step. Prints the internal
-- storage each bucket's executor plans and what it added to the largest
-- bucket's, what the buckets hold together (what the module allocates) and
-- what separate modules would hold.
--   tessera scripts/bench/bucketing_memory.lua
local V, E, H, N = 10000, 256, 256, 32
local buckets = {10, 20, 30, 40}
local function sym_gen(len)
  local data, label = mx.sym.Variable('data'), mx.sym.Variable('softmax_label')
  local embed = mx.sym.Embedding{data = data, input_dim = V, output_dim = E, name = 'embed'}
  local out = mx.rnn.FusedRNNCell(H, {num_layers = 2, prefix = 'lstm_'}):unroll(len, embed,
    {merge_outputs = true})
  local pred = mx.sym.FullyConnected{data = mx.sym.Reshape{data = out, shape = {-1, H}},
    num_hidden = V, name = 'pred'}
  return mx.sym.SoftmaxOutput{data = pred, label = mx.sym.Reshape{data = label, shape = {-1}},
    name = 'softmax'}, {'data'}, {'softmax_label'}
end
local mod = mx.mod.BucketingModule(sym_gen, {default_bucket_key = 40})
mod:bind{data_shapes = {{'data', {N, 40}}}, label_shapes = {{'softmax_label', {N, 40}}}}
mod:init_params{initializer = mx.init.Xavier()}
mod:init_optimizer{optimizer = 'sgd', optimizer_params = {learning_rate = 0.1}}
for i = #buckets, 1, -1 do
  local len = buckets[i]
  local x = mx.nd.random.randint(0, V, {N, len}):astype('float32')
  mod:forward({data = {x}, label = {x}, bucket_key = len,
    provide_data = {{'data', {N, len}}}, provide_label = {{'softmax_label', {N, len}}}}, true)
  mod:backward()
  mod:update()
end
mx.nd.waitall()
local rows, total = mod:memory_report()
local separate = 0
for _, r in ipairs(rows) do
  print(('bucketing_lstm_bucket%d_planned: %.1f MB'):format(r.key, r.planned / 2^20))
  print(('bucketing_lstm_bucket%d_added: %.1f MB'):format(r.key, r.added / 2^20))
  separate = separate + r.planned
end
print(('bucketing_lstm_shared_total: %.1f MB'):format(total / 2^20))
print(('bucketing_lstm_separate_total: %.1f MB'):format(separate / 2^20))
print(('bucketing_lstm_shared_vs_largest: %.2f x'):format(total / rows[1].planned))
