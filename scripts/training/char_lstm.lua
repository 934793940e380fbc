-- A character-level language model: a 2-layer LSTM (mx.gluon.rnn.LSTM, the
-- fused RNN op) trained on a real English text, its validation perplexity
-- against a bigram model of the same text, and text sampled from it.
--
-- The text, by default: the GNU Coreutils manual, the full text of its Info
-- version, /usr/share/info/coreutils.info.gz, which Debian's `coreutils`
-- package installs on every system (about 970,000 characters of English
-- prose and examples; GNU Free Documentation License). The first 90% trains,
-- the last 10% validates.
--
--   tessera scripts/training/char_lstm.lua [--text FILE(.gz)] [--epochs 3]
--     [--hidden 256] [--layers 2] [--embed 64] [--seq 64] [--batch-size 32]
--     [--lr 0.002] [--dropout 0.2] [--clip 0.25] [--seed 1] [--sample 400]
--     [--max-chars N] [--save PREFIX]
--
-- Truncated backpropagation through time: each of the batch's rows reads
-- its own stretch of the text, and the LSTM's state carries from one batch
-- to the next (detached). Perplexity: exp of the mean negative log
-- likelihood per character over the validation text.
local here = (arg and arg[0] or ''):match('^(.*)/') or '.'
local common = dofile(here .. '/mnist_common.lua')

local o = common.parse(arg or {}, {text = '/usr/share/info/coreutils.info.gz', epochs = 3,
  hidden = 256, layers = 2, embed = 64, seq = 64, batch_size = 32, lr = 0.002, dropout = 0.2,
  clip = 0.25, seed = 1, sample = 400, max_chars = 0, save = ''},
  'usage: char_lstm.lua [--text FILE] [--epochs N] [--hidden N] [--layers N] [--seq N] '
  .. '[--batch-size N] [--lr X] [--dropout X] [--sample N] [--save PREFIX]')
mx.random.seed(o.seed)
local gluon, nn = mx.gluon, mx.gluon.nn

-- ---- the text ---------------------------------------------------------------
local function read_text(path)
  local f
  if path:match('%.gz$') then
    f = io.popen("gzip -dc '" .. path:gsub("'", "'\\''") .. "'")
  else
    f = io.open(path, 'rb')
  end
  local s = f and f:read('*a')
  if f then f:close() end
  if not s or #s == 0 then error('char_lstm: cannot read ' .. path, 0) end
  -- Info files separate nodes with ^_ (0x1f) and page breaks with ^L.
  return (s:gsub('[\31\12]', ''))
end

