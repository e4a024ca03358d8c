--[[
  outbox-take: may this consumer send this delivery now? (delivery states: includes/outbox-delivery.lua)

  KEYS[1] delivery state (HASH of the entry)
  KEYS[2] rate window (HASH of the schedule and channel)
  KEYS[3] summaries (ZSET)
  KEYS[4] live consumers (ZSET)
  KEYS[5] the stream
  KEYS[6] last outcomes (HASH)
  ARGV[1] packed:
    field          the delivery (`<event>/<channel>`)
    consumer       `<replica>#<incarnation>`
    leaseMs        how long a take holds the send
    rateMax        messages per rate window (0: not limited)
    rateWindowMs   the rate window's length
    event          the entry's event (counted when suppressed)
    schedule       the entry's schedule
    channel        the channel
    stateTtlMs     how long the delivery state lives
  Returns: {'take', attempt}: send now (the lease is ours until now + leaseMs); {'wait', ms}: another live
    consumer sends, or a retry is not due; {'done', kind}: sent, gave up or suppressed before; {'suppressed'}:
    the rate limit holds it back (now done).
]]
-- @include "includes/outbox-delivery.lua"

local args = cmsgpack.unpack(ARGV[1])
local field, consumer, leaseMs = args.field, args.consumer, args.leaseMs
local kind, at, who, n = parseState(rcall('HGET', KEYS[1], field))
if kind and isDone(kind) then return {'done', kind} end
if kind == 'sending' and at > now then
  -- A live holder keeps its lease; one that stopped renewing its consumer entry (killed) does not.
  local expiry = tonumber(rcall('ZSCORE', KEYS[4], who) or '0')
  if expiry > now and who ~= consumer then return {'wait', at - now} end
elseif kind == 'retry' and at > now then
  return {'wait', at - now}
elseif not kind then
  -- First take of this delivery: the rate limit decides, once.
  local max, windowMs = args.rateMax, args.rateWindowMs
  if max > 0 then
    local r = rcall('HMGET', KEYS[2], 'start', 'window', 'count')
    local start = tonumber(r[1] or '0')
    if r[1] and now >= start + tonumber(r[2]) then
      flushWindow(KEYS[2], KEYS[3], KEYS[5], KEYS[6], args.schedule, args.channel)
      r = {false}
    end
    if not r[1] then
      rcall('HSET', KEYS[2], 'start', now, 'window', windowMs, 'count', 1, 'suppressed', 0)
      rcall('PEXPIRE', KEYS[2], windowMs + 86400000)
    elseif tonumber(r[3]) < max then
      rcall('HINCRBY', KEYS[2], 'count', 1)
    else
      local suppressed = rcall('HINCRBY', KEYS[2], 'suppressed', 1)
      rcall('HINCRBY', KEYS[2], 'ev:' .. args.event, 1)
      if suppressed == 1 then
        rcall('ZADD', KEYS[3], start + tonumber(r[2]), args.schedule .. '|' .. args.channel .. '|' .. r[1])
      end
      rcall('HSET', KEYS[1], field, 'suppressed|' .. now .. '|-|0')
      rcall('PEXPIRE', KEYS[1], args.stateTtlMs)
      return {'suppressed'}
    end
  end
end
rcall('HSET', KEYS[1], field, 'sending|' .. (now + leaseMs) .. '|' .. consumer .. '|' .. (n + 1))
rcall('PEXPIRE', KEYS[1], args.stateTtlMs)
return {'take', n + 1}
