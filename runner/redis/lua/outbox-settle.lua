--[[
  outbox-settle: record how a send ended (delivery states: includes/outbox-delivery.lua).

  KEYS[1] delivery state (HASH of the entry)
  ARGV[1] packed:
    field          the delivery (`<event>/<channel>`)
    consumer       `<replica>#<incarnation>`
    outcome        sent | retry | gaveup
    retryInMs      the retry delay (for retry)
    error          the error (for retry and gaveup; `|` becomes `/`)
  Returns: 1 recorded as the holder; 2 `sent` recorded after another consumer took the lease over (it may send
    a second copy, with the same id); 0 ignored (already done, or a failure reported by a consumer that no
    longer holds the lease: the holder's result counts).
]]
-- @include "includes/outbox-delivery.lua"

local args = cmsgpack.unpack(ARGV[1])
local field, consumer, outcome = args.field, args.consumer, args.outcome
local kind, at, who, n = parseState(rcall('HGET', KEYS[1], field))
if not kind or isDone(kind) then return 0 end
if outcome == 'sent' then
  rcall('HSET', KEYS[1], field, 'sent|' .. now .. '|' .. consumer .. '|' .. n)
  if who == consumer then return 1 end
  return 2
end
if who ~= consumer then return 0 end
local err = string.gsub(args.error, '|', '/')
if outcome == 'retry' then
  rcall('HSET', KEYS[1], field, 'retry|' .. (now + args.retryInMs) .. '|-|' .. n .. '|' .. err)
else
  rcall('HSET', KEYS[1], field, 'gaveup|' .. now .. '|' .. consumer .. '|' .. n .. '|' .. err)
end
return 1
