-- Translates a Lua function of numbers into a C function, from its LuaJIT
-- bytecode: the step that lets an elementwise operator written in Lua
-- (mx.operator.elementwise) run where LuaJIT cannot, as CUDA C compiled by
-- NVRTC. Working on bytecode rather than source serves every function,
-- including those typed at the prompt, whose source is gone.
--
--   local c = require('tessera.lua2c').translate(function(x) return math.exp(-x * x) end,
--                                               {name = 'gauss', results = 1})
--   -- c.source: TS_LUA2C_FN void gauss(double r0, double* y1) { ... }
--
-- Each bytecode instruction becomes one C statement on `double` registers,
-- jumps become gotos (forward only: loops are refused), and the function
-- returns its results through pointers. What a kernel cannot do is refused
-- with an error naming the function, the line and the construct: tables,
-- strings, globals other than `math`, closures, loops, varargs, calls other
-- than math.* functions, a wrong number of results. Upvalues that hold
-- numbers are read once, when translating. Arithmetic is double precision,
-- as LuaJIT's, and follows Lua where C differs (%, comparisons with NaN).
-- The caller defines TS_LUA2C_FN (`static inline`, `__device__ inline`).
local bit = require 'bit'
local jutil = require 'jit.util'
-- LuaJIT's opcode names; a Lua module installed beside the library.
local found, vmdef = pcall(require, 'jit.vmdef')
if not found then
  error("tessera.lua2c: LuaJIT's module jit.vmdef (the bytecode's opcode names) is not " ..
        "installed (Debian: libluajit-5.1-common; or put its folder on LUA_PATH)\n" ..
        tostring(vmdef), 0)
end

local band, rshift = bit.band, bit.rshift

local M = {}

-- Opcode names, six characters each in vmdef.bcnames.
local function op_name(op)
  return (vmdef.bcnames:sub(op * 6 + 1, op * 6 + 6):gsub(' ', ''))
end

-- Where a call's first argument sits relative to the called function's
-- register: one slot after it, or two in LuaJIT's GC64 frames. Read from a
-- probe's bytecode rather than assumed.
local arg_offset = (function()
  local function probe(x) return math.exp(x) end
  local mov, call
  for pc = 1, 16 do
    local ins = jutil.funcbc(probe, pc)
    if not ins then break end
    local op = op_name(band(ins, 0xff))
    if op == 'MOV' then mov = band(rshift(ins, 8), 0xff) end
    if op == 'CALLT' or op == 'CALL' then call = band(rshift(ins, 8), 0xff) end
  end
  assert(mov and call, 'lua2c: unexpected bytecode for a call')
  return mov - call
end)()

-- math.* functions by name: C spelling and argument count (nil: 1 or more).
local math_fns = {
  exp = {'exp', 1}, log = {'log', 1}, log10 = {'log10', 1}, sqrt = {'sqrt', 1},
  sin = {'sin', 1}, cos = {'cos', 1}, tan = {'tan', 1}, asin = {'asin', 1},
  acos = {'acos', 1}, atan = {'atan', 1}, atan2 = {'atan2', 2}, sinh = {'sinh', 1},
  cosh = {'cosh', 1}, tanh = {'tanh', 1}, abs = {'fabs', 1}, floor = {'floor', 1},
  ceil = {'ceil', 1}, pow = {'pow', 2}, fmod = {'fmod', 2}, max = {'ts_max', nil},
  min = {'ts_min', nil},
}


-- A double as a C literal that reads back exactly.
local function num_literal(x)
  -- No macros from math.h: NVRTC has no math.h.
  if x ~= x then return '(0.0 / 0.0)' end
  if x == math.huge then return '(1.0 / 0.0)' end
  if x == -math.huge then return '(-1.0 / 0.0)' end
  local s = string.format('%.17g', x)
  if not s:find('[%.eEn]') then s = s .. '.0' end
  return s
end

-- The helpers the emitted code uses, once per translation unit.
M.prelude = [[
#ifndef TS_LUA2C_PRELUDE
#define TS_LUA2C_PRELUDE
/* Lua's a % b: a - floor(a / b) * b. */
TS_LUA2C_FN double ts_mod(double a, double b) { return a - floor(a / b) * b; }
/* math.max/min as LuaJIT's, folded left with SSE's maxsd/minsd: the later
   argument unless the earlier compares greater (less), so a NaN so far gives
   way to the next argument, and a NaN argument is kept. */
TS_LUA2C_FN double ts_max(double a, double b) { return a > b ? a : b; }
TS_LUA2C_FN double ts_min(double a, double b) { return a < b ? a : b; }
#endif
]]

