--[[
  finish: record the result of an attempt, only while the claim is live: the token is current and the lease
  has not lapsed on the Redis clock (fencing). A stale claimant's completion is refused and counted in the
  record's `refused` field; a lapsed-but-not-yet-taken-over claim is refused too, so the occurrence is claimed
  again rather than finished by a claimant that may have been presumed dead.

  A failure with retries left becomes `retrying` (an open state) until `retryAt`: the delay is
  min(retryBackoffMax, retryBackoff * 2^(failures-1)) scaled by a jitter factor in [0.5, 1). The occurrence has
  started, so it keeps its place in the schedule's active set (scored retryAt + lockMs) until it is final: the
  concurrency policy sees it between attempts, however late its retry is taken up, and it ends succeeded or
  failed, never skipped or missed.

  KEYS[1] run record
  KEYS[2] pending (ZSET)
  KEYS[3] last success per schedule (HASH, Redis ms)
  ARGV[1] packed:
    token               the claim's fencing token
    state               succeeded | failed | skipped
    reason              why ('' for none)
    error               the error message ('' for none)
    result              the result as JSON ('' for none)
    retentionMs         how long a final record lives
    key                 the occurrence key
    retries             retries allowed
    retryBackoffMs      first retry delay
    retryBackoffMaxMs   longest retry delay
    jitter              u in [0, 1)
    lockMs              the lease: a retrying run's active-set score is retryAt + lockMs (informational)
  Returns: {1, 0} recorded final; {2, retryAt} retrying at retryAt (Redis ms); {0, 0} refused.
]]
-- @include "includes/record.lua"

local args = cmsgpack.unpack(ARGV[1])
local rec = rcall('HMGET', KEYS[1], 'token', 'state', 'leaseUntil')
if rec[1] ~= tostring(args.token) or rec[2] ~= 'running' or tonumber(rec[3] or '0') < now then
  if rcall('EXISTS', KEYS[1]) == 1 then rcall('HINCRBY', KEYS[1], 'refused', 1) end
  return {0, 0}
end
if args.error ~= '' then rcall('HSET', KEYS[1], 'error', args.error) end
if args.result ~= '' then rcall('HSET', KEYS[1], 'result', args.result) end
if args.state == 'failed' then
  local failures = rcall('HINCRBY', KEYS[1], 'failures', 1)
  if failures <= args.retries then
    local base = math.min(args.retryBackoffMaxMs, args.retryBackoffMs * 2 ^ (failures - 1))
    local retryAt = now + math.floor(base * (0.5 + args.jitter / 2))
    rcall('HSET', KEYS[1], 'state', 'retrying', 'retryAt', retryAt, 'released', 1, 'leaseUntil', 0, 'reason', args.reason)
    holdPlace(KEYS[1], args.key, retryAt + args.lockMs)
    rcall('ZADD', KEYS[2], retryAt, args.key)
    return {2, retryAt}
  end
end
finalize(KEYS[1], args.state, args.reason, args.retentionMs, KEYS[2], args.key)
if args.state == 'succeeded' then rcall('HSET', KEYS[3], rcall('HGET', KEYS[1], 'schedule'), now) end
return {1, 0}
