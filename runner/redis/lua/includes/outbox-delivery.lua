--[[
  The outbox's delivery state (runner/outbox/): parseState, isDone, flushWindow, for the outbox-* scripts.

  Each stream entry (one outcome) has a HASH `{ns}:outbox:d:<entry id>` with one field per delivery
  (`<event>/<channel>`), whose value is `<kind>|<time ms>|<consumer>|<attempts>|<error>`:
    sending|leaseUntil|consumer|n   a consumer holds the send until leaseUntil (mark before sending);
    retry|retryAt|-|n|error         the last send failed; the next may start at retryAt;
    sent|at|consumer|n              done (marked right after the send);
    gaveup|at|consumer|n|error      done: a permanent refusal, or too many attempts;
    suppressed|at|-|0               done: held back by the rate limit (counted in the window's summary).
  So a retry of one channel never re-sends the others, and a consumer killed while sending leaves `sending`,
  which another consumer takes over when the lease lapses or the holder is no longer a live consumer: each
  deliverer renews its entry in `{ns}:outbox:consumers` (ZSET consumer → expiry, Redis ms) every tick, and
  removes it when it stops, after its sends in flight are settled.

  Rate limit per (schedule, channel), HASH `{ns}:outbox:rate:<schedule>:<channel>`: a window starts with the
  first limited message and lasts `windowMs`; its first `max` messages go, later ones are suppressed and
  counted per event; when the window ends, one summary entry is added to the stream (by the next message of
  that schedule and channel, or by the tick at the window's end, whichever comes first: the summary member of
  `{ns}:outbox:summaries` is removed by whoever makes it, so there is exactly one).
]]
-- @include "now.lua"

local function parseState(v)
  if not v then return nil, 0, '', 0 end
  local kind, at, who, n = string.match(v, '^([^|]*)|([^|]*)|([^|]*)|([^|]*)')
  return kind, tonumber(at) or 0, who, tonumber(n) or 0
end

local function isDone(kind)
  return kind == 'sent' or kind == 'gaveup' or kind == 'suppressed'
end

-- Ends a rate window: if it held messages back, one summary entry goes to the stream.
local function flushWindow(rateKey, summariesKey, stream, lastKey, schedule, channel)
  local r = rcall('HGETALL', rateKey)
  local h = {}
  for i = 1, #r, 2 do h[r[i]] = r[i + 1] end
  local start, window = tonumber(h.start or '0'), tonumber(h.window or '0')
  rcall('ZREM', summariesKey, schedule .. '|' .. channel .. '|' .. (h.start or ''))
  local suppressed = tonumber(h.suppressed or '0')
  if suppressed > 0 then
    local events = {}
    for k, v in pairs(h) do
      if string.sub(k, 1, 3) == 'ev:' then events[#events + 1] = string.sub(k, 4) .. '=' .. v end
    end
    table.sort(events)
    rcall('XADD', stream, '*', 'kind', 'summary', 'schedule', schedule, 'channel', channel, 'suppressed', suppressed,
      'events', table.concat(events, ','), 'fromMs', start, 'toMs', start + window,
      'last', rcall('HGET', lastKey, schedule) or '', 'atMs', now)
  end
  rcall('DEL', rateKey)
end
