-- mx.viz.plot_network: LeNet drawn by Graphviz as a valid SVG that names
-- every node, with MXNet's labels and the output shapes on the edges.

local function lenet()
  local net = mx.sym.Variable('data')
  net = mx.sym.Convolution { data = net, kernel = { 5, 5 }, num_filter = 20, name = 'conv1' }
  net = mx.sym.Activation { data = net, act_type = 'tanh', name = 'tanh1' }
  net = mx.sym.Pooling { data = net, pool_type = 'max', kernel = { 2, 2 }, stride = { 2, 2 },
    name = 'pool1' }
  net = mx.sym.Convolution { data = net, kernel = { 5, 5 }, num_filter = 50, name = 'conv2' }
  net = mx.sym.Activation { data = net, act_type = 'tanh', name = 'tanh2' }
  net = mx.sym.Pooling { data = net, pool_type = 'max', kernel = { 2, 2 }, stride = { 2, 2 },
    name = 'pool2' }
  net = mx.sym.Flatten { data = net, name = 'flatten' }
  net = mx.sym.FullyConnected { data = net, num_hidden = 500, name = 'fc1' }
  net = mx.sym.Activation { data = net, act_type = 'tanh', name = 'tanh3' }
  net = mx.sym.FullyConnected { data = net, num_hidden = 10, name = 'fc2' }
  return mx.sym.SoftmaxOutput { data = net, name = 'softmax' }
end

local function read(path)
  local f = assert(io.open(path, 'rb'))
  local s = f:read('*a')
  f:close()
  return s
end

local function tmpdir()
  local d = os.tmpname()
  os.remove(d)
  assert(os.execute("mkdir -p '" .. d .. "'") ~= nil)
  return d
end

local function ran(cmd)
  local r = os.execute(cmd)
  return r == 0 or r == true
end

test('LeNet as SVG: valid XML, every node named, labels and shapes as MXNet draws them', function()
  local dir = tmpdir()
  local path = mx.viz.plot_network(lenet(), { shape = { data = { 1, 1, 28, 28 } },
    title = 'lenet', filename = dir .. '/lenet.svg' })
  assert_eq(path, dir .. '/lenet.svg')
  assert_eq(ran("python3 -c 'import sys, xml.etree.ElementTree as E; E.parse(sys.argv[1])' '"
    .. path .. "'"), true)
  local svg = read(path)
  for _, name in ipairs({ 'data', 'conv1', 'tanh1', 'pool1', 'conv2', 'tanh2', 'pool2', 'flatten',
    'fc1', 'tanh3', 'fc2', 'softmax', 'softmax_label' }) do
    assert_eq(svg:find('<title>' .. name .. '</title>', 1, true) ~= nil, true, name)
  end
  assert_eq(svg:find('conv1_weight', 1, true), nil)  -- weights hidden
  for _, text in ipairs({ 'Convolution', '5x5/1, 20', 'Pooling', 'max, 2x2/2', 'FullyConnected',
    '500', 'tanh', '1x20x24x24', '1x50x4x4', '1x800', '#fb8072', '#80b1d3' }) do
    assert_eq(svg:find(text, 1, true) ~= nil, true, text)
  end
  os.execute("rm -rf '" .. dir .. "'")
end)

test('dot text, weights shown on request, png; bad arguments', function()
  local dir = tmpdir()
  local path = mx.viz.plot_network(lenet(), { save_format = 'dot', hide_weights = false,
    filename = dir .. '/g.dot' })
  local text = read(path)
  assert_eq(text:find('"conv1_weight"', 1, true) ~= nil, true)
  assert_eq(text:find('"conv1" -> "data" [dir=back', 1, true) ~= nil, true)
  local png = mx.viz.plot_network(lenet(), { save_format = 'png', filename = dir .. '/g.png' })
  assert_eq(read(png):sub(2, 4), 'PNG')
  assert_error(function() mx.viz.plot_network(lenet(), { save_format = 'gif' }) end,
    "save_format must be 'svg', 'png', 'pdf' or 'dot'")
  assert_error(function() mx.viz.plot_network(42) end, 'expected a Symbol')
  os.execute("rm -rf '" .. dir .. "'")
end)
