--[[
  store-remove: remove one stored schedule (runner/store/store.ts) unless its compare-and-set fails. The removal
  takes the flock's next version (so versions only grow, across a removal and a re-creation) and is appended to
  the change stream (capped), which replicas follow.

  KEYS[1] stored schedule (HASH)
  KEYS[2] name index (ZSET)
  KEYS[3] version counter
  KEYS[4] change stream
  ARGV[1] the schedule name
  ARGV[2] ifVersion: -1 any; n: only if its version is n
  ARGV[3] about how many entries the change stream keeps
  Returns: {'ok', version of the removal} | {'absent', 0} | {'conflict', current version}.
]]

local cur = tonumber(redis.call('HGET', KEYS[1], 'version'))
if not cur then return {'absent', 0} end
local ifVersion = tonumber(ARGV[2])
if ifVersion >= 0 and ifVersion ~= cur then return {'conflict', cur} end
local version = redis.call('INCR', KEYS[3])
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('XADD', KEYS[4], 'MAXLEN', '~', ARGV[3], '*', 'name', ARGV[1], 'version', version, 'op', 'remove')
return {'ok', version}
