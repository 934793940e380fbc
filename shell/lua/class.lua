-- Classes that are called to construct, as torch.class's:
--
--   local Animal = mx.class('Animal')
--   function Animal:__init(name) self.name = name end
--   local Dog = Animal:extend('Dog')
--   function Dog:__init(name) Animal.__init(self, name); self.legs = 4 end
--   local d = Dog('rex')             -- d.name == 'rex', d.legs == 4
--
-- A class is the metatable of its instances (its __index is itself) and
-- looks up what it lacks in its parent. Lua reads metamethods from the
-- metatable itself, never through __index, so extend copies the parent's
-- (__call, __tostring, __newindex, ...) into the subclass: define them on a
-- class before extending it.
local M = {}

local kMetamethods = { '__call', '__tostring', '__len', '__eq', '__lt', '__le', '__add', '__sub',
  '__mul', '__div', '__mod', '__pow', '__unm', '__concat', '__newindex', '__gc' }

-- What every class's own metatable holds: construction and printing.
local ClassMeta = {}

function ClassMeta.__call(cls, ...)
  local obj = setmetatable({}, cls)
  local init = cls.__init
  if init then init(obj, ...) end
  return obj
end

function ClassMeta.__tostring(cls)
  return 'class ' .. tostring(rawget(cls, '__name') or '?')
end

-- Classes carry their metatable's lookup of the parent.
local function meta_of(parent)
  return { __call = ClassMeta.__call, __tostring = ClassMeta.__tostring, __index = parent }
end

-- A class named `name` (for messages and printing), below `parent` when given.
-- `fields` seeds it (methods, defaults).
function M.class(name, parent, fields)
  if name ~= nil and type(name) ~= 'string' then
    error('class: the name must be a string, got ' .. type(name), 2)
  end
  local cls = fields or {}
  if parent ~= nil then
    if type(parent) ~= 'table' then error('class: the parent must be a class, got ' .. type(parent), 2) end
    for _, m in ipairs(kMetamethods) do
      if rawget(cls, m) == nil and parent[m] ~= nil then cls[m] = parent[m] end
    end
  end
  -- A parent whose __index is a function (properties, looked-up children)
  -- passes it on; that function finds methods through getmetatable(obj).
  local pidx = parent and rawget(parent, '__index')
  cls.__index = type(pidx) == 'function' and pidx or cls
  cls.__name = name or (parent and (rawget(parent, '__name') or '?') .. '.subclass') or 'class'
  cls.super = parent
  return setmetatable(cls, meta_of(parent))
end

-- cls:extend(name) or cls:extend(fields) or cls:extend(name, fields): a subclass.
function M.extend(parent, name, fields)
  if type(name) == 'table' then name, fields = nil, name end
  return M.class(name, parent, fields)
end

-- Whether `obj` is an instance of `cls` or of a class below it.
function M.isinstance(obj, cls)
  if type(obj) ~= 'table' then return false end
  local c = getmetatable(obj)
  while type(c) == 'table' do
    if c == cls then return true end
    c = rawget(c, 'super')
  end
  return false
end

-- Whether `v` is a class made here.
function M.is_class(v)
  if type(v) ~= 'table' then return false end
  local mt = getmetatable(v)
  return type(mt) == 'table' and mt.__call == ClassMeta.__call
end

-- A root class with extend, for the API's base classes.
function M.root(name, fields)
  local cls = M.class(name, nil, fields)
  cls.extend = M.extend
  return cls
end

return M
