import { LUA_PRELUDE } from './lua.js';

/**
 * renew: extend the lease of a live claim (and its place in the schedule's active set). Fails when the fencing
 * token changed, the record is no longer running, or the lease already ran out on the Redis clock: a lapsed
 * lease is never revived, because another replica may be entitled to re-claim from that instant on.
 * Also tells the claimant when a newer occurrence asked it to stop (concurrencyPolicy Replace).
 *
 * KEYS[1] run record; ARGV[1] fencing token, ARGV[2] lockMs, ARGV[3] retentionMs, ARGV[4] occurrence key
 * Returns: {leaseUntil (Redis ms), cancelRequestedBy or ''}, or {0, ''} when the claim is lost.
 */
export const renewScript = {
  name: 'cronflockRenew',
  numberOfKeys: 1,
  lua: `${LUA_PRELUDE}
local rec = rcall('HMGET', KEYS[1], 'token', 'state', 'leaseUntil', 'activeKey', 'cancelRequested')
if rec[1] ~= ARGV[1] or rec[2] ~= 'running' or tonumber(rec[3] or '0') < now then return {0, ''} end
local untilMs = now + tonumber(ARGV[2])
rcall('HSET', KEYS[1], 'leaseUntil', untilMs)
rcall('PEXPIRE', KEYS[1], tonumber(ARGV[2]) + tonumber(ARGV[3]))
if rec[4] then rcall('ZADD', rec[4], 'XX', untilMs, ARGV[4]) end
return {untilMs, rec[5] or ''}
`,
} as const;

/**
 * finish: record the result of an attempt, only while the claim is live: the token is current and the lease
 * has not lapsed on the Redis clock (fencing). A stale claimant's completion is refused and counted in the
 * record's `refused` field; a lapsed-but-not-yet-taken-over claim is refused too, so the occurrence is claimed
 * again rather than finished by a claimant that may have been presumed dead.
 *
 * A failure with retries left becomes `retrying` (an open state) until `retryAt`: the delay is
 * min(retryBackoffMax, retryBackoff * 2^(failures-1)) scaled by a jitter factor in [0.5, 1). The occurrence has
 * started, so it keeps its place in the schedule's active set until retryAt + lockMs (the concurrency policy
 * sees it between attempts; if nobody takes the retry up by then, its place lapses), and it ends succeeded or
 * failed, never skipped or missed.
 *
 * KEYS[1] run record, KEYS[2] pending (ZSET), KEYS[3] last success per schedule (HASH, Redis ms);
 * ARGV[1] fencing token, ARGV[2] state (succeeded | failed | skipped),
 * ARGV[3] reason, ARGV[4] error message, ARGV[5] result (JSON), ARGV[6] retentionMs, ARGV[7] occurrence key,
 * ARGV[8] retries allowed, ARGV[9] retryBackoffMs, ARGV[10] retryBackoffMaxMs, ARGV[11] jitter u in [0, 1),
 * ARGV[12] lockMs
 * Returns: {1, 0} recorded final; {2, retryAt} retrying at retryAt (Redis ms); {0, 0} refused.
 */
export const finishScript = {
  name: 'cronflockFinish',
  numberOfKeys: 3,
  lua: `${LUA_PRELUDE}
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
`,
} as const;

/**
 * release: give a claim up on purpose (SIGTERM hand-over, or a claimant that learnt its lease lapsed) so that
 * another replica may claim at once instead of waiting for the lease to run out. Not counted as a stall. The
 * occurrence has started: it keeps its place in the schedule's active set for lockMs more, for the replica that
 * takes it up (the concurrency policy treats it as running meanwhile).
 *
 * KEYS[1] run record; ARGV[1] fencing token, ARGV[2] why, ARGV[3] occurrence key, ARGV[4] lockMs
 * Returns: 1 when released, 0 when the claim was no longer ours.
 */
export const releaseScript = {
  name: 'cronflockRelease',
  numberOfKeys: 1,
  lua: `${LUA_PRELUDE}
local rec = rcall('HMGET', KEYS[1], 'token', 'state')
if rec[1] ~= ARGV[1] or rec[2] ~= 'running' then return 0 end
rcall('HSET', KEYS[1], 'leaseUntil', 0, 'released', 1, 'releaseReason', ARGV[2])
rcall('HINCRBY', KEYS[1], 'handovers', 1)
holdPlace(KEYS[1], ARGV[3], now + tonumber(ARGV[4]))
return 1
`,
} as const;

