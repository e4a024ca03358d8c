--[[
  backfill-enqueue: record backfill occurrences as waiting, de-duplicated against every existing record.

  The backfill backlog: occurrences `cronflock backfill` asked for wait in Redis, not in the queue, and are
  let out (admitted) a few at a time across the whole flock, so that a backfill of thousands of occurrences
  never takes a worker slot, a place in a queue or a Redis round trip from a live occurrence.

  Waiting: the run record exists (state `scheduled`, origin `backfill`, no expiry) and the key is in its
  schedule's backfill queue (ZSET by due time); the schedule is in the backfill schedules ZSET (by the time its
  backfill was first asked for). A waiting occurrence is not in `pending` and has no BullMQ job: the sweeper
  does not look at it, the backlog is its own account of it (promise 2, nothing silent).

  Admitted: moved to `pending` with its fire time set to the admission time (its lateness counts from there),
  the record's expiry set as for any open occurrence, `admitted = 1`, and the key in the admitted ZSET; the
  caller then enqueues it on the backlog lane. From then on it is an ordinary occurrence: claimed, run,
  retried, swept. The claim script sends an admitted occurrence of a suspended schedule back to waiting
  (`admitted = 0`, back in its backfill queue) without running it.

  KEYS[1] backfill schedules (ZSET)
  KEYS[2] backfill queue of the schedule (ZSET)
  KEYS[3] run index of the schedule
  KEYS[4] schedules (SET)
  ARGV[1] packed:
    occPrefix     run-record key prefix
    schedule      the schedule
    by            who asked
    policy        its concurrency policy (Allow | Forbid | Replace: Allow lets admission run several at once)
    retentionMs   how long records live once admitted
    items         the occurrences, each {occurrence key, dueMs}
  Returns: the occurrence keys created (the others already had a record).
]]
-- @include "includes/record.lua"

local args = cmsgpack.unpack(ARGV[1])
local schedule, who, policy, retentionMs = args.schedule, args.by, args.policy, args.retentionMs
local created = {}
for _, item in ipairs(args.items) do
  local key, dueMs = item[1], item[2]
  local occKey = args.occPrefix .. key
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
