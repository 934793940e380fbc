-- mx.plot (gnuplot) and the curves of Module:fit{plot = ...}: the pictures
-- are written, with the numbers plotted in their .dat files; charts in the
-- terminal.

local function read(path)
  local f = assert(io.open(path, 'rb'))
  local s = f:read('*a')
  f:close()
  return s
end

-- The blocks of a .dat file: {{label, {{x, y}, ...}}, ...}.
local function blocks(path)
  local out = {}
  for block in (read(path) .. '\n\n\n'):gmatch('(.-)\n\n\n') do
    if block:match('%S') then
      local label = block:match('^# ([^\n]*)')
      local points = {}
      for x, y in block:gmatch('\n(%S+) (%S+)') do points[#points + 1] = { tonumber(x), tonumber(y) } end
      out[#out + 1] = { label, points }
    end
  end
  return out
end

local function tmp(ext)
  local p = os.tmpname()
  os.remove(p)
  return p .. ext
end

test('figure, plot, savefig: PNG and SVG with their numbers', function()
  local png = tmp('.png')
  local fig = mx.plot.figure { title = 'squares', xlabel = 'n' }
  mx.plot.plot({ 1, 4, 9, 16 }, 'squares')
  mx.plot.plot({ 1, 2, 3 }, mx.nd.array({ 2, 3, 5 }), { label = 'primes', style = 'linespoints' })
  assert_eq(mx.plot.gcf(), fig)
  assert_eq(mx.plot.savefig(png), png)
  assert_eq(read(png):sub(2, 4), 'PNG')
  local b = blocks(png .. '.dat')
  assert_eq(#b, 2)
  assert_eq(b[1][1], 'squares')
  assert_eq(b[1][2], { { 1, 1 }, { 2, 4 }, { 3, 9 }, { 4, 16 } })
  assert_eq(b[2][2], { { 1, 2 }, { 2, 3 }, { 3, 5 } })
  local svg = tmp('.svg')
  fig:savefig(svg)
  assert_eq(read(svg):find('<svg', 1, true) ~= nil, true)
  assert_error(function() fig:savefig(tmp('.gif')) end, 'must end in .png, .svg or .pdf')
  assert_error(function() mx.plot.figure():savefig(tmp('.png')) end, 'nothing plotted')
  assert_error(function() mx.plot.plot({ 1, 2 }, { 1, 2, 3 }) end, '2 x values but 3 y values')
  assert_error(function() mx.plot.plot({ 1, 'a' }) end, 'y%[2%] is string')
  for _, p in ipairs({ png, png .. '.dat', svg, svg .. '.dat' }) do os.remove(p) end
end)

test('chart: braille dots, range on the left', function()
  local c = mx.plot.chart({ 0, 1, 2, 3, 4, 5, 6, 7 }, { width = 4, height = 2 })
  local lines = {}
  for l in c:gmatch('[^\n]+') do lines[#lines + 1] = l end
  assert_eq(#lines, 2)
  assert_eq(lines[1]:match('^%s*(%S+)'), '7')
  assert_eq(lines[2]:match('^%s*(%S+)'), '0')
  -- a rising line: the top row's dots are to the right, the bottom row's to the left
  assert_eq(lines[1]:find('\226\160\128', 1, true) ~= nil, true)  -- an empty cell (U+2800)
  assert_eq(mx.plot.chart({}), '')
end)

test('fit{plot = path}: the curves per batch and per epoch, validation included', function()
  local net = mx.sym.SoftmaxOutput { data = mx.sym.FullyConnected { data = mx.sym.Variable('data'),
    num_hidden = 2, name = 'fc' }, name = 'softmax' }
  local x = mx.nd.random.uniform(-1, 1, { 12, 3 })
  local y = mx.nd.array({ 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1 })
  local png = tmp('.png')
  local mod = mx.mod.Module(net)
  local history = mod:fit(mx.io.NDArrayIter { data = x, label = y, batch_size = 4 }, {
    num_epoch = 3, progress = false, plot = png,
    eval_data = mx.io.NDArrayIter { data = x, label = y, batch_size = 4 } })
  assert_eq(#history, 3)
  assert_eq(#history[1].batches, 3)
  assert_eq(read(png):sub(2, 4), 'PNG')
  local b = blocks(png .. '.dat')
  assert_eq(#b, 3)
  assert_eq(#b[1][2], 9)  -- 3 batches x 3 epochs
  assert_eq(#b[2][2], 3)  -- train, per epoch
  assert_eq(#b[3][2], 3)  -- validation, per epoch
  assert_eq(b[1][2][9][1], 3)  -- the last batch ends epoch 3
  assert_eq(b[3][1], 'validation')
  os.remove(png)
  os.remove(png .. '.dat')
end)

test('the examples of docs/debugging.md run', function()
  local here = debug.getinfo(1, 'S').source:match('^@(.*)/[^/]*$') or '.'
  assert_eq(run_doc_examples(here .. '/../../docs/debugging.md'), 5)
end)
