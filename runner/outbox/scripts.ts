/**
 * The outbox's delivery state in Redis, decided atomically on the Redis clock (promise 5).
 *
 * Each stream entry (one outcome) has a HASH `{ns}:outbox:d:<entry id>` with one field per delivery
 * (`<event>/<channel>`), whose value is `<kind>|<time ms>|<consumer>|<attempts>|<error>`:
 *   sending|leaseUntil|consumer|n   a consumer holds the send until leaseUntil (mark before sending);
 *   retry|retryAt|-|n|error         the last send failed; the next may start at retryAt;
 *   sent|at|consumer|n              done (marked right after the send);
 *   gaveup|at|consumer|n|error      done: a permanent refusal, or too many attempts;
 *   suppressed|at|-|0               done: held back by the rate limit (counted in the window's summary).
 * So a retry of one channel never re-sends the others, and a consumer killed while sending leaves `sending`,
 * which another consumer takes over when the lease lapses or the holder is no longer a live consumer: each
 * deliverer renews its entry in `{ns}:outbox:consumers` (ZSET consumer → expiry, Redis ms) every tick, and
 * removes it when it stops, after its sends in flight are settled.
 *
 * Rate limit per (schedule, channel), HASH `{ns}:outbox:rate:<schedule>:<channel>`: a window starts with the
 * first limited message and lasts `windowMs`; its first `max` messages go, later ones are suppressed and
 * counted per event; when the window ends, one summary entry is added to the stream (by the next message of
 * that schedule and channel, or by the due-summaries script at the window's end, whichever comes first: the
 * summary member of `{ns}:outbox:summaries` is removed by whoever makes it, so there is exactly one).
 */

/** Shared Lua: split a state value, and flush a rate window into a summary entry. */
const OUTBOX_LUA_PRELUDE = `
local rcall = redis.call
local t = rcall('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

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
`;

/**
 * take: may this consumer send this delivery now?
 *
 * KEYS[1] delivery state (HASH of the entry), KEYS[2] rate window (HASH of the schedule and channel),
 * KEYS[3] summaries (ZSET), KEYS[4] live consumers (ZSET), KEYS[5] the stream, KEYS[6] last outcomes (HASH)
 * ARGV[1] field, ARGV[2] consumer (`<replica>#<incarnation>`), ARGV[3] leaseMs, ARGV[4] rate max (0: not
 * limited), ARGV[5] rate windowMs, ARGV[6] event, ARGV[7] schedule, ARGV[8] channel, ARGV[9] state ttlMs
 * Returns: {'take', attempt}: send now (the lease is ours until now + leaseMs); {'wait', ms}: another live
 * consumer sends, or a retry is not due; {'done', kind}: sent, gave up or suppressed before; {'suppressed'}:
 * the rate limit holds it back (now done).
 */
export const takeScript = {
  name: 'cronflockOutboxTake',
  numberOfKeys: 6,
  lua: `${OUTBOX_LUA_PRELUDE}
local field, consumer, leaseMs = ARGV[1], ARGV[2], tonumber(ARGV[3])
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
  local max, windowMs = tonumber(ARGV[4]), tonumber(ARGV[5])
  if max > 0 then
    local r = rcall('HMGET', KEYS[2], 'start', 'window', 'count')
    local start = tonumber(r[1] or '0')
    if r[1] and now >= start + tonumber(r[2]) then
      flushWindow(KEYS[2], KEYS[3], KEYS[5], KEYS[6], ARGV[7], ARGV[8])
      r = {false}
    end
    if not r[1] then
      rcall('HSET', KEYS[2], 'start', now, 'window', windowMs, 'count', 1, 'suppressed', 0)
      rcall('PEXPIRE', KEYS[2], windowMs + 86400000)
    elseif tonumber(r[3]) < max then
      rcall('HINCRBY', KEYS[2], 'count', 1)
    else
      local suppressed = rcall('HINCRBY', KEYS[2], 'suppressed', 1)
      rcall('HINCRBY', KEYS[2], 'ev:' .. ARGV[6], 1)
      if suppressed == 1 then
        rcall('ZADD', KEYS[3], start + tonumber(r[2]), ARGV[7] .. '|' .. ARGV[8] .. '|' .. r[1])
      end
      rcall('HSET', KEYS[1], field, 'suppressed|' .. now .. '|-|0')
      rcall('PEXPIRE', KEYS[1], tonumber(ARGV[9]))
      return {'suppressed'}
    end
  end
end
rcall('HSET', KEYS[1], field, 'sending|' .. (now + leaseMs) .. '|' .. consumer .. '|' .. (n + 1))
rcall('PEXPIRE', KEYS[1], tonumber(ARGV[9]))
return {'take', n + 1}
`,
} as const;

/**
 * settle: record how a send ended.
 *
 * KEYS[1] delivery state (HASH); ARGV[1] field, ARGV[2] consumer, ARGV[3] outcome (sent | retry | gaveup),
 * ARGV[4] retry delay ms (for retry), ARGV[5] error (for retry and gaveup)
 * Returns: 1 recorded as the holder; 2 `sent` recorded after another consumer took the lease over (it may send
 * a second copy, with the same id); 0 ignored (already done, or a failure reported by a consumer that no longer
 * holds the lease: the holder's result counts).
 */
export const settleScript = {
  name: 'cronflockOutboxSettle',
  numberOfKeys: 1,
  lua: `${OUTBOX_LUA_PRELUDE}
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
`,
} as const;

/**
 * complete: when every delivery of an entry is done, acknowledge and delete the entry and its state (the stream
 * only ever holds entries not yet delivered: nothing undelivered is trimmed).
 *
 * KEYS[1] stream, KEYS[2] delivery state (HASH); ARGV[1] group, ARGV[2] entry id, ARGV[3..] the fields
 * Returns: 1 completed; 0 some delivery is not done.
 */
export const completeScript = {
  name: 'cronflockOutboxComplete',
  numberOfKeys: 2,
  lua: `${OUTBOX_LUA_PRELUDE}
for i = 3, #ARGV do
  local kind = parseState(rcall('HGET', KEYS[2], ARGV[i]))
  if not kind or not isDone(kind) then return 0 end
end
rcall('XACK', KEYS[1], ARGV[1], ARGV[2])
rcall('XDEL', KEYS[1], ARGV[2])
rcall('DEL', KEYS[2])
return 1
`,
} as const;

/**
 * tick (each deliverer, every poll): renews the caller's live-consumer entry (until now + ttlMs; ttlMs 0 removes
 * it: a stop), drops consumers expired for a minute, and ends the rate windows that are over and held messages
 * back (each becomes one summary entry).
 *
 * KEYS[1] summaries (ZSET), KEYS[2] the stream, KEYS[3] last outcomes (HASH), KEYS[4] live consumers (ZSET);
 * ARGV[1] rate key prefix (`{ns}:outbox:rate:`), ARGV[2] limit, ARGV[3] consumer, ARGV[4] ttlMs
 * Returns: the number of windows ended.
 */
export const tickScript = {
  name: 'cronflockOutboxTick',
  numberOfKeys: 4,
  lua: `${OUTBOX_LUA_PRELUDE}
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
`,
} as const;

/** Every outbox script (for `defineCommand`). */
export const OUTBOX_SCRIPTS = [takeScript, settleScript, completeScript, tickScript] as const;
