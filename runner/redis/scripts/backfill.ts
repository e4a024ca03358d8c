import { LUA_PRELUDE } from './lua.js';

/**
 * The backfill backlog: occurrences `cronflock backfill` asked for wait in Redis, not in the queue, and are
 * let out (admitted) a few at a time across the whole flock, so that a backfill of thousands of occurrences
 * never takes a worker slot, a place in a queue or a Redis round trip from a live occurrence.
 *
 * Waiting: the run record exists (state `scheduled`, origin `backfill`, no expiry) and the key is in its
 * schedule's backfill queue (ZSET by due time); the schedule is in the backfill schedules ZSET (by the time its
 * backfill was first asked for). A waiting occurrence is not in `pending` and has no BullMQ job: the sweeper
 * does not look at it, the backlog is its own account of it (promise 2, nothing silent).
 *
 * Admitted: moved to `pending` with its fire time set to the admission time (its lateness counts from there),
 * the record's expiry set as for any open occurrence, `admitted = 1`, and the key in the admitted ZSET; the
 * caller then enqueues it on the backlog lane. From then on it is an ordinary occurrence: claimed, run,
 * retried, swept. The claim script sends an admitted occurrence of a suspended schedule back to waiting
 * (`admitted = 0`, back in its backfill queue) without running it.
 */

/**
 * backfillEnqueue: record backfill occurrences as waiting, de-duplicated against every existing record.
 *
 * KEYS[1] backfill schedules (ZSET), KEYS[2] backfill queue of the schedule (ZSET), KEYS[3] run index of the
 * schedule, KEYS[4] schedules (SET)
 * ARGV[1] run-record key prefix, ARGV[2] schedule, ARGV[3] who asked, ARGV[4] concurrency policy
 * (Allow | Forbid | Replace: Allow lets admission run several at once), ARGV[5] retentionMs, then pairs of
 * occurrence key and dueMs.
 * Returns: the occurrence keys created (the others already had a record).
 */
export const backfillEnqueueScript = {
  name: 'cronflockBackfillEnqueue',
  numberOfKeys: 4,
  lua: `${LUA_PRELUDE}
local schedule, who, policy, retentionMs = ARGV[2], ARGV[3], ARGV[4], tonumber(ARGV[5])
local created = {}
for i = 6, #ARGV, 2 do
  local key, dueMs = ARGV[i], ARGV[i + 1]
  local occKey = ARGV[1] .. key
  if rcall('EXISTS', occKey) == 0 then
    createRecord(occKey, KEYS[3], KEYS[4], schedule, key, dueMs, now, 'backfill', 'scheduled', '', who, retentionMs)
    rcall('PERSIST', occKey)
    rcall('HSET', occKey, 'queueKey', KEYS[2], 'policy', policy, 'admitted', 0)
    rcall('ZADD', KEYS[2], dueMs, key)
    created[#created + 1] = key
  end
end
if #created > 0 then rcall('ZADD', KEYS[1], 'NX', now, schedule) end
return created
`,
} as const;

/**
 * backfillAdmit: let waiting backfill occurrences out, up to `cap` admitted at once across the flock.
 * Schedules are served in the order their backfill was asked for; within a schedule, oldest due time first;
 * a schedule whose concurrency policy is not Allow has at most one admitted at a time (the next one is admitted
 * when the previous one is final, so they run one after the other in due-time order); a suspended schedule's
 * backfill is not admitted (it waits for `cronflock resume`).
 *
 * KEYS[1] backfill schedules (ZSET), KEYS[2] admitted (ZSET), KEYS[3] pending (ZSET), KEYS[4] suspended
 * schedules (HASH)
 * ARGV[1] run-record key prefix, ARGV[2] backfill-queue key prefix, ARGV[3] cap (flock-wide), ARGV[4]
 * retentionMs, ARGV[5] most schedules looked at per call
 * Returns: flat list of occurrence key, schedule, dueMs, fireMs (= now) per admitted occurrence, to enqueue.
 */
