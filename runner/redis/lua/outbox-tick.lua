--[[
  outbox-tick: each deliverer, every poll: renews the caller's live-consumer entry (until now + ttlMs; ttlMs 0
  removes it: a stop), drops consumers expired for a minute, and ends the rate windows that are over and held
  messages back (each becomes one summary entry).

  KEYS[1] summaries (ZSET)
  KEYS[2] the stream
  KEYS[3] last outcomes (HASH)
  KEYS[4] live consumers (ZSET)
  ARGV[1] rate key prefix (`{ns}:outbox:rate:`; same hash tag as the keys)
  ARGV[2] at most this many windows ended
  ARGV[3] consumer (`<replica>#<incarnation>`)
  ARGV[4] ttlMs (0: the consumer stops)
  Returns: the number of windows ended.
]]
-- @include "includes/outbox-delivery.lua"

if tonumber(ARGV[4]) > 0 then rcall('ZADD', KEYS[4], now + tonumber(ARGV[4]), ARGV[3]) else rcall('ZREM', KEYS[4], ARGV[3]) end
rcall('ZREMRANGEBYSCORE', KEYS[4], '-inf', now - 60000)
local due = rcall('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, tonumber(ARGV[2]))
for _, member in ipairs(due) do
  local schedule, channel, start = string.match(member, '^([^|]*)|([^|]*)|([^|]*)$')
  local rateKey = ARGV[1] .. (schedule or '') .. ':' .. (channel or '')
  if schedule and rcall('HGET', rateKey, 'start') == start then
    flushWindow(rateKey, KEYS[1], KEYS[2], KEYS[3], schedule, channel)
  else
    rcall('ZREM', KEYS[1], member)
  end
end
return #due
