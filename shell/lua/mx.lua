-- The Lua half of the mx API. The C++ bindings have filled `mx` (contexts,
-- engine, profiler, ...); this adds what is simplest in Lua: aliases with
-- MXNet's names, help, and lazily loaded pure-Lua namespaces.
--
-- Pure-Lua namespaces live in shell/lua/mx/<name>.lua, are embedded in the
-- binary as package.preload['tessera.mx.<name>'], and load on first access
-- to mx.<name>: each file receives `mx` and returns the namespace table.
local help = require 'tessera.help'

return function(mx)
  mx.__version__ = require('tessera.internal').version
  mx.waitall = mx.engine.wait_for_all
  mx.engine.waitall = mx.engine.wait_for_all
  mx.num_gpus = mx.context.num_gpus
  mx.help = help.help
  _G.help = help.help
  mx.doc = help.doc
  help.doc(mx, [[
mx: the Tessera API: the namespaces and functions below (mx.nd, mx.sym,
mx.autograd, mx.io, mx.mod, ...; those written in Lua load on first use);
contexts mx.cpu(i), mx.gpu(i); mx.waitall() waits for all pushed work.
help(x) shows the documentation of a value, or of a name such as
'engine.push', 'optimizer.create', 'NDArray.reshape' or an operator's;
?name at the prompt is help('name'). mx.pp(v, ...) prints values as the
prompt does.]])
  local pretty = require 'tessera.pretty'
  mx.pp = help.doc(function(...)
    pretty.print_values(false, select('#', ...), ...)
  end, [[
mx.pp(v, ...) prints the values as the prompt prints results (on one line,
tab-separated): tables with their contents (sorted keys, nested to a bounded
depth, cycles marked), strings quoted; print(t) prints a table's address, as
Lua does.]])
  help.doc(mx.waitall, 'mx.waitall() -> waits for everything pushed (mx.engine.wait_for_all)')
  help.doc(mx.help, "mx.help(x) -> prints the documentation of a value or a name ('engine.push')")
  help.doc(mx.doc, [[
mx.doc(value, text) -> value. Records `text` as the documentation help(value)
prints, for any function or table:
  local f = mx.doc(function(x) return 2 * x end, 'f(x) -> twice x')]])

  local ctx_meta = getmetatable(mx.cpu())
  mx.context.is_context = help.doc(function(v)
    return type(v) == 'userdata' and getmetatable(v) == ctx_meta
  end, 'mx.context.is_context(v) -> whether v is a context (mx.cpu(i), mx.gpu(i), ...)')

  local class = require 'tessera.class'
  mx.class = help.doc(setmetatable({ isinstance = class.isinstance, is_class = class.is_class },
    { __call = function(_, name, parent)
      if parent then return class.extend(parent, name) end
      return class.root(name)
    end }), [[
mx.class(name, parent) -> a class, called to construct, as torch.class's:
  local Animal = mx.class('Animal')
  function Animal:__init(name) self.name = name end
  local Dog = Animal:extend('Dog')     -- or mx.class('Dog', Animal)
  function Dog:__init(name) Animal.__init(self, name); self.legs = 4 end
  local d = Dog('rex')
A class is its instances' metatable; methods it lacks come from its parent
(Dog.super). Metamethods (__call, __tostring, ...) are copied to a subclass
when it is made, so define them before extending. mx.class.isinstance(obj,
cls) says whether obj was made by cls or a class below it. The API's classes
(gluon Blocks and losses, CustomOp, CustomOpProp) are made this way.]])
  require('tessera.autograd')(mx)
  require('tessera.executor')(mx)
  require('tessera.operator')(mx)
  require('tessera.profiler')(mx)
  require('tessera.contrib')(mx)

  local prefix = 'tessera.mx.'
  setmetatable(mx, {
    __index = function(t, k)
      if type(k) ~= 'string' then return nil end
      local loader = package.preload[prefix .. k]
      if not loader then return nil end
      local ns = require(prefix .. k)
      if type(ns) == 'function' then ns = ns(mx) end
      rawset(t, k, ns)
      return ns
    end,
    -- For tab completion: the names __index can produce.
    __keys = function()
      local keys = {}
      for name in pairs(package.preload) do
        local k = name:match('^tessera%.mx%.([%w_]+)$')
        if k then keys[#keys + 1] = k end
      end
      return keys
    end,
  })
end
