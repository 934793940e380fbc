-- Rank 1 ends without the last push (a script that diverged): rank 0's
-- all-reduce times out (TESSERA_KV_TIMEOUT) with an error naming it.
local kv = mx.kv.create('dist_sync')
kv:init(0, mx.nd.zeros({ 4 }))
if kv.rank == 0 then
  local o = mx.nd.zeros({ 4 })
  kv:pushpull(0, mx.nd.ones({ 4 }), { out = o })
  o:wait_to_read()
  print('rank 0 was not stopped')
end
