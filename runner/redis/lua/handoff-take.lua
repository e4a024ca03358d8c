--[[
  handoff-take: takes the occurrences handed to one replica whose fire time is near (runner/engine/handoffs.ts).

  A handed occurrence is only a shortcut: its delivery job stays in the queue (given back for a second each time
  a replica that cannot run it receives it), so an entry taken here and then lost (the taker dies) costs nothing
  but the shortcut. Taken entries are removed, so each is tried once per hand-off.

  KEYS[1] handoffs (ZSET member: delivery JSON, score: fire time, Redis ms)
  ARGV[1] untilMs: take entries whose fire time is at most this many ms after now (the prefetch)
  ARGV[2] limit: most entries taken per call
  Returns: the delivery JSON of each entry taken.
]]
-- @include "includes/now.lua"

local taken = rcall('ZRANGEBYSCORE', KEYS[1], '-inf', now + tonumber(ARGV[1]), 'LIMIT', 0, tonumber(ARGV[2]))
if #taken > 0 then rcall('ZREM', KEYS[1], unpack(taken)) end
return taken
