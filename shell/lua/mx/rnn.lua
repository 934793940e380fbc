-- mx.rnn: recurrent networks as symbols (MXNet's mx.rnn) and the data side
-- of bucketing: encode_sentences and BucketSentenceIter.
--
--   local cell = mx.rnn.FusedRNNCell(256, {num_layers = 2, mode = 'lstm', prefix = 'lstm_'})
--   local out = cell:unroll(seq_len, mx.sym.Variable('data'), {merge_outputs = true})
--
-- The step cells (RNNCell, LSTMCell, GRUCell, SequentialRNNCell,
-- BidirectionalCell, DropoutCell, ZoneoutCell, ResidualCell) are
-- mx.gluon.rnn's, called on symbols: their parameters are variables named
-- prefix .. 'i2h_weight' and so on, as MXNet's.
local help = require 'tessera.help'

local unpack = unpack or table.unpack

return function(mx)
  local R = {}
  local grnn = mx.gluon.rnn

  -- ---- cells -------------------------------------------------------------------
  local function step_cell(gluon_cell, default_prefix)
    return function(num_hidden, opts)
      opts = opts or {}
      local o = {}
      for k, v in pairs(opts) do o[k] = v end
      o.prefix = opts.prefix or default_prefix
      return gluon_cell(num_hidden, o)
    end
  end
  R.RNNCell = step_cell(grnn.RNNCell, 'rnn_')
  R.LSTMCell = step_cell(grnn.LSTMCell, 'lstm_')
  R.GRUCell = step_cell(grnn.GRUCell, 'gru_')
  R.SequentialRNNCell = grnn.SequentialRNNCell
  R.BidirectionalCell = grnn.BidirectionalCell
  R.DropoutCell = grnn.DropoutCell
  R.ZoneoutCell = grnn.ZoneoutCell
  R.ResidualCell = grnn.ResidualCell

  -- FusedRNNCell: the whole stack as one RNN op over one packed parameter
  -- variable, prefix .. 'parameters' (MXNet's layout, see docs/sequence.md).
  local Fused = {}
  Fused.__index = Fused
  function R.FusedRNNCell(num_hidden, opts)
    opts = opts or {}
    if type(num_hidden) ~= 'number' or num_hidden < 1 then
      error('FusedRNNCell: num_hidden must be a whole number >= 1, got ' .. tostring(num_hidden), 2)
    end
    local mode = opts.mode or 'lstm'
    if mode ~= 'lstm' and mode ~= 'gru' and mode ~= 'rnn_relu' and mode ~= 'rnn_tanh' then
      error("FusedRNNCell: mode must be 'lstm', 'gru', 'rnn_relu' or 'rnn_tanh', got " .. tostring(mode), 2)
    end
    local self = setmetatable({ _H = num_hidden, _L = opts.num_layers or 1, _mode = mode,
      _bi = opts.bidirectional or false, _dropout = opts.dropout or 0,
      _next_state = opts.get_next_state or false,
      prefix = opts.prefix or (mode .. '_') }, Fused)
    -- MXNet's FusedRNN initializer travels with the variable (its __init__).
    self._params = mx.sym.Variable(self.prefix .. 'parameters', { init = ('["fusedrnn", '
      .. '{"num_hidden": %d, "num_layers": %d, "mode": "%s", "bidirectional": %s, '
      .. '"forget_bias": %g}]'):format(num_hidden, self._L, mode, tostring(self._bi),
      opts.forget_bias or 1) })
    return self
  end
  function Fused:state_info(batch_size)
    local n = self._mode == 'lstm' and 2 or 1
    local info = {}
    for i = 1, n do
      info[i] = { shape = { self._L * (self._bi and 2 or 1), batch_size or 0, self._H },
        __layout = 'LNC' }
    end
    return info
  end
  function Fused:begin_state(batch_size, opts)
    opts = opts or {}
    local out = {}
    for i, info in ipairs(self:state_info(batch_size or 0)) do
      out[i] = mx.sym.zeros({ shape = info.shape, name = ('%sbegin_state_%d'):format(self.prefix, i - 1) })
    end
    return out
  end
  -- cell:unroll(length, inputs, {begin_state =, layout = 'NTC',
  -- merge_outputs =}) -> outputs, states (states empty unless
  -- get_next_state).
  function Fused:unroll(length, inputs, opts)
    opts = opts or {}
    local layout = opts.layout or 'NTC'
    local F = mx.sym
    if not mx.sym.is_symbol(inputs) then
      local steps = {}
      for t = 1, length do steps[t] = F.expand_dims(inputs[t], { axis = 1 }) end
      inputs, layout = F.concat(steps, { dim = 1 }), 'TNC'
    elseif layout == 'NTC' then
      inputs = F.swapaxes(inputs, { dim1 = 1, dim2 = 2 })
    end
    local states = opts.begin_state or self:begin_state(0)
    local args = { inputs, self._params }
    for _, s in ipairs(states) do args[#args + 1] = s end
    local out = F.RNN(args, { state_size = self._H, num_layers = self._L, mode = self._mode,
      bidirectional = self._bi, p = self._dropout, state_outputs = self._next_state,
      name = self.prefix .. 'rnn' })
    local n_states = self._next_state and (self._mode == 'lstm' and 2 or 1) or 0
    local y = n_states > 0 and out[1] or out
    local new = {}
    for i = 1, n_states do new[i] = out[i + 1] end
    if opts.layout == nil or opts.layout == 'NTC' then y = F.swapaxes(y, { dim1 = 1, dim2 = 2 }) end
    local merge = opts.merge_outputs
    if merge == false then
      local axis = (opts.layout or 'NTC'):find('T')
      local list = {}
      local parts = F.split(y, { num_outputs = length, axis = axis, squeeze_axis = true })
      for t = 1, length do list[t] = length == 1 and parts or parts[t] end
      return list, new
    end
    return y, new
  end

  help.doc(R.FusedRNNCell, [[
mx.rnn.FusedRNNCell(num_hidden, {num_layers = 1, mode = 'lstm' | 'gru' |
'rnn_relu' | 'rnn_tanh', bidirectional = false, dropout = 0, get_next_state =
false, prefix = mode .. '_'}): the stack as one RNN op over one parameter
variable (prefix .. 'parameters', MXNet's packed layout).
cell:unroll(length, inputs, {begin_state =, layout = 'NTC', merge_outputs =})
-> outputs, next states (with get_next_state). The step cells mx.rnn.RNNCell,
LSTMCell, GRUCell (prefix 'rnn_', 'lstm_', 'gru_'), SequentialRNNCell,
BidirectionalCell, DropoutCell, ZoneoutCell and ResidualCell are
mx.gluon.rnn's cells, called on symbols.]])

  -- ---- encoding and bucketing iterators ---------------------------------------
  -- encode_sentences(sentences, {vocab =, invalid_label = -1, invalid_key =
  -- '\n', start_label = 0, unknown_token =}) -> the sentences as lists of
  -- ids, and the vocabulary (token -> id), as MXNet's.
  function R.encode_sentences(sentences, opts)
    opts = opts or {}
    local invalid_label = opts.invalid_label or -1
    local vocab, new_vocab = opts.vocab, false
    local idx = opts.start_label or 0
    if not vocab then
      vocab, new_vocab = { [opts.invalid_key or '\n'] = invalid_label }, true
    else
      for _, v in pairs(vocab) do idx = math.max(idx, v + 1) end
    end
    local out = {}
    for i, sent in ipairs(sentences) do
      local coded = {}
      for j, word in ipairs(sent) do
        if vocab[word] == nil then
          if not new_vocab and not opts.unknown_token then
            error(("encode_sentences: '%s' (sentence %d, word %d) is not in the vocabulary"):format(
              tostring(word), i, j), 2)
          end
          if not new_vocab then
            word = opts.unknown_token
          end
          if vocab[word] == nil then
            if idx == invalid_label then idx = idx + 1 end
            vocab[word] = idx
            idx = idx + 1
          end
        end
        coded[j] = vocab[word]
      end
      out[i] = coded
    end
    return out, vocab
  end

  local Bucket = setmetatable({}, { __index = mx.io.DataIter })
  Bucket.__index = Bucket

  -- BucketSentenceIter(sentences, batch_size, {buckets =, invalid_label = -1,
  -- data_name = 'data', label_name = 'softmax_label', dtype = 'float32',
  -- layout = 'NT', shuffle = true}): batches of one bucket's length each;
  -- a sentence goes to the shortest bucket that holds it (longer ones are
  -- dropped, counted in ndiscard) and is padded with invalid_label; the
  -- label is the sentence shifted by one (the next word).
  function R.BucketSentenceIter(sentences, batch_size, opts)
    opts = opts or {}
    if type(batch_size) ~= 'number' or batch_size < 1 then
      error('BucketSentenceIter: batch_size must be a whole number >= 1', 2)
    end
    local invalid = opts.invalid_label or -1
    local buckets = opts.buckets
    if not buckets then
      local count = {}
      for _, s in ipairs(sentences) do count[#s] = (count[#s] or 0) + 1 end
      buckets = {}
      for len, c in pairs(count) do
        if c >= batch_size and len > 0 then buckets[#buckets + 1] = len end
      end
    else
      local b = {}
      for i, v in ipairs(buckets) do b[i] = v end
      buckets = b
    end
    table.sort(buckets)
    if #buckets == 0 then error('BucketSentenceIter: no bucket (give buckets =)', 2) end
    local rows = {}
    for i = 1, #buckets do rows[i] = {} end
    local discard = 0
    for _, s in ipairs(sentences) do
      local b
      for i, len in ipairs(buckets) do
        if #s <= len then b = i break end
      end
      if b then rows[b][#rows[b] + 1] = s else discard = discard + 1 end
    end
    local self = setmetatable({ batch_size = batch_size, buckets = buckets, ndiscard = discard,
      invalid_label = invalid, data_name = opts.data_name or 'data',
      label_name = opts.label_name or 'softmax_label', dtype = opts.dtype or 'float32',
      layout = opts.layout or 'NT', shuffle = opts.shuffle ~= false }, Bucket)
    self.default_bucket_key = buckets[#buckets]
    self._rows = rows
    local n = 0
    for _, r in ipairs(rows) do n = n + #r end
    self.num_data = n
    local shape = self.layout == 'TN' and { self.default_bucket_key, batch_size }
      or { batch_size, self.default_bucket_key }
    self.provide_data = { mx.io.DataDesc(self.data_name, shape, self.dtype, self.layout) }
    self.provide_label = { mx.io.DataDesc(self.label_name, shape, self.dtype, self.layout) }
    self:reset()
    return self
  end

  -- A bucket's rows as data and label arrays, (rows, len) padded.
  local function pack_rows(self, list, len)
    local data, label = {}, {}
    for r, s in ipairs(list) do
      for t = 1, len do
        local k = (r - 1) * len + t
        data[k] = s[t] or self.invalid_label
        label[k] = s[t + 1] or self.invalid_label
      end
    end
    return data, label
  end

  function Bucket:reset()
    self._plan = {}
    for i, list in ipairs(self._rows) do
      if self.shuffle then
        for k = #list, 2, -1 do
          local j = math.random(k)
          list[k], list[j] = list[j], list[k]
        end
      end
      for j = 1, #list - self.batch_size + 1, self.batch_size do
        self._plan[#self._plan + 1] = { i, j }
      end
    end
    if self.shuffle then
      for k = #self._plan, 2, -1 do
        local j = math.random(k)
        self._plan[k], self._plan[j] = self._plan[j], self._plan[k]
      end
    end
    self._cursor = 0
  end

  function Bucket:next()
    self._cursor = self._cursor + 1
    local p = self._plan[self._cursor]
    if not p then return nil end
    local len = self.buckets[p[1]]
    local list = { unpack(self._rows[p[1]], p[2], p[2] + self.batch_size - 1) }
    local d, l = pack_rows(self, list, len)
    local data = mx.nd.array(d, { dtype = self.dtype }):reshape({ self.batch_size, len })
    local label = mx.nd.array(l, { dtype = self.dtype }):reshape({ self.batch_size, len })
    if self.layout == 'TN' then data, label = mx.nd.transpose(data), mx.nd.transpose(label) end
    local shape = data.shape
    return { data = { data }, label = { label }, pad = 0, bucket_key = len,
      provide_data = { mx.io.DataDesc(self.data_name, shape, self.dtype, self.layout) },
      provide_label = { mx.io.DataDesc(self.label_name, shape, self.dtype, self.layout) } }
  end

  help.doc(R.BucketSentenceIter, [[
mx.rnn.BucketSentenceIter(sentences, batch_size, {buckets =, invalid_label =
-1, data_name = 'data', label_name = 'softmax_label', dtype = 'float32',
layout = 'NT' | 'TN', shuffle = true}): sentences (lists of ids, as
encode_sentences makes them) in batches of one bucket's length; each batch
has bucket_key (its length), provide_data and provide_label. Without
buckets, every length with at least batch_size sentences is one.
it.default_bucket_key is the largest bucket; it.ndiscard counts sentences
longer than every bucket.]])
  help.doc(R.encode_sentences, [[
mx.rnn.encode_sentences(sentences, {vocab =, invalid_label = -1, invalid_key =
'\n', start_label = 0, unknown_token =}) -> encoded, vocab: each sentence (a
list of tokens) as a list of ids; a new vocabulary is built unless one is
given (then unknown tokens map to unknown_token, or are an error).]])
  return R
end
