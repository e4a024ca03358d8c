import { LUA_PRELUDE } from './lua.js';

/**
 * claim: take an occurrence to run it. The one place where "at most one live claimant" is decided.
 *
 * BullMQ delivers an occurrence at least once (a stalled job is delivered again); this script turns delivery
 * into at most one live claim per occurrence: a claim is refused while another claimant's lease is live on the
 * Redis clock, every claim increments the fencing token, and a final record is never claimed again (so a
 * duplicate delivery, or a job re-added after BullMQ removed it, runs nothing).
 *
 * KEYS[1] run record, KEYS[2] pending (ZSET), KEYS[3] run index of the schedule (ZSET), KEYS[4] schedules (SET)
 * ARGV[1] replica, ARGV[2] lockMs, ARGV[3] horizonMs, ARGV[4] retentionMs, ARGV[5] schedule, ARGV[6] dueMs,
 * ARGV[7] fireMs, ARGV[8] occurrence key, ARGV[9] startingDeadlineMs (-1: none), ARGV[10] earlyToleranceMs,
 * ARGV[11] maxStalls, ARGV[12] manual (0|1)
 * Returns one of:
 *   {'claimed', token, attempt, nowMs, firstStartMs}   the caller holds the claim until leaseUntil
 *   {'early', waitMs}             the fire time has not come on the Redis clock
 *   {'held', waitMs, replica}     another claimant's lease is live
 *   {'final', state}              already finished: nothing to do
 *   {'stale'}                     older than the horizon and unknown: a revived duplicate, run nothing
 *   {'missed'}                    recorded missed: it can no longer start within its starting deadline
 *   {'stalled-out'}               recorded failed: it stalled more than maxStalls times
 */
export const claimScript = {
  name: 'cronflockClaim',
  numberOfKeys: 4,
  lua: `${LUA_PRELUDE}
local occKey = KEYS[1]
local replica, lockMs, horizonMs, retentionMs = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local schedule, dueMs, fireMs, key = ARGV[5], tonumber(ARGV[6]), tonumber(ARGV[7]), ARGV[8]
local deadlineMs, earlyMs, maxStalls, manual = tonumber(ARGV[9]), tonumber(ARGV[10]), tonumber(ARGV[11]), ARGV[12]

if rcall('EXISTS', occKey) == 0 then
  if now - dueMs > horizonMs then return {'stale'} end
  createRecord(occKey, KEYS[3], KEYS[4], schedule, key, dueMs, fireMs, manual, 'scheduled', '', replica, retentionMs)
  rcall('ZADD', KEYS[2], fireMs, key)
end
local rec = rcall('HMGET', occKey, 'state', 'leaseUntil', 'replica', 'released', 'stalls', 'attempt', 'firstStartMs')
local state, leaseUntil, holder = rec[1], tonumber(rec[2] or '0'), rec[3]
if isFinal(state) then return {'final', state} end
if now < fireMs - earlyMs then return {'early', fireMs - now} end
if state == 'running' and leaseUntil > now then return {'held', leaseUntil - now, holder or ''} end

if state == 'scheduled' and deadlineMs >= 0 and now > fireMs + deadlineMs then
  finalize(occKey, 'missed', 'starting deadline exceeded', retentionMs, KEYS[2], key)
  return {'missed'}
end
if state == 'running' and rec[4] ~= '1' then
  -- The previous claimant's lease ran out without a release: it stalled (killed, stopped, partitioned).
  local stalls = rcall('HINCRBY', occKey, 'stalls', 1)
  if stalls > maxStalls then
    finalize(occKey, 'failed', 'stalled ' .. stalls .. ' times (stall limit ' .. maxStalls .. ')', retentionMs, KEYS[2], key)
    return {'stalled-out'}
  end
end
local token = rcall('HINCRBY', occKey, 'token', 1)
local attempt = rcall('HINCRBY', occKey, 'attempt', 1)
local firstStart = tonumber(rec[7] or '0')
if firstStart == 0 then
  firstStart = now
  rcall('HSET', occKey, 'firstStartMs', now, 'latenessMs', now - fireMs)
end
rcall('HSET', occKey, 'state', 'running', 'replica', replica, 'leaseUntil', now + lockMs, 'released', 0, 'startMs', now)
rcall('PEXPIRE', occKey, lockMs + retentionMs)
rcall('ZADD', KEYS[2], now, key)
return {'claimed', token, attempt, now, firstStart}
`,
} as const;
