--[[
  owned-names: which of the given names another source owns (runner/store/ownership.ts): a name whose published
  definition comes from a schedule file or a Schedule resource (not `store`) and whose publisher is a live member,
  or was last seen less than ARGV[1] ms ago (a paused or restarting replica keeps its names). The same rule as
  store-upsert's refusal, for the readers that must honour it too (`cronflock apply`'s check of a whole input, a
  replica deciding between its file and a stored schedule of one name).

  KEYS[1] published definitions (HASH schedule → JSON with `source`, `replica`)
  KEYS[2] replicas (ZSET, membership expiry in Redis ms)
  KEYS[3] replicas last seen (ZSET replica → its latest heartbeat, Redis ms)
  ARGV[1] holdMs
  ARGV[2..] names
  Returns: flat list name, source, replica, ms since the publisher was last seen (-1: live), for each owned name.
]]
-- @include "includes/now.lua"

local holdMs = tonumber(ARGV[1])
local out = {}
for i = 2, #ARGV do
  local raw = redis.call('HGET', KEYS[1], ARGV[i])
  -- Stored schedules publish `"source":"store"`: skip those without decoding (most names, at scale).
  if raw and not string.find(raw, '"source":"store"', 1, true) then
    local p = cjson.decode(raw)
    local src, replica = p.source or '', p.replica or ''
    if src ~= '' and src ~= 'store' then
      local expiry = tonumber(redis.call('ZSCORE', KEYS[2], replica))
      local ago = nil
      if expiry and expiry > now then ago = -1 else
        local seen = tonumber(redis.call('ZSCORE', KEYS[3], replica))
        if seen and now - seen < holdMs then ago = now - seen end
      end
      if ago then
        out[#out + 1] = ARGV[i]
        out[#out + 1] = src
        out[#out + 1] = replica
        out[#out + 1] = ago
      end
    end
  end
end
return out
