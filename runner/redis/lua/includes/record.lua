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
  the concurrency policy sees runs on every replica. It keeps its place there while it is open, whether or not
  an attempt of it runs at this instant: waiting to retry, handed over, or stalled (its claimant died or stopped
  and its lease lapsed: it is delivered again, by BullMQ's stall check or the sweep, and either claimed again or
  recorded failed once it stalled more than the stall limit). It leaves when it is final (finalize), or when its
  record is gone (expired): `activePeers` drops such entries, and the claim drops those whose score lies more
  than the retention in the past (their record has expired by then). The score is informational: the lease end
  while an attempt runs, retryAt + lock while it waits to retry, the hand-over time + lock after a release.
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

-- Keeps a started occurrence in its schedule's active set while no attempt of it runs (waiting to retry, or
-- handed over), with untilMs (Redis ms) as its score: when the next attempt is expected to have been taken up.
-- It keeps its place until it is final, however late that attempt comes.
local function holdPlace(occKey, key, untilMs)
  local activeKey = rcall('HGET', occKey, 'activeKey')
  if activeKey then rcall('ZADD', activeKey, untilMs, key) end
end

-- True once an attempt of the occurrence was claimed: it has started, and the engine's policies and deadlines
-- never record it missed or skipped (it ends succeeded or failed).
local function hasStarted(occKey)
  return rcall('HEXISTS', occKey, 'firstStartMs') == 1
end

-- The other occurrences in a schedule's active set that are still open (started, not final), as a list of
-- {key, state, dueMs, live, released}: live = an attempt holds a lease now (running, leaseUntil > now on the
-- Redis clock); released = handed over (SIGTERM, or a claim given back unrun). One whose lease lapsed counts
-- as much as a live one: it will be claimed again or fail stalled-out, and until then it holds the schedule.
-- Entries whose record is final or gone (expired) are dropped from the set here.
local function activePeers(activeKey, key, occPrefix)
  local peers = {}
  for _, other in ipairs(rcall('ZRANGE', activeKey, 0, -1)) do
    if other ~= key then
      local r = rcall('HMGET', occPrefix .. other, 'state', 'leaseUntil', 'dueMs', 'released')
      if not r[1] or isFinal(r[1]) then
        rcall('ZREM', activeKey, other)
      else
        peers[#peers + 1] = {key = other, state = r[1], dueMs = tonumber(r[3] or '0'),
          live = r[1] == 'running' and tonumber(r[2] or '0') > now, released = r[4] == '1'}
      end
    end
  end
  return peers
end

-- How a peer from activePeers holds its schedule, in words for a skip reason.
local function peerDoing(p)
  if p.live then return 'still running' end
  if p.state == 'retrying' then return 'waiting to retry' end
  if p.released then return 'handed over, to be claimed again' end
  return 'stalled, to be claimed again'
end

-- Moves an open record to a final state and out of the pending, active and backfill sets (its schedule's active
-- set: the concurrency policy's view); the record then lives retentionMs.
-- Returns the schedule's name (nil when the record is gone).
local function finalize(occKey, state, reason, retentionMs, pendingKey, key)
  if reason ~= '' then rcall('HSET', occKey, 'state', state, 'endMs', now, 'reason', reason)
  else rcall('HSET', occKey, 'state', state, 'endMs', now) end
  -- one read for what follows: the schedule, and the active set and backfill queue to leave
  local rec = rcall('HMGET', occKey, 'schedule', 'dueMs', 'activeKey', 'queueKey')
  if rec[1] then recordLastResult(occKey, key, rec[1], state, reason, rec[2]) end
  rcall('HDEL', occKey, 'leaseUntil')
  rcall('PEXPIRE', occKey, retentionMs)
  rcall('ZREM', pendingKey, key)
  if rec[3] then rcall('ZREM', rec[3], key) end
  if rec[4] then rcall('ZREM', rec[4], key) end
  recordHistory(occKey)
  emitOutcome(occKey, state, reason, rec[1] or nil)
  return rec[1] or nil
end