export const backfillAdmitScript = {
  name: 'cronflockBackfillAdmit',
  numberOfKeys: 4,
  lua: `${LUA_PRELUDE}
local occPrefix, queuePrefix = ARGV[1], ARGV[2]
local cap, retentionMs, scan = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
-- Admitted ones that ended (final, expired, or sent back to waiting by a suspension) free their place.
local admitted, perSchedule = 0, {}
for _, key in ipairs(rcall('ZRANGE', KEYS[2], 0, -1)) do
  local rec = rcall('HMGET', occPrefix .. key, 'state', 'schedule', 'admitted')
  if not rec[1] or isFinal(rec[1]) or rec[3] ~= '1' then
    rcall('ZREM', KEYS[2], key)
  else
    admitted = admitted + 1
    perSchedule[rec[2]] = (perSchedule[rec[2]] or 0) + 1
  end
end
local out = {}
for _, schedule in ipairs(rcall('ZRANGE', KEYS[1], 0, scan - 1)) do
  local queue = queuePrefix .. schedule
  if admitted < cap and rcall('HEXISTS', KEYS[4], schedule) == 0 then
    while admitted < cap do
      local head = rcall('ZRANGE', queue, 0, 0)[1]
      if not head then break end
      local occKey = occPrefix .. head
      local rec = rcall('HMGET', occKey, 'state', 'policy', 'dueMs')
      if not rec[1] or isFinal(rec[1]) then
        rcall('ZREM', queue, head)
      elseif rec[2] ~= 'Allow' and (perSchedule[schedule] or 0) > 0 then
        break
      else
        rcall('ZREM', queue, head)
        rcall('HSET', occKey, 'fireMs', now, 'admitted', 1)
        rcall('PEXPIRE', occKey, retentionMs)
        rcall('ZADD', KEYS[2], now, head)
        rcall('ZADD', KEYS[3], now, head)
        admitted = admitted + 1
        perSchedule[schedule] = (perSchedule[schedule] or 0) + 1
        out[#out + 1] = head; out[#out + 1] = schedule; out[#out + 1] = rec[3]; out[#out + 1] = now
      end
    end
  end
  if (perSchedule[schedule] or 0) == 0 and rcall('ZCARD', queue) == 0 then rcall('ZREM', KEYS[1], schedule) end
end
return out
`,
} as const;

/**
 * backfillCancel: record a schedule's backfill occurrences that have not started `skipped` with a reason:
 * those waiting, and those admitted whose run has not started (their queue job then finds a final record and
 * runs nothing). Runs in flight, and ones waiting for a retry, go on.
 *
 * KEYS[1] backfill queue of the schedule (ZSET), KEYS[2] admitted (ZSET), KEYS[3] pending (ZSET)
 * ARGV[1] run-record key prefix, ARGV[2] schedule, ARGV[3] retentionMs, ARGV[4] reason, ARGV[5] most
 * waiting occurrences recorded per call
 * Returns: {cancelled, still waiting (call again while > 0), started (running or retrying)}.
 */
export const backfillCancelScript = {
  name: 'cronflockBackfillCancel',
  numberOfKeys: 3,
  lua: `${LUA_PRELUDE}
local occPrefix, schedule, retentionMs, reason = ARGV[1], ARGV[2], tonumber(ARGV[3]), ARGV[4]
local cancelled, started = 0, 0
for _, key in ipairs(rcall('ZRANGE', KEYS[1], 0, tonumber(ARGV[5]) - 1)) do
  local occKey = occPrefix .. key
  local state = rcall('HGET', occKey, 'state')
  if state and not isFinal(state) then
    finalize(occKey, 'skipped', reason, retentionMs, KEYS[3], key)
    cancelled = cancelled + 1
  end
  rcall('ZREM', KEYS[1], key)
end
for _, key in ipairs(rcall('ZRANGE', KEYS[2], 0, -1)) do
  local occKey = occPrefix .. key
  local rec = rcall('HMGET', occKey, 'state', 'schedule')
  if rec[2] == schedule then
    if rec[1] == 'scheduled' then
      finalize(occKey, 'skipped', reason, retentionMs, KEYS[3], key)
      rcall('ZREM', KEYS[2], key)
      cancelled = cancelled + 1
    elseif rec[1] and not isFinal(rec[1]) then
      started = started + 1
    end
  end
end
return {cancelled, rcall('ZCARD', KEYS[1]), started}
`,
} as const;
