--[[
  finish: record the result of an attempt, only while the claim is live: the token is current and the lease
  has not lapsed on the Redis clock (fencing). A stale claimant's completion is refused and counted in the
  record's `refused` field; a lapsed-but-not-yet-taken-over claim is refused too, so the occurrence is claimed
  again rather than finished by a claimant that may have been presumed dead.

  A failure with retries left becomes `retrying` (an open state) until `retryAt`: the delay is
  min(retryBackoffMax, retryBackoff * 2^(failures-1)) scaled by a jitter factor in [0.5, 1). The occurrence has
  started, so it keeps its place in the schedule's active set until retryAt + lockMs (the concurrency policy
  sees it between attempts; if nobody takes the retry up by then, its place lapses), and it ends succeeded or
  failed, never skipped or missed.

  KEYS[1] run record
  KEYS[2] pending (ZSET)
  KEYS[3] last success per schedule (HASH, Redis ms)
  ARGV[1] fencing token
  ARGV[2] state (succeeded | failed | skipped)
  ARGV[3] reason
  ARGV[4] error message
  ARGV[5] result (JSON)
  ARGV[6] retentionMs
  ARGV[7] occurrence key
  ARGV[8] retries allowed
  ARGV[9] retryBackoffMs
  ARGV[10] retryBackoffMaxMs
  ARGV[11] jitter u in [0, 1)
  ARGV[12] lockMs
  Returns: {1, 0} recorded final; {2, retryAt} retrying at retryAt (Redis ms); {0, 0} refused.
]]
-- @include "includes/record.lua"

local rec = rcall('HMGET', KEYS[1], 'token', 'state', 'leaseUntil')
if rec[1] ~= ARGV[1] or rec[2] ~= 'running' or tonumber(rec[3] or '0') < now then
  if rcall('EXISTS', KEYS[1]) == 1 then rcall('HINCRBY', KEYS[1], 'refused', 1) end
  return {0, 0}
end
if ARGV[4] ~= '' then rcall('HSET', KEYS[1], 'error', ARGV[4]) end
if ARGV[5] ~= '' then rcall('HSET', KEYS[1], 'result', ARGV[5]) end
if ARGV[2] == 'failed' then
  local failures = rcall('HINCRBY', KEYS[1], 'failures', 1)
  if failures <= tonumber(ARGV[8]) then
    local base = math.min(tonumber(ARGV[10]), tonumber(ARGV[9]) * 2 ^ (failures - 1))
    local retryAt = now + math.floor(base * (0.5 + tonumber(ARGV[11]) / 2))
    rcall('HSET', KEYS[1], 'state', 'retrying', 'retryAt', retryAt, 'released', 1, 'leaseUntil', 0, 'reason', ARGV[3])
    holdPlace(KEYS[1], ARGV[7], retryAt + tonumber(ARGV[12]))
    rcall('ZADD', KEYS[2], retryAt, ARGV[7])
    return {2, retryAt}
  end
end
finalize(KEYS[1], ARGV[2], ARGV[3], tonumber(ARGV[6]), KEYS[2], ARGV[7])
if ARGV[2] == 'succeeded' then rcall('HSET', KEYS[3], rcall('HGET', KEYS[1], 'schedule'), now) end
return {1, 0}
