--[[
  outbox-settle: record how a send ended (delivery states: includes/outbox-delivery.lua).

  KEYS[1] delivery state (HASH of the entry)
  ARGV[1] field (`<event>/<channel>`)
  ARGV[2] consumer (`<replica>#<incarnation>`)
  ARGV[3] outcome: sent | retry | gaveup
  ARGV[4] retry delay ms (for retry)
  ARGV[5] error (for retry and gaveup)
  Returns: 1 recorded as the holder; 2 `sent` recorded after another consumer took the lease over (it may send
    a second copy, with the same id); 0 ignored (already done, or a failure reported by a consumer that no
    longer holds the lease: the holder's result counts).
]]
-- @include "includes/outbox-delivery.lua"

local field, consumer, outcome = ARGV[1], ARGV[2], ARGV[3]
local kind, at, who, n = parseState(rcall('HGET', KEYS[1], field))
if not kind or isDone(kind) then return 0 end
if outcome == 'sent' then
  rcall('HSET', KEYS[1], field, 'sent|' .. now .. '|' .. consumer .. '|' .. n)
  if who == consumer then return 1 end
  return 2
end
if who ~= consumer then return 0 end
local err = string.gsub(ARGV[5], '|', '/')
if outcome == 'retry' then
  rcall('HSET', KEYS[1], field, 'retry|' .. (now + tonumber(ARGV[4])) .. '|-|' .. n .. '|' .. err)
else
  rcall('HSET', KEYS[1], field, 'gaveup|' .. now .. '|' .. consumer .. '|' .. n .. '|' .. err)
end
return 1