-- Translates `f` into a C function `opts.name` taking f's parameters as
-- doubles and returning `opts.results` values through double pointers.
-- Returns {source = ..., params = n, results = n}; raises an error naming the
-- function and line for what it cannot translate.
function M.translate(f, opts)
  assert(type(f) == 'function', 'lua2c.translate: expected a function')
  opts = opts or {}
  local name = opts.name or 'ts_lua_fn'
  local want = opts.results or 1
  local info = jutil.funcinfo(f)
  if not info.linedefined or info.addr then
    error('lua2c: ' .. name .. ' is a C function; only Lua functions translate', 2)
  end
  local where = (info.source or '?'):gsub('^[@=]', '') .. ':'
  local function fail(pc, what)
    local line = jutil.funcinfo(f, pc).currentline or info.linedefined
    error(('%s (%s%d): %s cannot be translated to C'):format(name, where, line, what), 0)
  end
  if info.isvararg then fail(1, 'a function with ... (varargs)') end
  local nparams = info.params

  -- Static kinds of registers that are not numbers: the math table, a math
  -- function, a constant nil/false/true. Numbers need no entry.
  local kind = {}
  local lines, targets = {}, {}
  local maxreg = nparams - 1
  local function reg(r)
    if r > maxreg then maxreg = r end
    return 'r' .. r
  end
  local function num(r, pc)
    local k = kind[r]
    if k then fail(pc, 'using ' .. k.what .. ' as a number') end
    return reg(r)
  end
  local function knum(d) return num_literal(jutil.funck(f, d)) end
  local function kstr(d) return jutil.funck(f, -d - 1) end
  local function emit(pc, s) lines[#lines + 1] = {pc = pc, s = s} end
  local function set(pc, a, expr)
    kind[a] = nil
    emit(pc, reg(a) .. ' = ' .. expr .. ';')
  end
  -- Truth of register d: numbers are always true, constants are known, and
  -- a boolean that depends on the path (held as 1.0 or 0.0) gives nil: the
  -- test happens at run time.
  local function truth(d, pc)
    local k = kind[d]
    if not k then return true end
    if k.const ~= nil then return k.const end
    if k.bool then return nil end
    fail(pc, 'testing ' .. k.what .. ' for truth')
  end
  -- Booleans and nil are held as 1.0 (true) or 0.0 (false, nil), so that a
  -- boolean set differently on two paths has a value where they meet.
  local function set_bool(pc, a, value)
    kind[a] = value and {what = 'true', bool = true, const = true}
                    or {what = 'false or nil', bool = true, const = false}
    emit(pc, reg(a) .. (value and ' = 1.0;' or ' = 0.0;'))
  end
  local function copy_reg(pc, a, d)
    local k = kind[d]
    if k and not k.bool then
      kind[a] = k  -- the math table or a function: nothing to copy at run time
    else
      emit(pc, reg(a) .. ' = ' .. reg(d) .. ';')
      kind[a] = k
    end
  end

  local arith = {ADD = '+', SUB = '-', MUL = '*', DIV = '/'}
  local cmp = {ISLT = '%s < %s', ISGE = '!(%s < %s)', ISLE = '%s <= %s', ISGT = '!(%s <= %s)',
               ISEQV = '%s == %s', ISNEV = '%s != %s', ISEQN = '%s == %s', ISNEN = '%s != %s'}
  -- Kinds at the jumps to each target, and whether control reaches the
  -- current instruction by falling through. Jumps only go forward, so one
  -- pass sees every way into an instruction before it; code no way reaches
  -- (the jump after a return) is skipped.
  local at_target = {}
  local live = true
  local dynamic_bool = {what = 'a boolean', bool = true}
  local function merge(x, y)
    local m = {}
    for _, state in ipairs({x, y}) do
      for r in pairs(state) do
        local p, q = x[r], y[r]
        if p == q then
          m[r] = p
        elseif p and q and p.bool and q.bool then  -- true on one path, false on another
          m[r] = dynamic_bool
        else
          m[r] = {what = 'a value that is not a number on every path'}
        end
      end
    end
    return m
  end
  local function jump_to(target)
    targets[target] = true
    local seen = at_target[target]
    at_target[target] = seen and merge(seen, kind) or merge(kind, kind)
  end
  local pc = 1
  while true do
    local ins = jutil.funcbc(f, pc)
    if not ins then break end
    local from_jumps = at_target[pc]
    if from_jumps then
      kind = live and merge(from_jumps, kind) or merge(from_jumps, from_jumps)
      live = true
    end
    if not live then goto next_ins end
    do
    local op = op_name(band(ins, 0xff))
    lines[#lines + 1] = {pc = pc}  -- where a label for pc goes
    local a, c, b, d = band(rshift(ins, 8), 0xff), band(rshift(ins, 16), 0xff), rshift(ins, 24),
                       rshift(ins, 16)
    local base, mode = op:match('^(%u%u%u)(%u%u)$')
    if arith[base] or base == 'MOD' then
      local x, y
      if mode == 'VN' then x, y = num(b, pc), knum(c)
      elseif mode == 'NV' then x, y = knum(c), num(b, pc)
      elseif mode == 'VV' then x, y = num(b, pc), num(c, pc)
      else fail(pc, 'bytecode ' .. op) end
      set(pc, a, base == 'MOD' and ('ts_mod(' .. x .. ', ' .. y .. ')') or (x .. ' ' .. arith[base] .. ' ' .. y))
    elseif op == 'POW' then
      set(pc, a, 'pow(' .. num(b, pc) .. ', ' .. num(c, pc) .. ')')
    elseif op == 'UNM' then
      set(pc, a, '-' .. num(d, pc))
    elseif op == 'MOV' then
      copy_reg(pc, a, d)
    elseif op == 'KSHORT' then
      set(pc, a, num_literal(d >= 0x8000 and d - 0x10000 or d))
    elseif op == 'KNUM' then
      set(pc, a, knum(d))
    elseif op == 'KPRI' then
      set_bool(pc, a, d == 2)
    elseif op == 'KNIL' then
      for r = a, d do set_bool(pc, r, false) end
    elseif op == 'NOT' then
      local t = truth(d, pc)
      if t == nil then
        emit(pc, reg(a) .. ' = ' .. reg(d) .. ' == 0.0 ? 1.0 : 0.0;')
        kind[a] = dynamic_bool
      else
        set_bool(pc, a, not t)
      end
    elseif op == 'UGET' then
      local uname, value = debug.getupvalue(f, d + 1)
      if type(value) ~= 'number' then
        fail(pc, ('upvalue %s (a %s; only numbers are read, once, when translating)'):format(
          uname or '?', type(value)))
      end
      set(pc, a, num_literal(value))
    elseif op == 'GGET' then
      local g = kstr(d)
      if g ~= 'math' then fail(pc, "global '" .. tostring(g) .. "' (only math.* is known)") end
      kind[a] = {what = 'the math table', math = true}
    elseif op == 'TGETS' then
      local t, key = kind[b], kstr(c)
      if not (t and t.math) then fail(pc, 'indexing a table') end
      if math_fns[key] then
        kind[a] = {what = 'math.' .. key, fn = key}
      elseif key == 'pi' or key == 'huge' then
        set(pc, a, num_literal(math[key]))
      else
        fail(pc, "math." .. tostring(key))
      end
    elseif op == 'CALL' or op == 'CALLT' then
      local fk = kind[a]
      if not (fk and fk.fn) then fail(pc, 'a call of anything but a math.* function') end
      local nargs = (op == 'CALL' and c or d) - 1
      if nargs < 0 then fail(pc, 'a call with a variable number of arguments') end
      local spec = math_fns[fk.fn]
      if (spec[2] and nargs ~= spec[2]) or nargs < 1 then
        fail(pc, ('math.%s with %d arguments'):format(fk.fn, nargs))
      end
      local args = {}
      for i = 1, nargs do args[i] = num(a + arg_offset + i - 1, pc) end
      local expr
      if spec[2] then
        expr = spec[1] .. '(' .. table.concat(args, ', ') .. ')'
      else  -- max/min: fold left as LuaJIT does
        expr = args[1]
        for i = 2, nargs do expr = spec[1] .. '(' .. expr .. ', ' .. args[i] .. ')' end
      end
      if op == 'CALLT' then
        if want ~= 1 then fail(pc, ('returning 1 result where %d are expected'):format(want)) end
        emit(pc, '*y1 = ' .. expr .. '; return;')
        live = false
      else
        if b ~= 2 then fail(pc, 'a call whose results are not exactly one value') end
        set(pc, a, expr)
      end
    elseif cmp[op] then
      local x = num(a, pc)
      local y = (op == 'ISEQN' or op == 'ISNEN') and knum(d) or num(d, pc)
      local nxt = jutil.funcbc(f, pc + 1)
      if op_name(band(nxt, 0xff)) ~= 'JMP' then fail(pc, 'bytecode ' .. op .. ' without a jump') end
      local target = pc + 2 + rshift(nxt, 16) - 0x8000
      jump_to(target)
      emit(pc, 'if (' .. cmp[op]:format(x, y) .. ') goto L' .. target .. ';')
      pc = pc + 1
    elseif op == 'IST' or op == 'ISF' or op == 'ISTC' or op == 'ISFC' then
      local t = truth(d, pc)
      local nxt = jutil.funcbc(f, pc + 1)
      local target = pc + 2 + rshift(nxt, 16) - 0x8000
      local on_true = op == 'IST' or op == 'ISTC'
      local copies = op == 'ISTC' or op == 'ISFC'
      if t == nil then  -- decided at run time
        local before = kind[a]
        if copies then kind[a] = kind[d] end
        jump_to(target)
        kind[a] = before
        emit(pc, ('if (%s %s 0.0) { %sgoto L%d; }'):format(reg(d), on_true and '!=' or '==',
          copies and (reg(a) .. ' = ' .. reg(d) .. '; ') or '', target))
      elseif on_true == t then  -- always jumps
        if copies then copy_reg(pc, a, d) end
        jump_to(target)
        emit(pc, 'goto L' .. target .. ';')
        live = false
      end
      pc = pc + 1
    elseif op == 'JMP' then
      local target = pc + 1 + d - 0x8000
      if target <= pc then fail(pc, 'a loop') end
      jump_to(target)
      emit(pc, 'goto L' .. target .. ';')
      live = false
    elseif op == 'RET0' or op == 'RET1' or op == 'RET' then
      local n = op == 'RET0' and 0 or d - 1
      if n ~= want then fail(pc, ('returning %d results where %d are expected'):format(n, want)) end
      local outs = {}
      for i = 1, n do outs[i] = '*y' .. i .. ' = ' .. num(a + i - 1, pc) .. ';' end
      outs[#outs + 1] = 'return;'
      emit(pc, table.concat(outs, ' '))
      live = false
    elseif op:match('^FUNC') then
      -- the function header: nothing to do
    else
      local what = {FORI = 'a numeric for loop', FORL = 'a loop', LOOP = 'a loop',
                    ITERC = 'a generic for loop', ITERN = 'a generic for loop', FNEW = 'a closure',
                    TNEW = 'a table constructor', TDUP = 'a table constructor', CAT = 'string concatenation',
                    KSTR = 'a string', VARG = 'varargs', GSET = 'assigning a global'}
      fail(pc, what[op] or ('bytecode ' .. op))
    end
    end
    ::next_ins::
    pc = pc + 1
  end

  -- Assemble: declarations, then each statement under the label a jump names.
  local out = {}
  local params = {}
  for i = 0, nparams - 1 do params[#params + 1] = 'double r' .. i end
  for i = 1, want do params[#params + 1] = 'double* y' .. i end
  out[#out + 1] = ('TS_LUA2C_FN void %s(%s) {'):format(name, table.concat(params, ', '))
  if maxreg >= nparams then
    local decl = {}
    for r = nparams, maxreg do decl[#decl + 1] = 'r' .. r .. ' = 0.0' end
    out[#out + 1] = '  double ' .. table.concat(decl, ', ') .. ';'
  end
  for _, l in ipairs(lines) do
    if l.s then
      out[#out + 1] = '  ' .. l.s
    elseif targets[l.pc] then
      out[#out + 1] = 'L' .. l.pc .. ':;'
    end
  end
  out[#out + 1] = '}'
  return {source = table.concat(out, '\n') .. '\n', params = nparams, results = want}
end

return M