local text = read_text(o.text)
if o.max_chars > 0 then text = text:sub(1, o.max_chars) end
local vocab, index = {}, {}
for c in text:gmatch('.') do
  if not index[c] then
    vocab[#vocab + 1] = c
    index[c] = true
  end
end
table.sort(vocab)
for i, c in ipairs(vocab) do index[c] = i - 1 end
local V = #vocab
local ids = {}
for i = 1, #text do ids[i] = index[text:sub(i, i)] end
local n_train = math.floor(#ids * 0.9)
local train_ids, valid_ids = {}, {}
for i = 1, n_train do train_ids[i] = ids[i] end
for i = n_train + 1, #ids do valid_ids[#valid_ids + 1] = ids[i] end
print(('text: %s, %d characters (%d train, %d validation), %d distinct'):format(o.text, #ids,
  #train_ids, #valid_ids, V))

-- ---- the bigram baseline ------------------------------------------------------
-- P(b | a) = l c(a, b) / c(a) + (1 - l) P(b), P(b) add-one smoothed; l is the
-- best of a grid on the validation text (the baseline at its strongest).
local function bigram_perplexity()
  local uni, big, ctx = {}, {}, {}
  for i = 0, V - 1 do uni[i] = 1 end
  for i, b in ipairs(train_ids) do
    uni[b] = uni[b] + 1
    if i > 1 then
      local a = train_ids[i - 1]
      ctx[a] = (ctx[a] or 0) + 1
      big[a * V + b] = (big[a * V + b] or 0) + 1
    end
  end
  local total = #train_ids + V
  local best = math.huge
  for _, l in ipairs({0.5, 0.7, 0.8, 0.9, 0.95, 0.98, 0.99}) do
    local nll = 0
    for i = 2, #valid_ids do
      local a, b = valid_ids[i - 1], valid_ids[i]
      local pb = uni[b] / total
      local p = ctx[a] and l * (big[a * V + b] or 0) / ctx[a] + (1 - l) * pb or pb
      nll = nll - math.log(p)
    end
    best = math.min(best, math.exp(nll / (#valid_ids - 1)))
  end
  return best
end

-- ---- batches ------------------------------------------------------------------
-- The text cut into `batch` equal streams; batch k holds steps
-- [k*seq, (k+1)*seq) of every stream (NTC) and the next characters.
local function batches(list, batch, seq)
  local per = math.floor((#list - 1) / batch)
  local n = math.floor(per / seq)
  local xs, ys = {}, {}
  for r = 0, batch - 1 do
    for t = 1, n * seq do
      xs[#xs + 1] = list[r * per + t]
      ys[#ys + 1] = list[r * per + t + 1]
    end
  end
  local X = mx.nd.array(xs):reshape({batch, n * seq})
  local Y = mx.nd.array(ys):reshape({batch, n * seq})
  local k = 0
  return function()
    if k >= n then return nil end
    local b, e = k * seq, (k + 1) * seq
    k = k + 1
    return mx.nd.slice_axis(X, {axis = 2, begin = b, ['end'] = e}),
      mx.nd.slice_axis(Y, {axis = 2, begin = b, ['end'] = e})
  end, n
end

-- ---- the model ----------------------------------------------------------------
local Model = gluon.Block:extend('CharLSTM')
function Model:__init()
  gluon.Block.__init(self)
  self:name_scope(function()
    self.embed = nn.Embedding(V, o.embed)
    self.lstm = gluon.rnn.LSTM(o.hidden, {num_layers = o.layers, dropout = o.dropout,
      layout = 'NTC', input_size = o.embed})
    self.drop = nn.Dropout(o.dropout)
    self.decoder = nn.Dense(V, {flatten = false, in_units = o.hidden})
  end)
end
function Model:forward(x, states)
  local y, new = self.lstm(self.embed(x), states)
  return self.decoder(self.drop(y)), new
end

local net = Model()
net:initialize(mx.init.Xavier())
net.embed:hybridize()
net.decoder:hybridize()
print(net)
local trainer = gluon.Trainer(net:collect_params(), 'adam', {learning_rate = o.lr})
local loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
local params = net:collect_params():values()

local function detach(states)
  local out = {}
  for i, s in ipairs(states) do out[i] = s:detach() end
  return out
end

local function perplexity(list)
  local batch = 16
  local next_batch = batches(list, batch, o.seq)
  local states = net.lstm:begin_state(batch)
  local nll, count = 0, 0
  for x, y in next_batch do
    local out
    out, states = net(x, states)
    nll = nll + loss_fn(out, y):sum():asscalar() * o.seq
    count = count + batch * o.seq
  end
  return math.exp(nll / count)
end

local bigram = bigram_perplexity()
print(('bigram model: validation perplexity %.3f'):format(bigram))

local valid_ppl
for epoch = 1, o.epochs do
  local next_batch, n = batches(train_ids, o.batch_size, o.seq)
  local bar = mx.callback.ProgressBar(n, {label = ('Epoch %d '):format(epoch)})
  local states = net.lstm:begin_state(o.batch_size)
  local shown = 0
  local k = 0
  for x, y in next_batch do
    states = detach(states)
    local loss = mx.autograd.record(function()
      local out
      out, states = net(x, states)
      return loss_fn(out, y)
    end)
    loss:backward()
    local grads = {}
    for i, p in ipairs(params) do grads[i] = p:grad() end
    gluon.utils.clip_global_norm(grads, o.clip * o.batch_size)
    trainer:step(o.batch_size)
    if k % 20 == 0 then shown = math.exp(loss:mean():asscalar()) end
    k = k + 1
    bar:update(1, ('train perplexity %.2f'):format(shown))
  end
  valid_ppl = perplexity(valid_ids)
  local dt = bar:elapsed()
  bar:finish(('Epoch %d: validation perplexity %.3f (bigram %.3f), %.1fs'):format(epoch,
    valid_ppl, bigram, dt))
end

-- ---- sampling -----------------------------------------------------------------
local function sample(seed_text, n, temperature)
  local states = net.lstm:begin_state(1)
  local out_chars = {seed_text}
  local last
  for i = 1, #seed_text do
    local out
    out, states = net(mx.nd.array({{index[seed_text:sub(i, i)] or 0}}), states)
    last = out
  end
  for _ = 1, n do
    local logits = last:reshape({V}):totable()
    local m = -math.huge
    for _, v in ipairs(logits) do m = math.max(m, v) end
    local p, z = {}, 0
    for i, v in ipairs(logits) do
      p[i] = math.exp((v - m) / temperature)
      z = z + p[i]
    end
    local r, c = math.random() * z, V
    for i = 1, V do
      r = r - p[i]
      if r <= 0 then c = i break end
    end
    out_chars[#out_chars + 1] = vocab[c]
    last, states = net(mx.nd.array({{c - 1}}), states)
  end
  return table.concat(out_chars)
end

math.randomseed(o.seed)
if o.sample > 0 then
  print('--- sampled text (temperature 0.7) ---')
  print(sample('The ', o.sample, 0.7))
  print('---')
end
print(('validation perplexity: %.3f; bigram: %.3f'):format(valid_ppl or perplexity(valid_ids),
  bigram))
if o.save ~= '' then
  net:save_parameters(o.save .. '.params')
  print('parameters: ' .. o.save .. '.params')
end
return valid_ppl, bigram
