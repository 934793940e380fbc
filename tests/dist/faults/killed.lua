-- Rank 1 dies (SIGKILL) while rank 0 waits for it in an all-reduce.
local kv = mx.kv.create('dist_sync')
kv:init(0, mx.nd.zeros({ 4 }))
if kv.rank == 1 then
  local pid = assert(io.open('/proc/self/stat')):read('*n')
  os.execute('kill -9 ' .. pid)
end
local o = mx.nd.zeros({ 4 })
kv:pushpull(0, mx.nd.ones({ 4 }), { out = o })
o:wait_to_read()
print('rank ' .. kv.rank .. ' was not stopped')