/**
 * sweep: the safety net under "nothing silent". Walks the open occurrences (the `pending` ZSET, oldest check
 * first) and makes sure each one either has a BullMQ job that will deliver it or is closed:
 * - scheduled (by the planner), older than the horizon: recorded missed (nobody could run it in time);
 * - scheduled, retrying, or running with a lapsed lease, and no BullMQ job (a replica died between planning and
 *   enqueueing, a job was lost, or failed out of the queue): returned, to be enqueued again;
 * - final or expired: dropped from the set.
 * Entries that are fine are moved to the back (score = now), so every open occurrence gets its turn.
 *
 * KEYS[1] pending (ZSET); ARGV[1] sweepAfterMs, ARGV[2] limit, ARGV[3] run-record key prefix,
 * ARGV[4] BullMQ job key prefix (queue.toKey('')) of the live lane, ARGV[5] horizonMs, ARGV[6] retentionMs,
 * ARGV[7] BullMQ job key prefix of the backlog lane ('' for none): a job in either lane counts
 * Returns: flat list of occurrence key, schedule, dueMs, fireMs, origin, reason for each occurrence to enqueue
 * again (origin and reason decide its lane).
 */
export const sweepScript = {
  name: 'cronflockSweep',
  numberOfKeys: 1,
  lua: `${LUA_PRELUDE}
local keys = rcall('ZRANGEBYSCORE', KEYS[1], '-inf', now - tonumber(ARGV[1]), 'LIMIT', 0, tonumber(ARGV[2]))
local out = {}
for _, key in ipairs(keys) do
  local occKey = ARGV[3] .. key
  local rec = rcall('HMGET', occKey, 'schedule', 'dueMs', 'fireMs', 'manual', 'state', 'leaseUntil', 'origin', 'reason')
  local state = rec[5]
  if not rec[1] or isFinal(state) then
    rcall('ZREM', KEYS[1], key)
  elseif state == 'scheduled' and now - tonumber(rec[2]) > tonumber(ARGV[5]) and rec[4] ~= '1' then
    finalize(occKey, 'missed', 'not claimed within the catch-up horizon', tonumber(ARGV[6]), KEYS[1], key)
  else
    local lapsed = state ~= 'running' or tonumber(rec[6] or '0') < now
    local jobId = string.gsub(key, ':', '-')
    if lapsed and rcall('EXISTS', ARGV[4] .. jobId) == 0 and (ARGV[7] == '' or rcall('EXISTS', ARGV[7] .. jobId) == 0) then
      out[#out + 1] = key; out[#out + 1] = rec[1]; out[#out + 1] = rec[2]; out[#out + 1] = rec[3]
      out[#out + 1] = rec[7] or 'schedule'; out[#out + 1] = rec[8] or ''
    end
    rcall('ZADD', KEYS[1], now, key)
  end
end
return out
`,
} as const;

/**
 * abandon: close an occurrence that will not be claimed (its schedule is unknown to this replica, or was
 * removed, or no replica ran its current definition in time) with a final state and reason, unless it is
 * already final or held by a live claim. With a minimum age, it is closed only once its fire time is that far
 * in the past on the Redis clock: "too late to run" is decided on `TIME`, never on a host's estimate. An
 * occurrence that has started (waiting to retry, or handed over) is recorded failed with the reason instead.
 *
 * KEYS[1] run record, KEYS[2] pending (ZSET); ARGV[1] state (skipped | missed), ARGV[2] reason,
 * ARGV[3] retentionMs, ARGV[4] occurrence key, ARGV[5] minimum age of the fire time in ms (-1: none)
 * Returns: {1, state recorded}; {0, ''} when final, held or gone; {2, ''} when younger than the minimum age.
 */
export const abandonScript = {
  name: 'cronflockAbandon',
  numberOfKeys: 2,
  lua: `${LUA_PRELUDE}
local rec = rcall('HMGET', KEYS[1], 'state', 'leaseUntil', 'fireMs')
if not rec[1] or isFinal(rec[1]) then return {0, ''} end
if rec[1] == 'running' and tonumber(rec[2] or '0') >= now then return {0, ''} end
local minAgeMs = tonumber(ARGV[5] or '-1')
if minAgeMs >= 0 and now - tonumber(rec[3] or '0') <= minAgeMs then return {2, ''} end
local state = ARGV[1]
if hasStarted(KEYS[1]) then state = 'failed' end
finalize(KEYS[1], state, ARGV[2], tonumber(ARGV[3]), KEYS[2], ARGV[4])
return {1, state}
`,
} as const;
