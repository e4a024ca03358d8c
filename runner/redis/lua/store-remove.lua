--[[
  store-remove: remove one stored schedule (runner/store/store.ts) unless its compare-and-set fails. The removal
  takes the flock's next version (so versions only grow, across a removal and a re-creation), leaves its
  tenant's count and the tenant index, and is appended to the change stream (capped), which replicas follow, and
  to the audit log (who, via, version).

  KEYS[1] stored schedule (HASH)
  KEYS[2] name index (ZSET)
  KEYS[3] version counter
  KEYS[4] change stream
  KEYS[5] stored schedules per tenant (HASH tenant → count)
  KEYS[6] tenant index (ZSET of "<tenant>\0<name>")
  KEYS[7] audit log (STREAM)
  ARGV[1] packed:
    name          the schedule name
    ifVersion     -1: any; -2: only if it exists (any version); n: only if its version is n
    by            who removes it
    via           library | api | cli (for the audit log)
    reason        why, for the audit log
    maxLen        about how many entries the change stream keeps
    auditMaxLen   about how many entries the audit log keeps
  Returns: {'ok', version of the removal, audit id} | {'absent', 0} | {'conflict', current version}.
]]

local args = cmsgpack.unpack(ARGV[1])
local cur = redis.call('HMGET', KEYS[1], 'version', 'tenant')
local curVersion = tonumber(cur[1])
if not curVersion then return {'absent', 0} end
if (args.ifVersion >= 0 and args.ifVersion ~= curVersion) or (args.ifVersion == -2 and curVersion == 0) then return {'conflict', curVersion} end
local version = redis.call('INCR', KEYS[3])
local tenant = cur[2] or ''
if tenant ~= '' then
  if redis.call('HINCRBY', KEYS[5], tenant, -1) <= 0 then redis.call('HDEL', KEYS[5], tenant) end
  redis.call('ZREM', KEYS[6], tenant .. '\0' .. args.name)
end
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], args.name)
redis.call('XADD', KEYS[4], 'MAXLEN', '~', args.maxLen, '*', 'name', args.name, 'version', version, 'op', 'remove')
local auditId = redis.call('XADD', KEYS[7], 'MAXLEN', '~', args.auditMaxLen, '*', 'who', args.by, 'via', args.via, 'action', 'delete',
  'schedule', args.name, 'reason', args.reason, 'outcome', 'removed stored schedule ' .. args.name .. ' (version ' .. version .. ')', 'version', version)
return {'ok', version, auditId}
