--[[
  store-upsert: write one stored schedule (runner/store/store.ts) unless its compare-and-set fails, another
  source owns the name (a schedule file or a Schedule resource published by a replica that is live, or was
  last seen less than holdMs ago: a paused or restarting replica keeps its names; runner/store/ownership.ts),
  or its tenant is at its limit of stored schedules. A definition equal to the stored one changes
  nothing. Otherwise the schedule takes the flock's next version, its tenant's count and the tenant index follow
  (a schedule moved to another tenant leaves the old one's count), the change is appended to the change stream
  (capped), which replicas follow, and to the audit log (who, via, version), all in this one script: the limit
  is checked and the count taken atomically, so concurrent upserts never pass a tenant's limit.

  KEYS[1] stored schedule (HASH)
  KEYS[2] name index (ZSET)
  KEYS[3] version counter
  KEYS[4] change stream
  KEYS[5] published definitions (HASH schedule → JSON; `source` is `store` for stored schedules)
  KEYS[6] replicas (ZSET, membership expiry in Redis ms)
  KEYS[7] stored schedules per tenant (HASH tenant → count)
  KEYS[8] tenant index (ZSET of "<tenant>\0<name>", all scored 0)
  KEYS[9] tenant limits (HASH tenant → most stored schedules, or "none": no limit whatever the default; "*": every
          tenant without its own)
  KEYS[10] audit log (STREAM)
  KEYS[11] replicas last seen (ZSET replica → its latest heartbeat, Redis ms)
  ARGV[1] packed:
    name          the schedule name
    def           its definition (JSON)
    tenant        its tenant ('' for none)
    ifVersion     -1: any; -2: only if it exists (any version); 0: only if it does not exist; n: only if its version is n
    by            who writes it
    via           library | api | cli (for the audit log)
    reason        why, for the audit log
    maxLen        about how many entries the change stream keeps
    auditMaxLen   about how many entries the audit log keeps
    holdMs        how long after its publisher was last seen a file's or Schedule's name stays owned
  Returns: {'ok', version, changed (0|1), audit id ('' when unchanged)} | {'conflict', current version (0: none)}
    | {'clash', source, replica, ms since it was last seen (-1: live)} | {'limit', tenant, its limit, its count}.
]]
-- @include "includes/now.lua"

local args = cmsgpack.unpack(ARGV[1])
local cur = rcall('HMGET', KEYS[1], 'version', 'def', 'tenant')
local curVersion = tonumber(cur[1]) or 0
if (args.ifVersion >= 0 and args.ifVersion ~= curVersion) or (args.ifVersion == -2 and curVersion == 0) then return {'conflict', curVersion} end
local published = rcall('HGET', KEYS[5], args.name)
if published then
  local p = cjson.decode(published)
  local src = p.source or ''
  if src ~= 'store' then
    local expiry = tonumber(rcall('ZSCORE', KEYS[6], p.replica or ''))
    if expiry and expiry > now then return {'clash', src, p.replica or '', -1} end
    local seen = tonumber(rcall('ZSCORE', KEYS[11], p.replica or ''))
    if seen and now - seen < args.holdMs then return {'clash', src, p.replica or '', now - seen} end
  end
end
if cur[2] == args.def then return {'ok', curVersion, 0, ''} end
local oldTenant = ''
if curVersion > 0 and cur[3] then oldTenant = cur[3] end
local tenant = args.tenant
if tenant ~= '' and tenant ~= oldTenant then
  -- the tenant's own limit ("none": explicitly no limit, overriding the default), else the default ('*')
  local limit = tonumber(rcall('HGET', KEYS[9], tenant) or rcall('HGET', KEYS[9], '*'))
  if limit then
    local count = tonumber(rcall('HGET', KEYS[7], tenant)) or 0
    if count >= limit then return {'limit', tenant, limit, count} end
  end
end
local version = rcall('INCR', KEYS[3])
rcall('HSET', KEYS[1], 'def', args.def, 'version', version, 'updatedAtMs', now, 'by', args.by, 'tenant', tenant)
rcall('ZADD', KEYS[2], 0, args.name)
if tenant ~= oldTenant then
  if oldTenant ~= '' then
    if rcall('HINCRBY', KEYS[7], oldTenant, -1) <= 0 then rcall('HDEL', KEYS[7], oldTenant) end
    rcall('ZREM', KEYS[8], oldTenant .. '\0' .. args.name)
  end
  if tenant ~= '' then
    rcall('HINCRBY', KEYS[7], tenant, 1)
    rcall('ZADD', KEYS[8], 0, tenant .. '\0' .. args.name)
  end
end
rcall('XADD', KEYS[4], 'MAXLEN', '~', args.maxLen, '*', 'name', args.name, 'version', version, 'op', 'upsert')
local outcome = (curVersion > 0 and 'changed' or 'created') .. ' stored schedule ' .. args.name .. ' (version ' .. version .. ')'
if tenant ~= '' then outcome = outcome .. ' of tenant ' .. tenant end
local auditId = rcall('XADD', KEYS[10], 'MAXLEN', '~', args.auditMaxLen, '*', 'who', args.by, 'via', args.via, 'action', 'upsert',
  'schedule', args.name, 'reason', args.reason, 'outcome', outcome, 'version', version)
return {'ok', version, 1, auditId}
