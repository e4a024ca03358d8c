--[[
  claim: take an occurrence to run it. The one place where "at most one live claimant" and the concurrency
  policy are decided, atomically, on the Redis clock.

  BullMQ delivers an occurrence at least once (a stalled job is delivered again); this script turns delivery
  into at most one live claim per occurrence: a claim is refused while another claimant's lease is live, every
  claim increments the fencing token, and a final record is never claimed again (so a duplicate delivery, or a
  job re-added after BullMQ removed it, runs nothing).

  Concurrency policy (Kubernetes CronJob semantics, across every replica): the schedule's `active` set holds
  the occurrences that have started and are not final: those whose lease is live, and those waiting to retry
  or handed over, which keep their place for a while (includes/record.lua). The policy decides about
  occurrences that have not started; one that has started keeps its place and ends succeeded or failed, never
  skipped.
  - Forbid: an occurrence that has not started and finds another one running or waiting to retry is recorded
    skipped (overlap); a started one (a retry, a re-claim) that finds another waits for it to end.
  - Replace: the newer occurrence asks the older running ones to stop (their claimant learns it at its next
    renewal and its AbortSignal fires) and waits until they have stopped or lost their claim; an older one
    waiting to retry is ended at once, failed: replaced. An older occurrence that finds a newer one running is
    recorded skipped (superseded) if it has not started, failed: replaced if it has.
  - Allow with maxConcurrent: waits for a free slot (within the starting deadline); a run waiting to retry
    keeps its slot.
  Backfill occurrences never skip or replace: they wait; their order and pace are the backfill admission's
  (backfill-admit.lua). An admitted backfill occurrence of a suspended schedule goes back to waiting in its
  backfill queue, unrun (paused until `cronflock resume`).

  KEYS[1] run record
  KEYS[2] pending (ZSET)
  KEYS[3] run index of the schedule (ZSET)
  KEYS[4] schedules (SET)
  KEYS[5] active set of the schedule (ZSET)
  KEYS[6] suspended schedules (HASH)
  KEYS[7] backfill queue of the schedule (ZSET)
  ARGV[1] packed:
    replica              the claimant
    lockMs               the lease
    horizonMs            an unknown occurrence older than this is not created (stale)
    retentionMs          how long the record lives after its fire time, or once final
    schedule             the occurrence's schedule
    dueMs                its due time
    fireMs               its fire time
    key                  its occurrence key
    startingDeadlineMs   -1: none
    earlyToleranceMs     how long before the fire time a claim is accepted
    maxStalls            stalls after which the occurrence fails (stalled-out)
    origin               schedule | manual | backfill | resume
    concurrencyPolicy    Allow | Forbid | Replace
    maxConcurrent        -1: no limit
    gates                the concurrency group and rate limits the claim must pass (includes/gates.lua), a
                         list of maps; empty: none
  Returns one of:
    {'claimed', token, attempt, nowMs, firstStartMs, [key, dueMs, fireMs]...}   the caller holds the claim until
                                  leaseUntil; the triples are older occurrences it ended failed: replaced
    {'early', waitMs}             the fire time (or retry time) has not come on the Redis clock
    {'held', waitMs, who}         another claimant's lease is live, or the concurrency policy, a group or a
                                  rate limit says wait (who: the gate's label, e.g. "group cluster-prod")
    {'final', state}              already finished: nothing to do
    {'stale'}                     older than the horizon and unknown: a revived duplicate, run nothing
    {'missed', reason}            recorded missed: it can no longer start within its starting deadline (the
                                  reason names the group or rate limit it waited for, if any)
    {'skipped', reason}           recorded skipped: suspended, overlap (Forbid) or superseded (Replace)
    {'paused'}                    a backfill occurrence of a suspended schedule: back to waiting, unrun
    {'failed', reason, error}     recorded failed: it had started, and a newer occurrence replaces it (Replace)
    {'stalled-out'}               recorded failed: it stalled more than maxStalls times
]]
-- @include "includes/record.lua"
-- @include "includes/gates.lua"

local args = cmsgpack.unpack(ARGV[1])
local occKey = KEYS[1]
local replica, lockMs, horizonMs, retentionMs = args.replica, args.lockMs, args.horizonMs, args.retentionMs
local schedule, dueMs, fireMs, key = args.schedule, args.dueMs, args.fireMs, args.key
local deadlineMs, earlyMs, maxStalls, origin = args.startingDeadlineMs, args.earlyToleranceMs, args.maxStalls, args.origin
local policy, maxConcurrent = args.concurrencyPolicy, args.maxConcurrent
local occPrefix = string.sub(occKey, 1, #occKey - #key)

if rcall('EXISTS', occKey) == 0 then
  if now - dueMs > horizonMs then return {'stale'} end
  createRecord(occKey, KEYS[3], KEYS[4], schedule, key, dueMs, fireMs, origin, 'scheduled', '', replica, retentionMs)
  rcall('ZADD', KEYS[2], fireMs, key)
end
local rec = rcall('HMGET', occKey, 'state', 'leaseUntil', 'replica', 'released', 'stalls', 'attempt', 'firstStartMs', 'retryAt', 'origin')
local state, leaseUntil, holder = rec[1], tonumber(rec[2] or '0'), rec[3]
origin = rec[9] or origin
if isFinal(state) then return {'final', state} end
if now < fireMs - earlyMs then return {'early', fireMs - now} end
if state == 'running' and leaseUntil > now then return {'held', leaseUntil - now, holder or ''} end
if state == 'retrying' and now < tonumber(rec[8] or '0') then return {'early', tonumber(rec[8]) - now} end

-- Whoever closes an occurrence without running it is named in its record.
if state == 'scheduled' then rcall('HSET', occKey, 'replica', replica) end
if state == 'scheduled' and origin == 'schedule' then
  local suspended = rcall('HGET', KEYS[6], schedule)
  if suspended then
    finalize(occKey, 'skipped', 'suspended', retentionMs, KEYS[2], key)
    return {'skipped', 'suspended'}
  end
  if deadlineMs >= 0 and now > fireMs + deadlineMs then
    local why = 'starting deadline exceeded'
    -- the reason names the group or rate limit it waited for (includes/gates.lua)
    local w = rcall('HMGET', occKey, 'waitingFor', 'waitSince')
    if w[1] then why = why .. ': waited for ' .. w[1] .. ' ' .. string.format('%.1f s', (now - tonumber(w[2] or now)) / 1000) end
    finalize(occKey, 'missed', why, retentionMs, KEYS[2], key)
    return {'missed', why}
  end
end
if state == 'scheduled' and origin == 'backfill' and rcall('HEXISTS', KEYS[6], schedule) == 1 then
  -- Paused: admission leaves it waiting until the schedule is resumed.
  rcall('HSET', occKey, 'admitted', 0)
  rcall('PERSIST', occKey)
  rcall('ZREM', KEYS[2], key)
  rcall('ZADD', KEYS[7], dueMs, key)
  return {'paused'}
end

-- Concurrency policy: who else of this schedule holds a live claim, or keeps its place between attempts?
-- An occurrence that has started (an attempt was claimed before) keeps its place too: the policy may make it
-- wait, or end it replaced, but never records it skipped.
local started = hasStarted(occKey)
rcall('ZREMRANGEBYSCORE', KEYS[5], '-inf', now - 1)
local others = {}
for _, other in ipairs(rcall('ZRANGE', KEYS[5], 0, -1)) do
  if other ~= key then others[#others + 1] = other end
end
local replaced = {}
if #others > 0 then
  if origin == 'backfill' and policy ~= 'Allow' then return {'held', 250, others[1]} end
  if policy == 'Forbid' then
    if started then return {'held', 250, others[1]} end
    local doing = rcall('HGET', occPrefix .. others[1], 'state') == 'retrying' and ' waiting to retry' or ' still running'
    local why = 'overlap: ' .. others[1] .. doing .. ' (concurrencyPolicy Forbid)'
    finalize(occKey, 'skipped', why, retentionMs, KEYS[2], key)
    return {'skipped', why}
  elseif policy == 'Replace' then
    for _, other in ipairs(others) do
      if tonumber(rcall('HGET', occPrefix .. other, 'dueMs') or '0') > dueMs then
        if started then
          local why = 'replaced by ' .. other .. ' (concurrencyPolicy Replace)'
          rcall('HSET', occKey, 'error', why)
          finalize(occKey, 'failed', 'replaced', retentionMs, KEYS[2], key)
          return {'failed', 'replaced', why}
        end
        local why = 'superseded: newer ' .. other .. ' is running (concurrencyPolicy Replace)'
        finalize(occKey, 'skipped', why, retentionMs, KEYS[2], key)
        return {'skipped', why}
      end
    end
    -- Older ones: one waiting to retry ends now (failed: replaced); a running one is asked to stop, and its
    -- claimant learns it at its next renewal.
    local running = {}
    for _, other in ipairs(others) do
      local otherKey = occPrefix .. other
      if rcall('HGET', otherKey, 'state') == 'retrying' then
        rcall('HSET', otherKey, 'error', 'replaced by ' .. key .. ' (concurrencyPolicy Replace)')
        finalize(otherKey, 'failed', 'replaced', retentionMs, KEYS[2], other)
        local o = rcall('HMGET', otherKey, 'dueMs', 'fireMs')
        replaced[#replaced + 1] = other; replaced[#replaced + 1] = o[1]; replaced[#replaced + 1] = o[2]
      else
        rcall('HSET', otherKey, 'cancelRequested', key)
        running[#running + 1] = other
      end
    end
    if #running > 0 then return {'held', 100, running[1]} end
  elseif maxConcurrent >= 0 and #others >= maxConcurrent then
    return {'held', 250, others[1]}
  end
end

-- a concurrency group's slot and a rate limit's start, granted atomically with this claim
-- (includes/gates.lua); before the stall count, so a claim the gates hold back counts no stall.
local gateHeld = passGates(readGates(args.gates), occKey, key, fireMs, (state == 'scheduled' and origin == 'schedule') and deadlineMs or -1,
  occPrefix, KEYS[2], retentionMs, lockMs)
if gateHeld then return gateHeld end

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
-- history: which claim this is (a re-claim after a stall or a hand-over, a retry, or the first)
recordAttempt(occKey, token, replica, dueMs, state == 'retrying' and 'retry' or state ~= 'running' and 'first' or rec[4] == '1' and 'handover' or 'stalled')
local firstStart = tonumber(rec[7] or '0')
if firstStart == 0 then
  firstStart = now
  rcall('HSET', occKey, 'firstStartMs', now, 'latenessMs', now - fireMs)
  emitOutcome(occKey, 'started', '')
end
rcall('HSET', occKey, 'state', 'running', 'replica', replica, 'leaseUntil', now + lockMs, 'released', 0, 'startMs', now,
  'activeKey', KEYS[5])
rcall('HDEL', occKey, 'cancelRequested', 'retryAt')
rcall('PEXPIRE', occKey, lockMs + retentionMs)
rcall('ZADD', KEYS[2], now, key)
rcall('ZADD', KEYS[5], now + lockMs, key)
local out = {'claimed', token, attempt, now, firstStart}
for _, v in ipairs(replaced) do out[#out + 1] = v end
return out
