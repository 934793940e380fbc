-- The cells of mx.gluon.rnn, as MXNet's gluon.rnn.rnn_cell: one step at a
-- time, cell(x, states) -> output, new_states, and cell:unroll(length,
-- inputs, {...}) for whole sequences. They run op by op on NDArrays and as
-- symbols inside a hybridized parent (F is chosen by the input's kind).
local help = require 'tessera.help'

local unpack = unpack or table.unpack

return function(mx, G, rnn)
  local HybridBlock = G.HybridBlock
  local is_sym = mx.sym.is_symbol

  local function F_of(x) return is_sym(x) and mx.sym or mx.nd end
  local function is_array(x) return mx.nd.is_ndarray(x) or is_sym(x) end

  -- The outputs of a multi-output op as values: mx.nd returns them so, mx.sym
  -- returns one symbol to index.
  local function values_of(F, n, first, ...)
    if F ~= mx.sym then return first, ... end
    local t = {}
    for i = 1, n do t[i] = first[i] end
    return unpack(t, 1, n)
  end
  rnn._values_of = values_of

  -- ---- the base: states and unroll -----------------------------------------
  local RecurrentCell = HybridBlock:extend('RecurrentCell')
  function RecurrentCell:__init(opts) HybridBlock.__init(self, opts) end

  function RecurrentCell:state_info() return {} end
  function RecurrentCell:reset()
    for _, c in ipairs(self._children) do
      if c.block.reset then c.block:reset() end
    end
  end

  -- Initial states for a batch, made by opts.func (mx.nd.zeros by default;
  -- mx.sym.zeros gives symbols of unknown batch).
  function RecurrentCell:begin_state(batch_size, opts)
    opts = opts or {}
    local func = opts.func or mx.nd.zeros
    local out = {}
    for i, info in ipairs(self:state_info(batch_size)) do
      local shape = {}
      for k, v in ipairs(info.shape) do shape[k] = v end
      if func == mx.sym.zeros then
        out[i] = func({ shape = shape, name = ('%sbegin_state_%d'):format(self.prefix, i - 1) })
      else
        out[i] = func(shape, { ctx = opts.ctx, dtype = opts.dtype })
      end
    end
    return out
  end

  -- The parameters as F sees them: arrays on x's context (finishing a
  -- deferred input size from x's last axis) or symbols.
  function RecurrentCell:_params(x)
    local reg = self:_registered()
    local p = {}
    if is_sym(x) then
      for k, param in pairs(reg) do p[k] = param:var() end
      return mx.sym, p
    end
    for k, param in pairs(reg) do
      if param:_is_deferred() then
        local s = param.shape
        if #s == 2 and s[2] == 0 then param:_set_shape({ s[1], x.shape[#x.shape] }) end
        param:_finish_deferred_init()
      end
      p[k] = param:data(x.ctx)
    end
    return mx.nd, p
  end

  function RecurrentCell:forward(x, states)
    if not is_array(x) then
      error(('%s: the input must be an NDArray or a Symbol, got %s'):format(self.name, type(x)), 2)
    end
    if is_array(states) then states = { states } end
    local n = #self:state_info(0)
    if type(states) ~= 'table' or #states ~= n then
      error(('%s: expects a table of %d state(s), got %s'):format(self.name, n,
        type(states) == 'table' and #states or type(states)), 2)
    end
    local F, p = self:_params(x)
    return self:step(F, x, states, p)
  end

  -- An array's `length` steps along `axis` (1-based), as a list.
  local function split_steps(x, length, axis)
    local F = F_of(x)
    if length == 1 then return { F.squeeze(x, { axis = axis }) } end
    return { values_of(F, length, F.split(x, { num_outputs = length, axis = axis,
      squeeze_axis = true })) }
  end

  -- The inputs as a list of steps: a list already, or one array split along
  -- the time axis of `layout`. Called by unroll_start, so a length mismatch
  -- is reported at unroll's caller.
  local function steps_of(length, inputs, layout)
    local axis = layout:find('T')
    if is_array(inputs) then return split_steps(inputs, length, axis), axis end
    if #inputs ~= length then
      error(('unroll: %d inputs given for length %d'):format(#inputs, length), 4)
    end
    return inputs, axis
  end

  -- What every unroll begins with: its options, the cells' per-sequence
  -- state cleared, and the inputs as steps with their time axis, F (the
  -- namespace they run in) and layout.
  local function unroll_start(self, length, inputs, opts)
    opts = opts or {}
    self:reset()
    local layout = opts.layout or 'NTC'
    local steps, axis = steps_of(length, inputs, layout)
    return opts, steps, axis, F_of(steps[1]), layout
  end

  -- merge_outputs as unroll reads it: when not given, whether the inputs
  -- came as one array.
  local function merge_of(opts, inputs)
    local merge = opts.merge_outputs
    if merge == nil then merge = is_array(inputs) end
    return merge
  end

  local function batch_of(step)
    return mx.nd.is_ndarray(step) and step.shape[1] or 0
  end

  -- cell:unroll(length, inputs, {begin_state =, layout = 'NTC',
  -- merge_outputs =, valid_length =}) -> outputs, states. outputs: a list
  -- of steps, or one array stacked on the time axis when merge_outputs (or
  -- when inputs was one array and merge_outputs is not false).
  function RecurrentCell:unroll(length, inputs, opts)
    local steps, axis, F
    opts, steps, axis, F = unroll_start(self, length, inputs, opts)
    local states = opts.begin_state
    if not states then
      states = self:begin_state(batch_of(steps[1]), { func = F == mx.sym and mx.sym.zeros or nil,
        ctx = mx.nd.is_ndarray(steps[1]) and steps[1].ctx or nil,
        dtype = mx.nd.is_ndarray(steps[1]) and steps[1].dtype or nil })
    end
    local outputs, history = {}, {}
    for t = 1, length do
      outputs[t], states = self(steps[t], states)
      history[t] = states
    end
    local valid = opts.valid_length
    if valid then
      -- Each state at its row's last step; outputs zero past it.
      local last = {}
      for i = 1, #states do
        local seq = {}
        for t = 1, length do seq[t] = history[t][i] end
        last[i] = F.SequenceLast({ F.stack(seq, { axis = 1 }), valid },
          { use_sequence_length = true })
      end
      states = last
    end
    local merge = merge_of(opts, inputs)
    if valid or merge then
      local stacked = F.stack(outputs, { axis = axis })
      if valid then
        stacked = F.SequenceMask({ stacked, valid }, { use_sequence_length = true, axis = axis })
      end
      if merge then return stacked, states end
      outputs = split_steps(stacked, length, axis)
    end
    return outputs, states
  end
  rnn.RecurrentCell = RecurrentCell
  rnn.HybridRecurrentCell = RecurrentCell

  -- ---- RNNCell, LSTMCell, GRUCell -------------------------------------------
  local function gated_cell(name, ngates, n_states, step)
    local C = RecurrentCell:extend(name)
    function C:__init(hidden_size, opts)
      opts = opts or {}
      if type(hidden_size) ~= 'number' or hidden_size < 1 or hidden_size ~= math.floor(hidden_size) then
        error(('%s: hidden_size must be a whole number >= 1, got %s'):format(name,
          tostring(hidden_size)), 2)
      end
      opts.hint = opts.hint or name:lower():gsub('cell$', '')
      RecurrentCell.__init(self, opts)
      rawset(self, '_H', hidden_size)
      rawset(self, '_activation', opts.activation or 'tanh')
      local gh = ngates * hidden_size
      self:name_scope(function()
        local function reg(k, shape, init)
          self[k] = self.params:get(k, { shape = shape, init = init, dtype = opts.dtype,
            allow_deferred_init = true })
        end
        reg('i2h_weight', { gh, opts.input_size or 0 }, opts.i2h_weight_initializer)
        reg('h2h_weight', { gh, hidden_size }, opts.h2h_weight_initializer)
        reg('i2h_bias', { gh }, opts.i2h_bias_initializer or 'zeros')
        reg('h2h_bias', { gh }, opts.h2h_bias_initializer or 'zeros')
      end)
    end
    function C:state_info(batch_size)
      local info = {}
      for i = 1, n_states do info[i] = { shape = { batch_size or 0, self._H }, __layout = 'NC' } end
      return info
    end
    C.step = step
    function C:_repr()
      local w = self.i2h_weight.shape
      return ('%s(%s -> %d)'):format(name, w[2] > 0 and tostring(w[2]) or 'None', self._H)
    end
    return C
  end

  local function proj(self, F, x, h, p, gh)
    local i2h = F.FullyConnected(x, p.i2h_weight, p.i2h_bias, { num_hidden = gh })
    local h2h = F.FullyConnected(h, p.h2h_weight, p.h2h_bias, { num_hidden = gh })
    return i2h, h2h
  end

  local function act(F, name, x)
    return F.Activation(x, { act_type = name })
  end

  rnn.RNNCell = gated_cell('RNNCell', 1, 1, function(self, F, x, states, p)
    local i2h, h2h = proj(self, F, x, states[1], p, self._H)
    local out = act(F, self._activation, i2h + h2h)
    return out, { out }
  end)

  rnn.LSTMCell = gated_cell('LSTMCell', 4, 2, function(self, F, x, states, p)
    local i2h, h2h = proj(self, F, x, states[1], p, 4 * self._H)
    local i, f, g, o = values_of(F, 4, F.SliceChannel(i2h + h2h, { num_outputs = 4, axis = 2 }))
    i, f, o = F.sigmoid(i), F.sigmoid(f), F.sigmoid(o)
    g = act(F, self._activation, g)
    local c = f * states[2] + i * g
    local h = o * act(F, self._activation, c)
    return h, { h, c }
  end)

  rnn.GRUCell = gated_cell('GRUCell', 3, 1, function(self, F, x, states, p)
    local prev = states[1]
    local i2h, h2h = proj(self, F, x, prev, p, 3 * self._H)
    local xr, xz, xn = values_of(F, 3, F.SliceChannel(i2h, { num_outputs = 3, axis = 2 }))
    local hr, hz, hn = values_of(F, 3, F.SliceChannel(h2h, { num_outputs = 3, axis = 2 }))
    local r = F.sigmoid(xr + hr)
    local z = F.sigmoid(xz + hz)
    local n = act(F, self._activation, xn + r * hn)
    local h = (1 - z) * n + z * prev
    return h, { h }
  end)

  help.doc(rnn.LSTMCell, [[
mx.gluon.rnn.LSTMCell(hidden_size, {input_size = 0, i2h_weight_initializer,
h2h_weight_initializer, i2h_bias_initializer, h2h_bias_initializer}): one
LSTM step (gates i f g o, as the fused op), cell(x, {h, c}) -> h, {h, c}.
RNNCell (activation = 'tanh' | 'relu') and GRUCell (cuDNN's form) likewise;
every cell has state_info(batch), begin_state(batch, {func =, ctx =,
dtype =}), reset() and unroll(length, inputs, {begin_state =, layout =
'NTC', merge_outputs =, valid_length =}).]])

  -- ---- containers and modifiers --------------------------------------------
  -- A container's states: its children's, in order.
  local function children_state_info(self, batch_size)
    local info = {}
    for _, c in ipairs(self._children) do
      for _, s in ipairs(c.block:state_info(batch_size)) do info[#info + 1] = s end
    end
    return info
  end

  local SequentialRNNCell = RecurrentCell:extend('SequentialRNNCell')
  function SequentialRNNCell:__init(opts) RecurrentCell.__init(self, opts) end
  function SequentialRNNCell:add(cell)
    self:register_child(cell)
    return self
  end
  SequentialRNNCell.state_info = children_state_info
  function SequentialRNNCell:forward(x, states)
    local out, pos = {}, 1
    for _, c in ipairs(self._children) do
      local n = #c.block:state_info(0)
      local mine = { unpack(states, pos, pos + n - 1) }
      local new
      x, new = c.block(x, mine)
      for _, s in ipairs(new) do out[#out + 1] = s end
      pos = pos + n
    end
    return x, out
  end
  -- Layer by layer, so that a BidirectionalCell inside unrolls whole.
  function SequentialRNNCell:unroll(length, inputs, opts)
    opts = opts or {}
    self:reset()
    local states, pos, x = {}, 1, inputs
    local n_cells = #self._children
    for k, c in ipairs(self._children) do
      local n = #c.block:state_info(0)
      local begin = opts.begin_state and { unpack(opts.begin_state, pos, pos + n - 1) } or nil
      local merge = opts.merge_outputs
      if k < n_cells then merge = nil end
      local st
      x, st = c.block:unroll(length, x, { begin_state = begin, layout = opts.layout,
        merge_outputs = merge, valid_length = opts.valid_length })
      for _, s in ipairs(st) do states[#states + 1] = s end
      pos = pos + n
    end
    return x, states
  end
  function SequentialRNNCell:size() return #self._children end
  rnn.SequentialRNNCell = SequentialRNNCell
  rnn.HybridSequentialRNNCell = SequentialRNNCell

  local DropoutCell = RecurrentCell:extend('DropoutCell')
  function DropoutCell:__init(rate, opts)
    opts = opts or {}
    if type(rate) ~= 'number' or rate < 0 or rate > 1 then
      error('DropoutCell: rate must be a number in [0, 1], got ' .. tostring(rate), 2)
    end
    RecurrentCell.__init(self, opts)
    rawset(self, '_rate', rate)
    rawset(self, '_axes', opts.axes)
  end
  function DropoutCell:step(F, x, states)
    if self._rate > 0 then x = F.Dropout(x, { p = self._rate, axes = self._axes }) end
    return x, states
  end
  rnn.DropoutCell = DropoutCell

  -- A cell wrapping another: its parameters and states are the base cell's.
  local ModifierCell = RecurrentCell:extend('ModifierCell')
  function ModifierCell:__init(base, opts)
    RecurrentCell.__init(self, opts or { prefix = base.prefix .. self:_suffix(), params = nil })
    self:register_child(base, 'base_cell')
    rawset(self, 'base_cell', base)
  end
  function ModifierCell:_suffix() return 'modified_' end
  function ModifierCell:state_info(batch_size) return self.base_cell:state_info(batch_size) end
  function ModifierCell:begin_state(batch_size, opts)
    return self.base_cell:begin_state(batch_size, opts)
  end
  function ModifierCell:forward(x, states) return self:step(x, states) end

  local ZoneoutCell = ModifierCell:extend('ZoneoutCell')
  function ZoneoutCell:__init(base, opts)
    opts = opts or {}
    ModifierCell.__init(self, base)
    rawset(self, '_p_out', opts.zoneout_outputs or 0)
    rawset(self, '_p_state', opts.zoneout_states or 0)
  end
  function ZoneoutCell:reset()
    ModifierCell.reset(self)
    rawset(self, '_prev_output', nil)
  end
  -- In training each unit keeps its previous value with probability p
  -- (the mask is Dropout's, so outside training nothing is kept back).
  function ZoneoutCell:step(x, states)
    local F = F_of(x)
    local out, new = self.base_cell(x, states)
    local function mask(p, like) return F.Dropout(F.ones_like(like), { p = p }) end
    local prev = self._prev_output or F.zeros_like(out)
    if self._p_out > 0 then out = F.where(mask(self._p_out, out), out, prev) end
    if self._p_state > 0 then
      for i, s in ipairs(new) do new[i] = F.where(mask(self._p_state, s), s, states[i]) end
    end
    rawset(self, '_prev_output', out)
    return out, new
  end
  rnn.ZoneoutCell = ZoneoutCell

  local ResidualCell = ModifierCell:extend('ResidualCell')
  function ResidualCell:__init(base) ModifierCell.__init(self, base) end
  function ResidualCell:step(x, states)
    local out, new = self.base_cell(x, states)
    return out + x, new
  end
  rnn.ResidualCell = ResidualCell

  -- Two cells over the sequence, one reading it backwards; outputs joined
  -- on the feature axis. Only unroll: a single step has no "backwards".
  local BidirectionalCell = RecurrentCell:extend('BidirectionalCell')
  function BidirectionalCell:__init(l_cell, r_cell, opts)
    RecurrentCell.__init(self, opts or { prefix = 'bi_' })
    self:register_child(l_cell, 'l_cell')
    self:register_child(r_cell, 'r_cell')
  end
  BidirectionalCell.state_info = children_state_info
  function BidirectionalCell:forward()
    error(self.name .. ': a BidirectionalCell cannot be stepped; use unroll', 2)
  end
  function BidirectionalCell:unroll(length, inputs, opts)
    local steps, axis, F, layout
    opts, steps, axis, F, layout = unroll_start(self, length, inputs, opts)
    local l_cell, r_cell = self._children[1].block, self._children[2].block
    local nl = #l_cell:state_info(0)
    local begin = opts.begin_state
    local valid = opts.valid_length
    local function reversed(list)
      if not valid then
        local r = {}
        for t = 1, length do r[t] = list[length + 1 - t] end
        return r
      end
      local rev = F.SequenceReverse({ F.stack(list, { axis = 1 }), valid },
        { use_sequence_length = true })
      return split_steps(rev, length, 1)
    end
    local l_out, l_states = l_cell:unroll(length, steps, { begin_state = begin and
      { unpack(begin, 1, nl) }, layout = layout, merge_outputs = false, valid_length = valid })
    local r_out, r_states = r_cell:unroll(length, reversed(steps), { begin_state = begin and
      { unpack(begin, nl + 1) }, layout = layout, merge_outputs = false, valid_length = valid })
    r_out = reversed(r_out)
    local outputs = {}
    for t = 1, length do
      outputs[t] = F.concat({ l_out[t], r_out[t] }, { dim = -1 })
    end
    local states = {}
    for _, s in ipairs(l_states) do states[#states + 1] = s end
    for _, s in ipairs(r_states) do states[#states + 1] = s end
    if merge_of(opts, inputs) then return F.stack(outputs, { axis = axis }), states end
    return outputs, states
  end
  rnn.BidirectionalCell = BidirectionalCell

  help.doc(rnn.SequentialRNNCell, [[
mx.gluon.rnn.SequentialRNNCell(): cells stacked (cell:add(c)); its states
are its cells' in order. DropoutCell(rate, {axes =}) drops the input in
training; ZoneoutCell(cell, {zoneout_outputs =, zoneout_states =}) keeps each
unit's previous value with that probability in training; ResidualCell(cell)
adds the input to the output; BidirectionalCell(l_cell, r_cell) unrolls one
cell forwards and one backwards and joins their outputs.]])
end
