-- The reference's softmax written as a Lua custom op (forward and backward),
-- used as the loss of a 784-128-64-10 MLP on MNIST.
--   tessera scripts/ops/custom_softmax.lua --data DIR [--epochs 10]
--     [--batch-size 100] [--lr 0.1] [--momentum 0.9] [--seed 1]
--     [--checkpoint PREFIX] [--num-examples N]
-- DIR holds the four MNIST files (train-images-idx3-ubyte.gz, ...).
local here = (arg and arg[0] or ''):match('^(.*)/') or '.'
local common = dofile(here .. '/../training/mnist_common.lua')

-- The operator: softmax over the last axis forward; backward the gradient
-- of the cross-entropy with the label, p - onehot(label), as SoftmaxOutput.
local Softmax = mx.operator.CustomOp:extend()
function Softmax:forward(is_train, req, in_data, out_data)
  local x = in_data[1]
  local e = mx.nd.exp(mx.nd.broadcast_sub(x, mx.nd.max(x, {axis = -1, keepdims = true})))
  self:assign(out_data[1], req[1], mx.nd.broadcast_div(e, mx.nd.sum(e, {axis = -1, keepdims = true})))
end
function Softmax:backward(req, out_grad, in_data, out_data, in_grad)
  local p, label = out_data[1], in_data[2]
  self:assign(in_grad[1], req[1], p - mx.nd.one_hot(label, {depth = p.shape[2]}))
  self:assign(in_grad[2], req[2], 0)  -- labels get no gradient
end

-- The property: arguments data and label, the label's shape from the
-- data's, and no top gradient (it is a loss).
local SoftmaxProp = mx.operator.CustomOpProp:extend{need_top_grad = false}
function SoftmaxProp:list_arguments() return {'data', 'label'} end
function SoftmaxProp:list_outputs() return {'output'} end
function SoftmaxProp:infer_shape(in_shape)
  local data = in_shape[1]
  return {data, {data[1]}}, {data}, {}
end
function SoftmaxProp:create_operator(ctx, shapes, dtypes) return setmetatable({}, Softmax) end
mx.operator.register('softmax', SoftmaxProp)

local o = common.parse(arg or {}, {data = 'data/mnist', epochs = 10, batch_size = 100, lr = 0.1,
  momentum = 0.9, seed = 1, checkpoint = 'custom_softmax', num_examples = 0},
  'usage: custom_softmax.lua --data DIR [--epochs N] [--batch-size N] [--lr X] [--seed N]')
mx.random.seed(o.seed)
local train, test = common.iterators(o, true)

local net = mx.sym.Custom{data = common.mlp(), op_type = 'softmax', name = 'softmax'}

mx.viz.print_summary(net, {data = {o.batch_size, 784}})
return common.train(net, o, train, test)
