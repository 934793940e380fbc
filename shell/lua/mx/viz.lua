-- mx.viz.print_summary(sym, shapes): a table of the op nodes with their
-- output shapes and parameter counts, as MXNet's.
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

  help.doc(M, 'mx.viz.print_summary(sym, {data = shape}) -> prints layers, output shapes and parameter counts; returns the total')
  return M
end
