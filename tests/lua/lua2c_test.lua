-- tessera.lua2c: Lua functions of numbers translated to C from their
-- bytecode. Where a C compiler is found, the C is compiled and run on edge
-- values (signed zeros, infinities, NaN) and must give what the Lua function
-- gives; everything else checks the translation itself and its refusals.
local ffi = require 'ffi'
local lua2c = require 'tessera.lua2c'
local lua_to_c = mx.operator.lua_to_c

local function ok_status(r) return r == 0 or r == true end
local have_cc = ok_status(os.execute('cc --version >/dev/null 2>&1'))

-- Compiles translations into one shared library; returns a caller per name:
-- call(name, args) -> a table of the results.
local function compile(list)
  local base = os.tmpname()
  local src = {'#include <math.h>', '#define TS_LUA2C_FN static inline', lua2c.prelude}
  local decls = {}
  for _, t in ipairs(list) do
    src[#src + 1] = t.c.source
    local args, outs = {}, {}
    for i = 1, t.c.params do args[i] = 'x[' .. (i - 1) .. ']' end
    for i = 1, t.c.results do outs[i] = '&y[' .. (i - 1) .. ']' end
    local all = {}
    for _, v in ipairs(args) do all[#all + 1] = v end
    for _, v in ipairs(outs) do all[#all + 1] = v end
    src[#src + 1] = ('void call_%s(const double* x, double* y) { %s(%s); }'):format(
      t.name, t.name, table.concat(all, ', '))
    decls[#decls + 1] = ('void call_%s(const double* x, double* y);'):format(t.name)
  end
  local f = assert(io.open(base .. '.c', 'w'))
  f:write(table.concat(src, '\n'), '\n')
  f:close()
  local cmd = ('cc -O1 -shared -fPIC -o %s.so %s.c -lm 2>%s.log'):format(base, base, base)
  local built = ok_status(os.execute(cmd))
  local log = io.open(base .. '.log'):read('*a')
  os.remove(base .. '.c')
  os.remove(base .. '.log')
  os.remove(base)
  assert(built, 'the C did not compile:\n' .. log .. '\n' .. table.concat(src, '\n'))
  ffi.cdef(table.concat(decls, '\n'))
  local lib = ffi.load(base .. '.so')
  os.remove(base .. '.so')  -- mapped already
  return function(name, args, n_out)
    local x = ffi.new('double[?]', math.max(1, #args), args)
    local y = ffi.new('double[?]', n_out)
    lib['call_' .. name](x, y)
    local r = {}
    for i = 1, n_out do r[i] = y[i - 1] end
    return r
  end
end

local function same(a, b)
  if a ~= a then return b ~= b end
  if a == 0 and b == 0 then return 1 / a == 1 / b end  -- signed zeros
  return a == b or math.abs(a - b) <= 1e-15 * math.max(math.abs(a), math.abs(b))
end

local alpha = 0.1
local cases = {
  {name = 'softplus', f = function(x) return math.log(1 + math.exp(x)) end},
  {name = 'softplus_grad', f = function(x, y, dy) return dy / (1 + math.exp(-x)) end},
  {name = 'leaky_and_or', f = function(x) return x > 0 and x or alpha * x end},
  {name = 'leaky_if', f = function(x) if x > 0 then return x else return 0.1 * x end end},
  {name = 'two_results', results = 2,
   f = function(a, b) local t = a * b + 1; return t * t, a - b end},
  {name = 'max_pow_mod', f = function(x) return math.max(x, 0, -1) ^ 2 % 3 end},
  {name = 'min_mod_neg', f = function(x) return math.min(x, 2) % -1.5 end},
  {name = 'compares', f = function(x, y)
     if x < y then return 1 elseif x <= y then return 2 elseif x ~= y then return 3 end
     return 4
   end},
  {name = 'eq_const', f = function(x) if x == 2 then return -x end return math.abs(x) end},
  {name = 'not_and', f = function(x) local b = not (x >= 1); if b then return 0 end return x end},
  {name = 'consts', f = function(x) return x * math.pi + math.huge * 0 + 1e300 * 1e10 end},
  {name = 'tanh_floor', f = function(x) return math.tanh(x) + math.floor(x) - math.ceil(-x) end},
  {name = 'tail', f = function(x) return math.sqrt(x) end},
  {name = 'unm_div', f = function(x, y) return -x / y end},
}
local edge = {-3, -1, -0.5, -0.0, 0, 0.5, 1, 2, 2.5, 10, 1 / 0, -1 / 0, 0 / 0}

test('translated functions compile and give the Lua function\'s values', function()
  for _, c in ipairs(cases) do c.c = lua2c.translate(c.f, {name = c.name, results = c.results}) end
  if not have_cc then
    print('  skipped the C run: no C compiler (cc)')
    return
  end
  local call = compile(cases)
  local checked = 0
  for _, c in ipairs(cases) do
    local n_in, n_out = c.c.params, c.c.results
    local function each(args, i)
      if i > n_in then
        local want = {c.f(unpack(args, 1, n_in))}
        local got = call(c.name, args, n_out)
        for k = 1, n_out do
          if not same(got[k], want[k]) then
            error(('%s(%s): C gives %s, Lua %s'):format(c.name, table.concat(args, ', '),
              tostring(got[k]), tostring(want[k])))
          end
        end
        checked = checked + 1
        return
      end
      for _, v in ipairs(edge) do
        args[i] = v
        each(args, i + 1)
      end
    end
    each({}, 1)
  end
  assert(checked > 1000, checked)
end)

-- NVRTC, where the CUDA toolkit is: the translations must compile as
-- device code (no GPU needed to compile).
-- The library stays mapped for the life of the process, as the runtime's own
-- NVRTC binding does: unloading it when the Lua state closes would drop the
-- pool that NVRTC's built-in C++ runtime allocates at load, which a leak
-- checker then reports against an unloaded module.
ffi.cdef [[ void *dlopen(const char *file, int mode); ]]
local RTLD_NOW, RTLD_NODELETE = 0x2, 0x1000  -- glibc's values

local function load_nvrtc()
  local root = os.getenv('CUDA_HOME') or os.getenv('CUDA_PATH') or '/usr/local/cuda'
  for _, path in ipairs({root .. '/lib64/libnvrtc.so', 'libnvrtc.so'}) do
    local ok, lib = pcall(ffi.load, path)
    if ok then
      ffi.C.dlopen(path, bit.bor(RTLD_NOW, RTLD_NODELETE))
      return lib
    end
  end
end

test('translated functions compile as CUDA device code with NVRTC', function()
  local nvrtc = load_nvrtc()
  if not nvrtc then
    print('  skipped: no NVRTC (the CUDA toolkit) found')
    return
  end
  ffi.cdef [[
    typedef struct _nvrtcProgram *ts_nvrtcProgram;
    int nvrtcCreateProgram(ts_nvrtcProgram *prog, const char *src, const char *name, int numHeaders,
                           const char * const *headers, const char * const *includeNames);
    int nvrtcCompileProgram(ts_nvrtcProgram prog, int numOptions, const char * const *options);
    int nvrtcGetProgramLogSize(ts_nvrtcProgram prog, size_t *logSizeRet);
    int nvrtcGetProgramLog(ts_nvrtcProgram prog, char *log);
    int nvrtcGetPTXSize(ts_nvrtcProgram prog, size_t *ptxSizeRet);
    int nvrtcDestroyProgram(ts_nvrtcProgram *prog);
  ]]
  local src = {'#define TS_LUA2C_FN __device__ inline', lua2c.prelude}
  local body = {}
  for _, c in ipairs(cases) do
    local t = lua2c.translate(c.f, {name = c.name, results = c.results})
    src[#src + 1] = t.source
    local args = {}
    for i = 1, t.params do args[i] = 'x[i]' end
    for i = 1, t.results do args[#args + 1] = '&y[i]' end
    body[#body + 1] = '  ' .. c.name .. '(' .. table.concat(args, ', ') .. ');'
  end
  src[#src + 1] = 'extern "C" __global__ void all(const double* x, double* y, int n) {\n' ..
                  '  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i >= n) return;\n' ..
                  table.concat(body, '\n') .. '\n}\n'
  local text = table.concat(src, '\n')
  local prog = ffi.new('ts_nvrtcProgram[1]')
  assert_eq(nvrtc.nvrtcCreateProgram(prog, text, 'lua2c_test.cu', 0, nil, nil), 0)
  local opts = ffi.new('const char*[1]', {'--gpu-architecture=compute_90'})
  local rc = nvrtc.nvrtcCompileProgram(prog[0], 1, opts)
  local size = ffi.new('size_t[1]')
  nvrtc.nvrtcGetProgramLogSize(prog[0], size)
  local log = ffi.new('char[?]', tonumber(size[0]) + 1)
  nvrtc.nvrtcGetProgramLog(prog[0], log)
  local ptx = ffi.new('size_t[1]')
  nvrtc.nvrtcGetPTXSize(prog[0], ptx)
  nvrtc.nvrtcDestroyProgram(prog)
  assert(rc == 0, 'NVRTC failed (' .. rc .. '):\n' .. ffi.string(log) .. '\n' .. text)
  assert(tonumber(ptx[0]) > 1000, tonumber(ptx[0]))
end)

test('the translation: parameters, registers, labels, math calls', function()
  local c = lua2c.translate(function(x) return x > 0 and x or alpha * x end, {name = 'lk'})
  assert_eq(c.params, 1)
  assert_eq(c.results, 1)
  assert(c.source:find('TS_LUA2C_FN void lk%(double r0, double%* y1%)'), c.source)
  assert(c.source:find('goto L'), c.source)
  assert(c.source:find('0.10000000000000001', 1, true), 'the upvalue is inlined: ' .. c.source)
  local m = lua_to_c(function(a, b) return math.atan2(a, b) end, {name = 'at'})
  assert(m.source:find('atan2(r', 1, true), m.source)
end)

test('what a kernel cannot do is an error naming the function, the line and the construct', function()
  local function refuses(f, pattern, results)
    local err = assert_error(function() lua2c.translate(f, {name = 'k', results = results}) end, pattern)
    assert(tostring(err):find('^k %(.-:%d+%)'), err)
  end
  refuses(function(x) local s = 0; for i = 1, 3 do s = s + x end return s end, 'loop')
  refuses(function(x) return {x} end, 'table constructor')
  refuses(function(x) return string.format('%g', x) end, "global 'string'")
  refuses(function(x) return math.random(x) end, 'math.random')
  refuses(function(x) return print(x) end, "global 'print'")
  refuses(function(x) return x .. 'a' end, 'string')
  refuses(function(...) return ... end, 'varargs')
  refuses(function(x) return x end, 'returning 1 results where 2 are expected', 2)
  refuses(function(x) if x > 0 then return x end end, 'returning 0 results where 1')
  refuses(function(x) return math.exp(x, x) end, 'math.exp with 2 arguments')
  refuses(function(x) return math.exp end, 'math.exp as a number')
  local t = {}
  refuses(function(x) return t[1] + x end, 'upvalue t %(a table')
  refuses(function(x) return (x > 0) + 1 end, 'number')
  refuses(function(x) return function() return x end end, 'closure')
  assert_error(function() lua2c.translate(math.exp) end, 'C function')
end)
