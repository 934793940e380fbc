-- Elementwise operators written in Lua (mx.operator.elementwise) on GPU
-- arrays: the Lua function, translated to C from its bytecode
-- (tessera.lua2c), is called per element by a CUDA kernel that NVRTC
-- compiles once per op, pass, requests and dtype (mx.rtc), and launched on
-- the arrays' stream. Arithmetic is double precision, as on the CPU, where
-- LuaJIT computes in doubles: the two give the same values up to the math
-- library's last bit.
local lua2c = require 'tessera.lua2c'

local M = {}

local ctypes = {float32 = 'float', float64 = 'double'}

-- The CUDA source and the kernel signature for `fn` of n_args arguments and
-- n_res results, writing each result as reqs[i] says ('null', 'add', else a
-- write), on arrays of `dtype`.
function M.kernel_source(fn, n_args, n_res, reqs, dtype, what)
  local T = ctypes[dtype]
  if not T then error(what .. ': ' .. tostring(dtype) .. ' arrays; only float32 and float64', 0) end
  local body = lua2c.translate(fn, {name = 'ts_body', results = n_res})
  local params, args, outs, stores = {}, {}, {}, {}
  for i = 1, n_args do
    params[#params + 1] = ('const %s* x%d'):format(T, i)
    args[#args + 1] = ('(double)x%d[i]'):format(i)
  end
  for i = 1, n_res do
    params[#params + 1] = ('%s* o%d'):format(T, i)
    outs[#outs + 1] = '&v' .. i
    if reqs[i] == 'add' then
      stores[#stores + 1] = ('  o%d[i] = (%s)((double)o%d[i] + v%d);'):format(i, T, i, i)
    elseif reqs[i] ~= 'null' then
      stores[#stores + 1] = ('  o%d[i] = (%s)v%d;'):format(i, T, i)
    end
  end
  params[#params + 1] = 'long long n'
  local vals = {}
  for i = 1, n_res do vals[i] = 'v' .. i .. ' = 0.0' end
  local all = {}
  for _, a in ipairs(args) do all[#all + 1] = a end
  for _, o in ipairs(outs) do all[#all + 1] = o end
  local src = table.concat({
    '#define TS_LUA2C_FN __device__ inline',
    lua2c.prelude,
    body.source,
    'extern "C" __global__ void ts_elementwise(' .. table.concat(params, ', ') .. ') {',
    '  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;',
    '  if (i >= n) return;',
    '  double ' .. table.concat(vals, ', ') .. ';',
    '  ts_body(' .. table.concat(all, ', ') .. ');',
    table.concat(stores, '\n'),
    '}',
  }, '\n') .. '\n'
  return src, table.concat(params, ', ')
end

local kBlock = 256

-- A launcher for one op: run(kind, fn, arrays_in, arrays_out, reqs, n_res)
-- compiles on first use of each (kind, requests, dtype) and pushes the
-- launch on the outputs' GPU.
function M.launcher(name)
  local kernels = {}
  return function(kind, fn, ins, outs, reqs)
    local dtype = outs[1].dtype
    local key = kind .. '|' .. table.concat(reqs, ',') .. '|' .. dtype
    local k = kernels[key]
    if not k then
      local what = ("elementwise op '%s' (%s on %s)"):format(name, kind, tostring(outs[1].context))
      local src, sig = M.kernel_source(fn, #ins, #outs, reqs, dtype, what)
      k = mx.rtc.CudaModule(src):get_kernel('ts_elementwise', sig)
      kernels[key] = k
    end
    local n = 1
    for _, d in ipairs(outs[1].shape) do n = n * d end
    if n == 0 then return end
    local args = {}
    for _, a in ipairs(ins) do args[#args + 1] = a end
    for _, a in ipairs(outs) do args[#args + 1] = a end
    args[#args + 1] = n
    k:launch(args, outs[1].context, {math.ceil(n / kBlock)}, {kBlock})
  end
end

return M
