-- mx.viz.print_summary(sym, shapes): a table of the op nodes with their
-- output shapes and parameter counts, as MXNet's; mx.viz.plot_network(sym,
-- opts): the graph drawn by Graphviz, as MXNet's.
local help = require 'tessera.help'

return function(mx)
  local M = {}

  function M.print_summary(sym, shapes, opts)
    opts = opts or {}
    local internals = sym:get_internals()
    local args, outs = internals:infer_shape_partial(shapes or {})
    local names = internals:list_outputs()
    local arg_shape = {}
    local arg_names = internals:list_arguments()
    for i, n in ipairs(arg_names) do arg_shape[n] = args[i] end
    local lines, total = {}, 0
    local function count(s)
      local n = 1
      for _, d in ipairs(s or {}) do n = n * d end
      return (s and #s > 0) and n or 0
    end
    for i, out in ipairs(names) do
      local node = out:match('^(.*)_output%d*$')
      if node then
        local child = internals[i]:get_children()
        local params, prev = 0, {}
        if child then
          for _, c in ipairs(child:list_outputs()) do
            -- A parameter: a variable named after the node, not an input given
            -- a shape nor a label.
            local param = arg_shape[c] and c:sub(1, #node + 1) == node .. '_'
              and not (shapes or {})[c] and not c:match('_label$')
            if param then
              params = params + count(arg_shape[c])
            else
              prev[#prev + 1] = c:gsub('_output%d*$', '')
            end
          end
        end
        total = total + params
        lines[#lines + 1] = { node, '(' .. table.concat(outs[i], ',') .. ')', params,
          table.concat(prev, ', ') }
      end
    end
    local w = opts.line_length or 100
    local fmt = '%-32s %-24s %-12s %s'
    print(('_'):rep(w))
    print(fmt:format('Layer', 'Output Shape', 'Param #', 'Previous Layer'))
    print(('='):rep(w))
    for _, l in ipairs(lines) do print(fmt:format(l[1], l[2], tostring(l[3]), l[4])) end
    print(('='):rep(w))
    print(('Total params: %d'):format(total))
    print(('_'):rep(w))
    return total
  end
  help.doc(M.print_summary, [[
mx.viz.print_summary(sym, {data = shape, ...}, {line_length = 100}) -> the
total number of parameters, after printing a table of sym's layers.

Each operator node gets a row: its name, its output shape, its parameter
count and the layers feeding it. Shapes are inferred from the input shapes
given, partially when some are unknown; a parameter is an argument named
after its node (node_...) that is neither given a shape nor named *_label.
line_length is the width of the table's rules.]])

  -- ---- plot_network ----------------------------------------------------------

  -- MXNet's colours per kind of op (fill colours of ColorBrewer's Set3).
  local colors = { '#8dd3c7', '#fb8072', '#ffffb3', '#bebada', '#80b1d3', '#fdb462', '#b3de69',
    '#fccde5' }
  local weight_suffixes = { '_weight', '_bias', '_beta', '_gamma', '_moving_var', '_moving_mean',
    '_running_var', '_running_mean' }

  local function is_weight(name)
    for _, suffix in ipairs(weight_suffixes) do
      if name:sub(-#suffix) == suffix then return true end
    end
    return false
  end

  local function tuple(text) return (text or ''):gsub('[%(%)%[%] ]', ''):gsub(',', 'x') end

  -- The label and colour of an op node, as MXNet's plot_network makes them.
  local function style(node)
    local op, a = node.op, node.attrs
    if op == 'null' then return node.name, colors[1] end
    if op == 'Convolution' or op == 'Deconvolution' then
      return ('%s\n%s/%s, %s'):format(op, tuple(a.kernel), tuple(a.stride or '1'),
        a.num_filter or ''), colors[2]
    elseif op == 'FullyConnected' then
      return ('FullyConnected\n%s'):format(a.num_hidden or ''), colors[2]
    elseif op == 'BatchNorm' then
      return op, colors[4]
    elseif op == 'Activation' or op == 'LeakyReLU' then
      return ('%s\n%s'):format(op, a.act_type or ''), colors[3]
    elseif op == 'Pooling' then
      return ('Pooling\n%s, %s/%s'):format(a.pool_type or 'max', tuple(a.kernel),
        tuple(a.stride or '1')), colors[5]
    elseif op == 'Concat' or op == 'Flatten' or op == 'Reshape' then
      return op, colors[6]
    elseif op:match('Softmax') then
      return op, colors[7]
    end
    return op, colors[8]
  end

  -- A DOT string; labels keep their \n line breaks.
  local function quote(s) return '"' .. (tostring(s):gsub('"', '\\"')) .. '"' end

  -- The DOT text of sym's graph.
  local function dot_text(sym, opts)
    local g = sym:_graph()
    local shape_of = {}  -- 'node:output' -> shape text, when shapes are given
    if opts.shape then
      local internals = sym:get_internals()
      local _, outs = internals:infer_shape_partial(opts.shape)
      local names = internals:list_outputs()
      local by_name = {}
      for i, n in ipairs(names) do by_name[n] = outs[i] end
      local args, _, _ = sym:infer_shape_partial(opts.shape)
      for i, n in ipairs(sym:list_arguments()) do by_name[n] = by_name[n] or args[i] end
      for i, node in ipairs(g.nodes) do
        for o = 0, node.num_outputs - 1 do
          local key = node.op == 'null' and node.name or (node.name .. '_output' ..
            (node.num_outputs > 1 and tostring(o) or ''))
          local s = by_name[key] or (o == 0 and by_name[node.name .. '_output'])
          if s and #s > 0 then shape_of[i .. ':' .. o] = table.concat(s, 'x') end
        end
      end
    end
    local hidden, ids, seen = {}, {}, {}
    for i, node in ipairs(g.nodes) do
      hidden[i] = opts.hide_weights ~= false and node.op == 'null' and is_weight(node.name)
      -- Nodes are named by their names (the SVG's titles), made unique.
      ids[i] = seen[node.name] and (node.name .. '#' .. i) or node.name
      seen[node.name] = true
    end
    local lines = { 'digraph ' .. quote(opts.title or 'plot') .. ' {',
      '  node [shape=box, fixedsize=true, width=1.3, height=0.8034, style=filled];' }
    for k, v in pairs(opts.node_attrs or {}) do lines[#lines + 1] = ('  node [%s=%s];'):format(k, quote(v)) end
    for i, node in ipairs(g.nodes) do
      if not hidden[i] then
        local label, color = style(node)
        lines[#lines + 1] = ('  %s [label=%s, fillcolor=%s%s];'):format(quote(ids[i]), quote(label),
          quote(color), node.op == 'null' and ', shape=oval' or '')
      end
    end
    for i, node in ipairs(g.nodes) do
      if node.op ~= 'null' then
        for _, input in ipairs(node.inputs) do
          local j, o = input[1], input[2]
          if not hidden[j] then
            local shape = shape_of[j .. ':' .. o]
            lines[#lines + 1] = ('  %s -> %s [dir=back, arrowtail=open%s];'):format(quote(ids[i]),
              quote(ids[j]),
              shape and (', label=' .. quote(shape)) or '')
          end
        end
      end
    end
    lines[#lines + 1] = '}'
    return table.concat(lines, '\n') .. '\n'
  end

  local formats = { svg = true, png = true, pdf = true, dot = true }

  local function write_atomically(path, write)
    local tmp = path .. '.tmp' .. tostring(os.time()) .. tostring(math.random(1e9))
    local ok, err = pcall(write, tmp)
    if not ok then
      os.remove(tmp)
      error(err, 0)
    end
    local renamed, why = os.rename(tmp, path)
    if not renamed then
      os.remove(tmp)
      error('plot_network: cannot write ' .. path .. ': ' .. tostring(why), 0)
    end
  end

  function M.plot_network(sym, opts)
    if not mx.sym.is_symbol(sym) then error('plot_network: expected a Symbol, got ' .. type(sym), 2) end
    opts = opts or {}
    local fmt = opts.save_format or 'svg'
    if not formats[fmt] then
      error(("plot_network: save_format must be 'svg', 'png', 'pdf' or 'dot', got '%s'"):format(
        tostring(fmt)), 2)
    end
    local path = opts.filename or ((opts.title or 'plot') .. '.' .. fmt)
    local text = dot_text(sym, opts)
    if fmt == 'dot' then
      write_atomically(path, function(tmp)
        local f = assert(io.open(tmp, 'w'))
        f:write(text)
        f:close()
      end)
      return path
    end
    local probe = io.popen('command -v dot 2>/dev/null')
    local found = probe:read('*l')
    probe:close()
    if not found or found == '' then
      error("plot_network: Graphviz's dot program is not installed (apt-get install graphviz); "
        .. "save_format = 'dot' writes the graph's text without it", 2)
    end
    local src = os.tmpname()
    local f = assert(io.open(src, 'w'))
    f:write(text)
    f:close()
    write_atomically(path, function(tmp)
      local cmd = ("dot -T%s -o '%s' '%s' 2>&1"):format(fmt, (tmp:gsub("'", "'\\''")),
        (src:gsub("'", "'\\''")))
      local p = io.popen(cmd)
      local out = p:read('*a')
      p:close()
      local made = io.open(tmp, 'rb')
      local size = made and made:seek('end') or 0
      if made then made:close() end
      if size == 0 then error('plot_network: dot failed: ' .. out, 0) end
    end)
    os.remove(src)
    return path
  end
  help.doc(M.plot_network, [[
mx.viz.plot_network(sym, {shape = {data = {1, 3, 224, 224}}, title = 'plot',
save_format = 'svg' | 'png' | 'pdf' | 'dot', filename = title.format,
hide_weights = true, node_attrs = {}}) -> the path written. Draws sym's graph
with Graphviz's dot program as MXNet's plot_network does: a box per op in
MXNet's colours per kind (convolution and fully connected, activation,
batch norm, pooling, reshaping, softmax, others), an oval per input, the
output shapes on the edges when shapes are given, weights and biases hidden
unless hide_weights = false. 'dot' writes the graph's DOT text and needs no
Graphviz. At the prompt, :plot net does the same.]])

  help.doc(M, 'mx.viz.print_summary(sym, {data = shape}) -> prints layers, output shapes and parameter counts; returns the total. mx.viz.plot_network(sym, {shape =, save_format =}) -> draws the graph to a file.')
  return M
end
