--[[
  publish-definitions: publish a replica's schedule definitions, the rule being "the definition loaded last
  wins" (runner/engine/definitions.ts). For each schedule: the same hash as published only names the caller as
  its publisher; a different one replaces it, stamped with the Redis time. Then the caller withdraws the names
  it no longer runs, where its own publication is the current one. The version counter is bumped on any
  change, so readers re-read the hash only when it changed.

  KEYS[1] definitions (HASH schedule → JSON)
  KEYS[2] version (counter)
  ARGV[1] replica
  ARGV[2..] pairs of name and JSON (without loadedAtMs: the script stamps it with the Redis time), then '|'
    and the names this replica no longer runs
  Returns: 1 when something changed (and the version was bumped), else 0.
]]
-- @include "includes/now.lua"

local changed = false
local i = 2
while ARGV[i] ~= '|' do
  local name, mine = ARGV[i], cjson.decode(ARGV[i + 1])
  local raw = redis.call('HGET', KEYS[1], name)
  local cur = raw and cjson.decode(raw)
  if cur and cur.definitionHash == mine.definitionHash then
    -- Same content: nothing to decide; name the latest publisher, which is the one most likely to be alive
    -- (a publication counts while its publisher is a live member).
    if cur.replica ~= ARGV[1] then
      cur.replica = ARGV[1]
      redis.call('HSET', KEYS[1], name, cjson.encode(cur))
      changed = true
    end
  else
    mine.loadedAtMs = now
    redis.call('HSET', KEYS[1], name, cjson.encode(mine))
    changed = true
  end
  i = i + 2
end
for j = i + 1, #ARGV do
  local raw = redis.call('HGET', KEYS[1], ARGV[j])
  if raw and cjson.decode(raw).replica == ARGV[1] then
    redis.call('HDEL', KEYS[1], ARGV[j])
    changed = true
  end
end
if changed then redis.call('INCR', KEYS[2]) return 1 end
return 0
