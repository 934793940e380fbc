-- Rank 1 raises an error; rank 0 waits for it in an all-reduce.
local kv = mx.kv.create('dist_sync')
kv:init(0, mx.nd.zeros({ 4 }))
if kv.rank == 1 then error('worker 1 gave up') end
local o = mx.nd.zeros({ 4 })
kv:pushpull(0, mx.nd.ones({ 4 }), { out = o })
o:wait_to_read()
print('rank ' .. kv.rank .. ' was not stopped')
