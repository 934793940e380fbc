-- mx.gluon: layers for Lua (MXNet's Gluon). Parameter, ParameterDict,
-- Block, HybridBlock and SymbolBlock load with the namespace; nn, rnn, loss,
-- data, Trainer, utils and model_zoo on first use.
local help = require 'tessera.help'

return function(mx)
  local G = {}
  local P = require('tessera.mx.gluon.parameter')(mx)
  G.Parameter, G.ParameterDict, G.Constant = P.Parameter, P.ParameterDict, P.Constant
  local B = require('tessera.mx.gluon.block')(mx, P)
  G.Block, G.HybridBlock, G.SymbolBlock = B.Block, B.HybridBlock, B.SymbolBlock

  local lazy = { nn = 'nn', rnn = 'rnn', loss = 'loss', data = 'data', Trainer = 'trainer', utils = 'utils',
    model_zoo = 'model_zoo', contrib = 'estimator' }
  setmetatable(G, {
    __index = function(t, k)
      local file = lazy[k]
      if not file then return nil end
      local v = require('tessera.mx.gluon.' .. file)(mx, G)
      rawset(t, k, v)
      return v
    end,
    __keys = function()
      local keys = {}
      for k in pairs(lazy) do keys[#keys + 1] = k end
      return keys
    end,
  })

  help.doc(G.Parameter, [[
mx.gluon.Parameter(name, {shape =, dtype = 'float32', init =, grad_req =
'write' | 'add' | 'null', lr_mult = 1, wd_mult = 1, allow_deferred_init =
false, differentiable = true}): a learned array, one copy per context.
p:initialize{init =, ctx =, default_init =, force_reinit =}; p:data(ctx),
p:grad(ctx), p:list_data(), p:list_grad(), p:list_ctx(), p:set_data(a),
p:zero_grad(), p:reset_ctx(ctx), p:cast(dtype), p:var() (its symbol);
p.grad_req = 'null' drops the gradient. A shape with 0s is completed at the
block's first forward (deferred initialisation). The parameter's own init
is applied as a weight rule; without one, the default initializer chooses
by the name's ending (bias 0, gamma 1, ...).]])
  help.doc(G.ParameterDict, [[
mx.gluon.ParameterDict(prefix, shared): parameters by full name, in order.
pd:get(name, opts) (made if absent), pd:get_constant(name, value),
pd['full_name'], pd:items(), pd:keys(), pd:values(), pd:size(),
pd:select(pattern), pd:update(other), pd:initialize(init, ctx),
pd:zero_grad(), pd:reset_ctx(ctx), pd:cast(dtype), pd:setattr(name, value),
pd:save(path, strip_prefix), pd:load(path, ctx, allow_missing, ignore_extra,
restore_prefix) (MXNet's .params; 'arg:'/'aux:' markers accepted). Patterns:
Lua patterns anchored at the start, '|' between alternatives
('.*weight|.*bias').]])
  help.doc(G.Constant, "mx.gluon.Constant(name, value) -> a Parameter holding value, grad_req 'null'")
  help.doc(G, [[
mx.gluon: layers for Lua, MXNet's Gluon. Block, HybridBlock, SymbolBlock,
Parameter, ParameterDict, Constant; nn (layers), loss, data (datasets,
samplers, DataLoader, vision), Trainer, utils, model_zoo.vision (ResNet,
VGG, AlexNet, DenseNet, SqueezeNet, MobileNet v1/v2, Inception v3).
  local nn = mx.gluon.nn
  local net = nn.HybridSequential()
  net:add(nn.Dense(128, {activation = 'relu'}), nn.Dense(10))
  net:initialize(mx.init.Xavier())
  local trainer = mx.gluon.Trainer(net:collect_params(), 'sgd', {learning_rate = 0.1})
  local loss_fn = mx.gluon.loss.SoftmaxCrossEntropyLoss()
  local loss = mx.autograd.record(function() return loss_fn(net(x), y) end)
  loss:backward(); trainer:step(x.shape[1])]])
  return G
end
