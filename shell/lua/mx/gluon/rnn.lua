-- mx.gluon.rnn: recurrent layers over the fused RNN op (RNN, LSTM, GRU) and
-- the cells of MXNet's gluon.rnn (rnn_cell.lua), in Lua.
--
--   local layer = mx.gluon.rnn.LSTM(256, {num_layers = 2, layout = 'NTC'})
--   local out = layer(x)                      -- zero initial states
--   local out, states = layer(x, states)      -- states: {h, c}
--
-- The layers keep MXNet's parameter names (l0_i2h_weight, r0_h2h_bias, ...)
-- and pack them (_rnn_param_concat) into the op's one vector in MXNet's
-- order, so parameters saved by MXNet load. The input size may be left 0:
-- it is taken from the first input.
local help = require 'tessera.help'

local unpack = unpack or table.unpack

return function(mx, G)
  local rnn = {}
  local HybridBlock = G.HybridBlock
  local is_sym = mx.sym.is_symbol
  local function pack(...) return { n = select('#', ...), ... } end

  local gates = { rnn_relu = 1, rnn_tanh = 1, lstm = 4, gru = 3 }

  local function check_count(v, what, lo)
    if type(v) ~= 'number' or v ~= math.floor(v) or v < lo then
      error(('%s must be a whole number >= %d, got %s'):format(what, lo, tostring(v)), 3)
    end
  end

  -- ---- the fused layers ----------------------------------------------------
  local RNNLayer = HybridBlock:extend('_RNNLayer')

  function RNNLayer:__init(mode, hidden_size, opts)
    opts = opts or {}
    local kind = mode == 'lstm' and 'LSTM' or mode == 'gru' and 'GRU' or 'RNN'
    check_count(hidden_size, kind .. ': hidden_size', 1)
    local L = opts.num_layers or 1
    check_count(L, kind .. ': num_layers', 1)
    local layout = opts.layout or 'TNC'
    if layout ~= 'TNC' and layout ~= 'NTC' then
      error(("%s: layout must be 'TNC' or 'NTC', got %s"):format(kind, tostring(layout)), 2)
    end
    local proj = opts.projection_size
    if proj ~= nil then
      if mode ~= 'lstm' then error(kind .. ': projection_size is for LSTM only', 2) end
      check_count(proj, kind .. ': projection_size', 1)
      if proj >= hidden_size then
        error(('%s: projection_size %d must be below hidden_size %d'):format(kind, proj,
          hidden_size), 2)
      end
    end
    opts.hint = opts.hint or mode:gsub('_.*', '')
    HybridBlock.__init(self, opts)
    rawset(self, '_mode', mode)
    rawset(self, '_kind', kind)
    rawset(self, '_H', hidden_size)
    rawset(self, '_L', L)
    rawset(self, '_layout', layout)
    rawset(self, '_dropout', opts.dropout or 0)
    rawset(self, '_dir', opts.bidirectional and 2 or 1)
    rawset(self, '_input_size', opts.input_size or 0)
    rawset(self, '_use_seq', opts.use_sequence_length or false)
    rawset(self, '_proj', proj)
    rawset(self, '_clip', { min = opts.lstm_state_clip_min, max = opts.lstm_state_clip_max,
      nan = opts.lstm_state_clip_nan })
    local G4 = gates[mode] * hidden_size
    local weights, biases = {}, {}
    self:name_scope(function()
      local ni = self._input_size
      for l = 0, L - 1 do
        for d = 1, self._dir do
          local j = (d == 1 and 'l' or 'r') .. l .. '_'
          local function reg(name, shape, init, list)
            self[j .. name] = self.params:get(j .. name, { shape = shape, init = init,
              dtype = opts.dtype, allow_deferred_init = true })
            list[#list + 1] = j .. name
          end
          reg('i2h_weight', { G4, ni }, opts.i2h_weight_initializer, weights)
          reg('h2h_weight', { G4, proj or hidden_size }, opts.h2h_weight_initializer, weights)
          if proj then
            reg('h2r_weight', { proj, hidden_size }, opts.h2r_weight_initializer, weights)
          end
          reg('i2h_bias', { G4 }, opts.i2h_bias_initializer or 'zeros', biases)
          reg('h2h_bias', { G4 }, opts.h2h_bias_initializer or 'zeros', biases)
        end
        ni = (proj or hidden_size) * self._dir
      end
    end)
    -- MXNet's packing order: every weight, then every bias.
    for _, b in ipairs(biases) do weights[#weights + 1] = b end
    rawset(self, '_packing', weights)
  end

  function RNNLayer:_num_states() return self._mode == 'lstm' and 2 or 1 end

  -- {shape =, __layout = 'LNC'} per state.
  function RNNLayer:state_info(batch_size)
    local info = {}
    for i = 1, self:_num_states() do
      local width = i == 1 and self._proj or self._H  -- h is projected, c is not
      info[i] = { shape = { self._L * self._dir, batch_size or 0, width }, __layout = 'LNC' }
    end
    return info
  end

  -- Initial states for a batch: {h} or {h, c}, made by opts.func (mx.nd.zeros).
  function RNNLayer:begin_state(batch_size, opts)
    opts = opts or {}
    local func = opts.func or mx.nd.zeros
    local out = {}
    for i, info in ipairs(self:state_info(batch_size)) do
      if func == mx.sym.zeros then
        out[i] = func({ shape = info.shape, name = ('%sbegin_state_%d'):format(self.prefix, i - 1) })
      else
        out[i] = func(info.shape, { ctx = opts.ctx, dtype = opts.dtype })
      end
    end
    return out
  end

  -- layer(x[, states[, sequence_length]]): the output alone without states,
  -- the output and the new states with them.
  function RNNLayer:forward(x, states, sequence_length)
    local given = states ~= nil
    if mx.nd.is_ndarray(states) or is_sym(states) then states = { states } end
    if not given then
      if is_sym(x) then
        states = self:begin_state(0, { func = mx.sym.zeros })
      elseif mx.nd.is_ndarray(x) then
        local batch = x.shape[self._layout == 'NTC' and 1 or 2]
        states = self:begin_state(batch, { ctx = x.ctx, dtype = x.dtype })
      end
    end
    if type(states) ~= 'table' or #states ~= self:_num_states() then
      error(('%s: expects %d state array(s) (%s), got %s'):format(self.name, self:_num_states(),
        self._mode == 'lstm' and 'h, c' or 'h', type(states) == 'table' and #states or
        type(states)), 2)
    end
    if self._use_seq and sequence_length == nil then
      error(self.name .. ': made with use_sequence_length: pass the lengths as the third argument', 2)
    end
    local args = { x, unpack(states) }
    if self._use_seq then args[#args + 1] = sequence_length end
    local outs = pack(HybridBlock.forward(self, unpack(args)))
    if not given then return outs[1] end
    return outs[1], { unpack(outs, 2, outs.n) }
  end

  function RNNLayer:hybrid_forward(F, x, ...)
    local rest = pack(...)
    local p = rest[rest.n]
    local ns = self:_num_states()
    if self._layout == 'NTC' then x = F.swapaxes(x, { dim1 = 1, dim2 = 2 }) end
    local flat = {}
    for i, name in ipairs(self._packing) do flat[i] = p[name] end
    local named = F == mx.sym
    local params = F._rnn_param_concat(flat, { num_args = #flat, dim = 1,
      name = named and self.prefix .. 'rnn_param_concat' or nil })
    local inputs = { x, params }
    for i = 1, ns do inputs[#inputs + 1] = rest[i] end
    if self._use_seq then inputs[#inputs + 1] = rest[ns + 1] end
    local o = { state_size = self._H, num_layers = self._L, bidirectional = self._dir == 2,
      mode = self._mode, p = self._dropout, state_outputs = true,
      use_sequence_length = self._use_seq, projection_size = self._proj,
      lstm_state_clip_min = self._clip.min,
      lstm_state_clip_max = self._clip.max, lstm_state_clip_nan = self._clip.nan,
      name = named and self.prefix .. 'rnn' or nil }
    local outs = pack(rnn._values_of(F, 1 + ns, F.RNN(inputs, o)))
    local out = outs[1]
    if self._layout == 'NTC' then out = F.swapaxes(out, { dim1 = 1, dim2 = 2 }) end
    return out, unpack(outs, 2, 1 + ns)
  end

  function RNNLayer:_repr()
    local w = self.l0_i2h_weight.shape
    local ni = w[2] > 0 and tostring(w[2]) or 'None'
    local s = ('%s(%s -> %d, %s'):format(self._kind, ni, self._H, self._layout)
    if self._proj then s = s .. (', projection_size=%d'):format(self._proj) end
    if self._L > 1 then s = s .. (', num_layers=%d'):format(self._L) end
    if self._dropout > 0 then s = s .. (', dropout=%g'):format(self._dropout) end
    if self._dir == 2 then s = s .. ', bidirectional' end
    return s .. ')'
  end

  local function layer(mode_of)
    local C = RNNLayer:extend('_Layer')
    function C:__init(hidden_size, opts)
      opts = opts or {}
      RNNLayer.__init(self, mode_of(opts), hidden_size, opts)
    end
    return C
  end

  rnn.RNN = layer(function(opts)
    local act = opts.activation or 'relu'
    if act ~= 'relu' and act ~= 'tanh' then
      error("RNN: activation must be 'relu' or 'tanh', got " .. tostring(act), 4)
    end
    return 'rnn_' .. act
  end)
  rnn.LSTM = layer(function() return 'lstm' end)
  rnn.GRU = layer(function() return 'gru' end)

  local common = [[
Options: num_layers = 1, layout = 'TNC' | 'NTC', dropout = 0 (between
layers, in training), bidirectional = false, input_size = 0 (taken from the
first input), i2h_weight_initializer, h2h_weight_initializer,
i2h_bias_initializer = 'zeros', h2h_bias_initializer = 'zeros', dtype,
use_sequence_length = false (then layer(x, states, lengths)).
layer(x) returns the output (zero initial states); layer(x, states) returns
the output and the new states. layer:begin_state(batch, {ctx =, dtype =}).
LSTM also takes projection_size (LSTMP: h2r_weight projects h, which
recurs at that width) and h2r_weight_initializer.
Parameters: l0_i2h_weight, l0_h2h_weight, l0_i2h_bias, l0_h2h_bias, r0_...
for the reverse direction, as MXNet's.]]
  help.doc(rnn.LSTM, "mx.gluon.rnn.LSTM(hidden_size, {...}): a multi-layer LSTM over the fused RNN\nop; states {h, c}. " .. common)
  help.doc(rnn.GRU, "mx.gluon.rnn.GRU(hidden_size, {...}): a multi-layer GRU over the fused RNN op\n(cuDNN's form); states {h}. " .. common)
  help.doc(rnn.RNN, "mx.gluon.rnn.RNN(hidden_size, {activation = 'relu' | 'tanh', ...}): a\nmulti-layer Elman RNN over the fused RNN op; states {h}. " .. common)

  require('tessera.mx.gluon.rnn_cell')(mx, G, rnn)
  return rnn
end
