--[[
  Run records: the helpers the occurrence scripts share.

  Run-record fields (HASH `{ns}:occ:<occurrence key>`): schedule, key, dueMs, fireMs, manual, origin
  (schedule | manual | backfill | resume), state (scheduled | running | retrying | succeeded | failed | missed |
  skipped), reason, token (fencing token), attempt, stalls, failures, retryAt, handovers, refused (stale
  completions refused), replica, leaseUntil, released, cancelRequested, activeKey, queueKey, plannedAt,
  firstStartMs, startMs, latenessMs, endMs, error, result; backfill occurrences also policy (the schedule's
  concurrency policy when asked for) and admitted (0 waiting, 1 admitted).

  Every open occurrence (scheduled, running or retrying) is in the `pending` ZSET until it is final; the sweeper
  walks it so that no open occurrence can be left without a queue job (promise 2: nothing silent).

  From its first claim until it is final, an occurrence is also in its schedule's `active` ZSET, which is how
  the concurrency policy sees runs on every replica: score = lease end while an attempt runs, and while it waits
  to retry (or is handed over) the time until which it keeps its place (retryAt + lock, or now + lock); an entry
  whose score has passed lapsed (its claimant died and nobody took it up) and is cleaned by the next claim.
  Backfill occurrences wait in their schedule's backfill queue ZSET (score: due time) so they run oldest first.

  Every final state (createRecord in a final state, finalize) also writes, in the same atomic step: the
  schedule's latest result (last-result.lua), its history entry (history.lua) and, for schedules that want it,
  the notify outbox event (outbox.lua); a first claim writes its attempt line and the `started` outcome.
]]
-- @include "now.lua"
-- @include "last-result.lua"
-- @include "history.lua"
-- @include "outbox.lua"

local function isFinal(state)
  return state == 'succeeded' or state == 'failed' or state == 'missed' or state == 'skipped'
end

-- Creates the run record of an occurrence (state 'scheduled' or a final state) and indexes it.
-- Expiry: a final record lives retentionMs; an open one until its fire time plus retentionMs.
local function createRecord(occKey, runsKey, schedulesKey, schedule, key, dueMs, fireMs, origin, state, reason, replica, retentionMs)
  rcall('HSET', occKey, 'schedule', schedule, 'key', key, 'dueMs', dueMs, 'fireMs', fireMs,
    'manual', origin == 'schedule' and 0 or 1, 'origin', origin,
    'state', state, 'token', 0, 'attempt', 0, 'plannedAt', now, 'plannedBy', replica)
  if reason ~= '' then rcall('HSET', occKey, 'reason', reason) end
  if isFinal(state) then
    rcall('HSET', occKey, 'endMs', now)
    rcall('PEXPIRE', occKey, retentionMs)
    recordHistory(occKey)
    emitOutcome(occKey, state, reason)
    recordLastResult(occKey, key, schedule, state, reason, dueMs)
  else
    rcall('PEXPIRE', occKey, math.max(tonumber(fireMs) - now, 0) + retentionMs)
  end
  rcall('ZADD', runsKey, dueMs, key)
  rcall('SADD', schedulesKey, schedule)
end

-- Takes a claimed occurrence out of its schedule's active set (the concurrency policy's view).
local function deactivate(occKey, key)
  local activeKey = rcall('HGET', occKey, 'activeKey')
  if activeKey then rcall('ZREM', activeKey, key) end
end

-- Keeps a started occurrence in its schedule's active set until untilMs (Redis ms) while no attempt of it runs
-- (waiting to retry, or handed over): it keeps its place, and lapses from the set if nobody takes it up.
local function holdPlace(occKey, key, untilMs)
  local activeKey = rcall('HGET', occKey, 'activeKey')
  if activeKey then rcall('ZADD', activeKey, untilMs, key) end
end

-- True once an attempt of the occurrence was claimed: it has started, and the engine's policies and deadlines
-- never record it missed or skipped (it ends succeeded or failed).
local function hasStarted(occKey)
  return rcall('HEXISTS', occKey, 'firstStartMs') == 1
end

-- Moves an open record to a final state and out of the pending, active and backfill sets; the record then
-- lives retentionMs.
local function finalize(occKey, state, reason, retentionMs, pendingKey, key)
  rcall('HSET', occKey, 'state', state, 'endMs', now)
  if reason ~= '' then rcall('HSET', occKey, 'reason', reason) end
  local rec = rcall('HMGET', occKey, 'schedule', 'dueMs')
  if rec[1] then recordLastResult(occKey, key, rec[1], state, reason, rec[2]) end
  rcall('HDEL', occKey, 'leaseUntil')
  rcall('PEXPIRE', occKey, retentionMs)
  rcall('ZREM', pendingKey, key)
  deactivate(occKey, key)
  local queueKey = rcall('HGET', occKey, 'queueKey')
  if queueKey then rcall('ZREM', queueKey, key) end
  recordHistory(occKey)
  emitOutcome(occKey, state, reason)
end
