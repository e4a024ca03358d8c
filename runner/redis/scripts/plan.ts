import { LUA_PRELUDE } from './lua.js';

/**
 * plan: record the occurrences a replica computed from the schedules and the clock, idempotently.
 *
 * Any replica may plan any occurrence at any time; the first record wins and later calls change nothing, so
 * planning needs no leader and a crash between planning and enqueueing loses nothing (the sweeper re-enqueues
 * from `pending`). An occurrence whose due time is older than the horizon is never (re)created: that is what
 * keeps a replica that lagged far behind (paused, partitioned) from reviving occurrences whose records have
 * already expired, since the horizon is shorter than the record retention.
 *
 * Last, the call writes the caller's plan mark (`marks[replica] = ARGV[6]`). Redis loses writes only as a
 * suffix (a crash with `appendfsync everysec`, a failover to a replica that lagged), so a surviving mark proves
 * that every earlier plan call of that replica survived too: the planner re-offers only the calls after it.
 *
 * KEYS[1] pending (ZSET), KEYS[2] watermarks (HASH), KEYS[3] schedules (SET), KEYS[4] plan marks (HASH)
 * ARGV[1] run-record key prefix, ARGV[2] run-index key prefix, ARGV[3] horizonMs, ARGV[4] retentionMs,
 * ARGV[5] replica, ARGV[6] plan mark ('' for none), then per occurrence 6 values: schedule, dueMs, fireMs,
 *   occurrence key, disposition ('run' | 'missed' | 'skipped'), reason ('' for an on-time run)
 * Returns: the occurrence keys created with disposition 'run' (to enqueue), then '|', then the keys created
 *   in a final state (missed or skipped).
 */
export const planScript = {
  name: 'cronflockPlan',
  numberOfKeys: 4,
  lua: `${LUA_PRELUDE}
local occPrefix, runsPrefix = ARGV[1], ARGV[2]
local horizonMs, retentionMs, replica = tonumber(ARGV[3]), tonumber(ARGV[4]), ARGV[5]
local toEnqueue = {}
local finals = {}
local latest = {}
for i = 7, #ARGV, 6 do
  local schedule, dueMs, fireMs, key = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3]
  local disposition, reason = ARGV[i + 4], ARGV[i + 5]
  local occKey = occPrefix .. key
  if now - tonumber(dueMs) <= horizonMs and rcall('EXISTS', occKey) == 0 then
    if disposition == 'run' then
      createRecord(occKey, runsPrefix .. schedule, KEYS[3], schedule, key, dueMs, fireMs, 'schedule', 'scheduled', reason, replica, retentionMs)
      rcall('ZADD', KEYS[1], fireMs, key)
      toEnqueue[#toEnqueue + 1] = key
    else
      createRecord(occKey, runsPrefix .. schedule, KEYS[3], schedule, key, dueMs, fireMs, 'schedule', disposition, reason, replica, retentionMs)
      finals[#finals + 1] = key
    end
  end
  if not latest[schedule] or latest[schedule] < tonumber(dueMs) then latest[schedule] = tonumber(dueMs) end
end
for schedule, dueMs in pairs(latest) do
  local wm = tonumber(rcall('HGET', KEYS[2], schedule) or '0')
  if wm < dueMs then
    rcall('HSET', KEYS[2], schedule, dueMs)
    -- Forget index entries whose records have expired: once a minute of due times per schedule is enough.
    if math.floor(wm / 60000) ~= math.floor(dueMs / 60000) then
      rcall('ZREMRANGEBYSCORE', runsPrefix .. schedule, '-inf', now - retentionMs - horizonMs)
    end
  end
end
if ARGV[6] ~= '' then rcall('HSET', KEYS[4], replica, ARGV[6]) end
toEnqueue[#toEnqueue + 1] = '|'
for _, key in ipairs(finals) do toEnqueue[#toEnqueue + 1] = key end
return toEnqueue
`,
} as const;
