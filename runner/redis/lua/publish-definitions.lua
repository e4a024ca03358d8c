--[[
  publish-definitions: publish a replica's schedule definitions, the rule being "the definition loaded last
  wins" (runner/engine/definitions.ts). For each schedule: the same hash as published changes nothing while its
  publisher is a live member (a replica that starts, reloads or comes back with the definitions the flock runs
  writes nothing: at 100,000 schedules a rename of every publisher was 100,000 writes, version bumps and change-log
  entries that made every replica read every definition again), and names the caller as its publisher when the
  publisher is gone; a different hash replaces it, stamped with the time the caller loaded it (its JSON's
  `loadedAtMs`; absent, a fresh load: the Redis time now), unless the current one is a live member's loaded later
  (a re-publication of an older definition, after its rival's publisher lapsed for a moment or Redis lost the set,
  must not beat the newest: runner/engine/definitions.ts). Then the caller withdraws the names it no longer runs,
  where its own publication is the current one.

  The change log's state holds an `epoch`, set by the first publication into an empty set: a replica that sees it
  change (or the version go back) knows Redis lost the set (a restart without its data, a failover to a replica
  that lagged) and reads and re-publishes everything.

  Every changed name takes the next value of the version counter and is recorded with it in the change log (ZSET
  name → the version of its latest change), so that readers read only the names changed since the version they
  hold (definitions-changes.lua). The log keeps the newest ARGV[2] names; `floor` (the highest version dropped
  from it) tells a reader from before it that it must read everything. `logged` is the version after the latest
  logged change: a write that bumped the version without logging (a replica of an older cronflock in a rollout)
  leaves it behind the version, and then the next logged write raises the floor to the version first.

  KEYS[1] definitions (HASH schedule → JSON)
  KEYS[2] version (counter)
  KEYS[3] change log (ZSET name → version)
  KEYS[4] change log's state (HASH: floor, logged, epoch)
  KEYS[5] members (ZSET replica → membership expiry, Redis ms: heartbeat.lua)
  KEYS[6] names whose published definition says `suspend: true` (SET; counted by `cronflock status`)
  ARGV[1] replica
  ARGV[2] how many names the change log keeps
  ARGV[3..] pairs of name and JSON (loadedAtMs: when the caller loaded it, Redis ms; absent: now), then '|'
    and the names this replica no longer runs
  Returns: 1 when something changed (and the version was bumped), else 0.
]]
-- @include "includes/now.lua"

local keep = tonumber(ARGV[2])
if redis.call('HEXISTS', KEYS[4], 'epoch') == 0 then redis.call('HSET', KEYS[4], 'epoch', now .. '-' .. ARGV[1]) end
local version = tonumber(redis.call('GET', KEYS[2]) or '0')
local logged = tonumber(redis.call('HGET', KEYS[4], 'logged') or '0')
local first = true
local function changed(name)
  if first then
    first = false
    -- A version bumped without logging: nobody holding an older version may read only the log.
    if logged ~= version then redis.call('HSET', KEYS[4], 'floor', version) end
  end
  version = redis.call('INCR', KEYS[2])
  redis.call('ZADD', KEYS[3], version, name)
end

-- Whether a publisher is a live member now, looked up once per publisher (a handful) per call.
local liveness = {}
local function live(replica)
  local l = liveness[replica]
  if l == nil then
    local expiry = redis.call('ZSCORE', KEYS[5], replica)
    l = expiry ~= false and expiry ~= nil and tonumber(expiry) > now
    liveness[replica] = l
  end
  return l
end

local i = 3
while ARGV[i] ~= '|' do
  local name, mine = ARGV[i], cjson.decode(ARGV[i + 1])
  local raw = redis.call('HGET', KEYS[1], name)
  local cur = raw and cjson.decode(raw)
  if cur and cur.definitionHash == mine.definitionHash then
    -- Same content: nothing to decide. A publication counts while its publisher is a live member, so a gone
    -- publisher is replaced by the caller; a live one is kept (no write, no version, no change-log entry).
    if cur.replica ~= ARGV[1] and not live(cur.replica) then
      cur.replica = ARGV[1]
      redis.call('HSET', KEYS[1], name, cjson.encode(cur))
      changed(name)
    end
  else
    local at = tonumber(mine.loadedAtMs or now)
    if not (cur and cur.replica ~= ARGV[1] and tonumber(cur.loadedAtMs or 0) > at and live(cur.replica)) then
      mine.loadedAtMs = at
      redis.call('HSET', KEYS[1], name, cjson.encode(mine))
      if mine.suspend == true then redis.call('SADD', KEYS[6], name) else redis.call('SREM', KEYS[6], name) end
      changed(name)
    end
  end
  i = i + 2
end
for j = i + 1, #ARGV do
  local raw = redis.call('HGET', KEYS[1], ARGV[j])
  if raw and cjson.decode(raw).replica == ARGV[1] then
    redis.call('HDEL', KEYS[1], ARGV[j])
    redis.call('SREM', KEYS[6], ARGV[j])
    changed(ARGV[j])
  end
end
if first then return 0 end
local over = redis.call('ZCARD', KEYS[3]) - keep
if over > 0 then
  local dropped = redis.call('ZPOPMIN', KEYS[3], over)
  -- Only ever raised: a floor set above for an unlogged write may be higher than what is dropped.
  local floor = tonumber(redis.call('HGET', KEYS[4], 'floor') or '0')
  if tonumber(dropped[#dropped]) > floor then redis.call('HSET', KEYS[4], 'floor', dropped[#dropped]) end
end
redis.call('HSET', KEYS[4], 'logged', version)
return 1
