--[[
  claim: take an occurrence to run it. The one place where "at most one live claimant" and the concurrency
  policy are decided, atomically, on the Redis clock.

  BullMQ delivers an occurrence at least once (a stalled job is delivered again); this script turns delivery
  into at most one live claim per occurrence: a claim is refused while another claimant's lease is live, every
  claim increments the fencing token, and a final record is never claimed again (so a duplicate delivery, or a
  job re-added after BullMQ removed it, runs nothing).

  Concurrency policy (Kubernetes CronJob semantics, across every replica): the schedule's `active` set holds
  the occurrences that have started and are not final, as Kubernetes counts a Job active until it completes or
  fails: those whose lease is live, those waiting to retry or handed over, and those whose claimant stalled
  (lease lapsed: BullMQ's stall check or the sweep delivers them again, and they are claimed again or fail
  stalled-out). They keep their place until they are final (includes/record.lua). The policy decides about
  occurrences that have not started; one that has started keeps its place and ends succeeded or failed, never
  skipped, and waits only for those ahead of it (a live lease, or an earlier due time), so started occurrences
  none of which runs never wait for each other.
  - Forbid: an occurrence that has not started and finds another one open (running, waiting to retry, handed
    over, stalled) is recorded skipped (overlap); a started one (a retry, a re-claim) waits for those ahead.
  - Replace: the newer occurrence asks the older running ones (live lease) to stop (their claimant learns it at
    its next renewal and its AbortSignal fires) and waits until they have stopped or lost their claim; an older
    one that no attempt runs now (waiting to retry, handed over, stalled) is ended at once, failed: replaced.
    An older occurrence that finds a newer one open is recorded skipped (superseded) if it has not started,
    failed: replaced if it has.
  - Allow with maxConcurrent: waits for a free slot (within the starting deadline); an open occurrence keeps its
    slot whether it runs, waits to retry or stalled.
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
                                  (waiting to retry, handed over or stalled)
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

-- Concurrency policy: who else of this schedule has started and is not final, on any replica? An occurrence
-- keeps its place from its first claim until it is final, whether an attempt of it runs now or not (waiting to
-- retry, handed over, or stalled with its lease lapsed: it is claimed again or fails stalled-out). An occurrence
-- that has started keeps its place too: the policy may make it wait, or end it replaced, but never records it
-- skipped. A started one waits only for those ahead of it (a live lease, or an earlier due time), so open
-- occurrences none of which runs never wait for each other: the earliest goes first.
local started = hasStarted(occKey)
-- entries this old have outlived their record (an open record expires lock + retention after its last lease)
rcall('ZREMRANGEBYSCORE', KEYS[5], '-inf', now - retentionMs)
local replaced = {}
if policy ~= 'Allow' or maxConcurrent >= 0 then
  local peers = activePeers(KEYS[5], key, occPrefix)
  local ahead = peers
  if started then
    ahead = {}
    for _, p in ipairs(peers) do
      if p.live or p.dueMs < dueMs or (p.dueMs == dueMs and p.key < key) then ahead[#ahead + 1] = p end
    end
  end
  if origin == 'backfill' and policy ~= 'Allow' then
    if #ahead > 0 then return {'held', 250, ahead[1].key} end
  elseif policy == 'Forbid' then
    if started then
      if #ahead > 0 then return {'held', 250, ahead[1].key} end
    elseif #peers > 0 then
      local why = 'overlap: ' .. peers[1].key .. ' ' .. peerDoing(peers[1]) .. ' (concurrencyPolicy Forbid)'
      finalize(occKey, 'skipped', why, retentionMs, KEYS[2], key)
      return {'skipped', why}
    end
  elseif policy == 'Replace' then
    for _, p in ipairs(peers) do
      if p.dueMs > dueMs then
        if started then
          local why = 'replaced by ' .. p.key .. ' (concurrencyPolicy Replace)'
          rcall('HSET', occKey, 'error', why)
          finalize(occKey, 'failed', 'replaced', retentionMs, KEYS[2], key)
          return {'failed', 'replaced', why}
        end
        local why = 'superseded: newer ' .. p.key .. ' is running (concurrencyPolicy Replace)'
        finalize(occKey, 'skipped', why, retentionMs, KEYS[2], key)
        return {'skipped', why}
      end
    end
    -- Older ones: one that no attempt runs now (waiting to retry, handed over, stalled) ends now (failed:
    -- replaced), as Kubernetes deletes the running Job: there is no claimant to wait for, and a stale one is
    -- fenced (its renewal and its completion are refused). A running one is asked to stop, and its claimant
    -- learns it at its next renewal; this one waits until it has stopped or lost its claim.
    local running = {}
    for _, p in ipairs(peers) do
      local otherKey = occPrefix .. p.key
      if not p.live then
        rcall('HSET', otherKey, 'error', 'replaced by ' .. key .. ' (concurrencyPolicy Replace)')
        finalize(otherKey, 'failed', 'replaced', retentionMs, KEYS[2], p.key)
        local o = rcall('HMGET', otherKey, 'dueMs', 'fireMs')
        replaced[#replaced + 1] = p.key; replaced[#replaced + 1] = o[1]; replaced[#replaced + 1] = o[2]
      else
        rcall('HSET', otherKey, 'cancelRequested', key)
        running[#running + 1] = p.key
      end
    end
    if #running > 0 then return {'held', 100, running[1]} end
  elseif maxConcurrent >= 0 and #ahead > 0 and #ahead >= maxConcurrent then
    return {'held', 250, ahead[1].key}
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
