-- A tour of what the shell offers today: contexts, the dependency engine
-- (Lua functions and C++ ops ordered by the variables they use), errors that
-- surface at the next wait, and the profiler.
--   tessera scripts/examples/tour.lua
-- NDArrays and operators join this tour when they land.

print('Tessera ' .. mx.__version__ .. ', ' .. mx.engine.type() .. ' engine, '
      .. mx.context.num_gpus() .. ' GPU(s)')

-- 1. Contexts say where data lives and work runs.
print('contexts:', mx.cpu(), mx.gpu(1), mx.cpu() == mx.cpu(0))

-- 2. Push Lua functions with the variables they read and write. push returns
--    at once; the engine runs each function when its variables allow, on the
--    interpreter thread (Lua always runs there).
local x, y, z = mx.engine.new_var(), mx.engine.new_var(), mx.engine.new_var()
local values = {}
mx.engine._sleep(0.05, { write = { x }, name = 'slow_cpp_op' })  -- a C++ op that takes 50 ms
mx.engine.push(function() values.x = 1 end, { write = { x }, name = 'x=1' })
mx.engine.push(function() values.y = values.x + 1 end, { read = { x }, write = { y }, name = 'y=x+1' })
mx.engine.push(function() values.z = values.x * 10 end, { read = { x }, write = { z }, name = 'z=x*10' })
print('right after pushing, y is', values.y)  -- nil: nothing has run yet
mx.engine.wait_for_var(y)
mx.engine.wait_for_var(z)
print('after waiting: y =', values.y, 'z =', values.z)

-- 3. A failing function poisons what it writes; the error surfaces, naming
--    the op, at the next wait. The engine keeps working.
mx.engine.push(function() error('division by zero') end, { write = { y }, name = 'bad_div' })
local ok, err = pcall(mx.engine.wait_for_var, y)
print('wait raised:', ok, (tostring(err):match('[^\n]*')))
mx.engine.push(function() values.y = 0 end, { write = { y } })
mx.waitall()
print('and the engine goes on: y =', values.y)

-- 4. The profiler: a Chrome trace and a per-op table.
mx.profiler.set_config { filename = os.tmpname() .. '.json' }
mx.profiler.set_state('run')
for i = 1, 100 do
  mx.engine.push(function() values.y = values.y + i end, { write = { y }, name = 'accumulate' })
end
mx.waitall()
mx.profiler.set_state('stop')
print('y =', values.y)
io.write(mx.profiler.table())
print('trace written to', mx.profiler.dump())

-- 5. Engine state, and documentation.
local stats = mx.engine.stats()
print(stats.type .. ' engine, ' .. stats.pending .. ' ops pending, ' .. #stats.lanes .. ' lane(s)')
help('engine.push')

-- 6. mx.nd: NDArrays. Every operation returns at once and runs on the
--    engine; printing or totable() waits for just the array it shows.
--    Indices and axes are 1-based; shapes are tables; options are a
--    trailing table.
local a = mx.nd.array({{1, 2, 3}, {4, 5, 6}})
local b = mx.nd.ones({2, 3}, {dtype = 'float32'})
local c = a * b + 1                        -- broadcast_mul, then _plus_scalar
print(c)                                   -- values, then [NDArray float32 2x3 @cpu(0)]
print('sum over the first axis:', table.concat(mx.nd.sum(a, {axis = 1}):totable(), ' '))
print('dot:', mx.nd.dot(a, a, {transpose_b = true}))
a[1] = 0                                   -- assignment through a view, pushed as an op
print('row 2, from the end:', a[-1])
-- Lua functions and C++ ops share arrays through the engine.
mx.engine.push(function() print('pushed Lua sees', c[1][1]:asscalar()) end,
               { read = { c } })
mx.waitall()
-- Raw memory for the FFI (valid while `c` lives and nothing writes it).
local p = c:data_ptr()
print('c[1][1] through the FFI:', p[0])
help('dot')
