--[[
  store-upsert: write one stored schedule (runner/store/store.ts) unless its compare-and-set fails or a live
  replica runs that name from another source (a schedule file or a Schedule resource: names are owned by one
  source). A definition equal to the stored one changes nothing. Otherwise the schedule takes the flock's next
  version, and the change is appended to the change stream (capped), which replicas follow.

  KEYS[1] stored schedule (HASH)
  KEYS[2] name index (ZSET)
  KEYS[3] version counter
  KEYS[4] change stream
  KEYS[5] published definitions (HASH schedule → JSON; `source` is `store` for stored schedules)
  KEYS[6] replicas (ZSET, membership expiry in Redis ms)
  ARGV[1] packed:
    name          the schedule name
    def           its definition (JSON)
    ifVersion     -1: any; 0: only if it does not exist; n: only if its version is n
    by            who writes it
    maxLen        about how many entries the change stream keeps
  Returns: {'ok', version, changed (0|1)} | {'conflict', current version (0: none)} | {'clash', source, replica}.
]]
-- @include "includes/now.lua"

local args = cmsgpack.unpack(ARGV[1])
local cur = rcall('HMGET', KEYS[1], 'version', 'def')
local curVersion = tonumber(cur[1]) or 0
if args.ifVersion >= 0 and args.ifVersion ~= curVersion then return {'conflict', curVersion} end
local published = rcall('HGET', KEYS[5], args.name)
if published then
  local p = cjson.decode(published)
  local src = p.source or ''
  if src ~= 'store' then
    local expiry = tonumber(rcall('ZSCORE', KEYS[6], p.replica or ''))
    if expiry and expiry > now then return {'clash', src, p.replica or ''} end
  end
end
if cur[2] == args.def then return {'ok', curVersion, 0} end
local version = rcall('INCR', KEYS[3])
rcall('HSET', KEYS[1], 'def', args.def, 'version', version, 'updatedAtMs', now, 'by', args.by)
rcall('ZADD', KEYS[2], 0, args.name)
rcall('XADD', KEYS[4], 'MAXLEN', '~', args.maxLen, '*', 'name', args.name, 'version', version, 'op', 'upsert')
return {'ok', version, 1}
