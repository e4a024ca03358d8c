--[[
  claimOne(occKey, pendingKey, runsKey, schedulesKey, activeKey, suspendedKey, backfillKey, a): the claim of one
  occurrence, by claim.lua's rules (its header says them, and what is returned); `a` is one of its items.
  Shared by every claim of a call: each decided on its own, on the call's one Redis clock reading.
]]
-- @include "record.lua"
-- @include "gates.lua"

local function claimOne(occKey, pendingKey, runsKey, schedulesKey, activeKey, suspendedKey, backfillKey, a)
  local replica, lockMs, horizonMs, retentionMs = a.replica, a.lockMs, a.horizonMs, a.retentionMs
  local schedule, dueMs, fireMs, key = a.schedule, a.dueMs, a.fireMs, a.key
  local deadlineMs, earlyMs, maxStalls, origin = a.startingDeadlineMs, a.earlyToleranceMs, a.maxStalls, a.origin
  local policy, maxConcurrent = a.concurrencyPolicy, a.maxConcurrent
  local occPrefix = string.sub(occKey, 1, #occKey - #key)

  -- One read of every field the claim needs (a record always has a state: none means no record).
  local FIELDS = {'state', 'leaseUntil', 'replica', 'released', 'stalls', 'attempt', 'firstStartMs', 'retryAt', 'origin', 'token', 'cancelRequested', 'att'}
  local rec = rcall('HMGET', occKey, unpack(FIELDS))
  if not rec[1] then
    if now - dueMs > horizonMs then return {'stale'} end
    -- A scheduled occurrence's record is written when it is planned (plan.lua), so a missing one within the
    -- horizon was lost with Redis's last writes (a restart from an older AOF, a failover to a lagging replica).
    -- Past the catch-up grace, whether it runs late is the catch-up policy's decision over every overdue due
    -- time of its schedule together, which the planner's re-plan of what Redis lost makes (plan.lua): a delivery
    -- that outlived the loss (a batch held in a replica's memory) must not run it on its own.
    local graceMs = a.catchUpGraceMs or -1
    if origin == 'schedule' and graceMs >= 0 and now > fireMs + graceMs then return {'plan-lost'} end
    createRecord(occKey, runsKey, schedulesKey, schedule, key, dueMs, fireMs, origin, 'scheduled', '', replica, retentionMs)
    rcall('ZADD', pendingKey, fireMs, key)
    rec = rcall('HMGET', occKey, unpack(FIELDS))
  end
  local state, leaseUntil, holder = rec[1], tonumber(rec[2] or '0'), rec[3]
  origin = rec[9] or origin
  if isFinal(state) then return {'final', state} end
  if now < fireMs - earlyMs then return {'early', fireMs - now} end
  if state == 'running' and leaseUntil > now then return {'held', leaseUntil - now, holder or ''} end
  if state == 'retrying' and now < tonumber(rec[8] or '0') then return {'early', tonumber(rec[8]) - now} end

  -- Whoever closes an occurrence without running it, or was last held back from it, is named in its record:
  -- before each return below that leaves it unclaimed (the claim's own HSET names the claimant).
  local named = state ~= 'scheduled'
  local function name()
    if not named then rcall('HSET', occKey, 'replica', replica); named = true end
  end
  if state == 'scheduled' and origin == 'schedule' then
    local suspended = rcall('HGET', suspendedKey, schedule)
    if suspended then
      name()
      finalize(occKey, 'skipped', 'suspended', retentionMs, pendingKey, key)
      return {'skipped', 'suspended'}
    end
    if deadlineMs >= 0 and now > fireMs + deadlineMs then
      local why = 'starting deadline exceeded'
      -- the reason names the group or rate limit it waited for (includes/gates.lua)
      local w = rcall('HMGET', occKey, 'waitingFor', 'waitSince')
      if w[1] then why = why .. ': waited for ' .. w[1] .. ' ' .. string.format('%.1f s', (now - tonumber(w[2] or now)) / 1000) end
      name()
      finalize(occKey, 'missed', why, retentionMs, pendingKey, key)
      return {'missed', why}
    end
  end
  if state == 'scheduled' and origin == 'backfill' and rcall('HEXISTS', suspendedKey, schedule) == 1 then
    -- Paused: admission leaves it waiting until the schedule is resumed.
    name()
    rcall('HSET', occKey, 'admitted', 0)
    rcall('PERSIST', occKey)
    rcall('ZREM', pendingKey, key)
    rcall('ZADD', backfillKey, dueMs, key)
    return {'paused'}
  end

  -- Concurrency policy: who else of this schedule has started and is not final, on any replica? An occurrence
  -- keeps its place from its first claim until it is final, whether an attempt of it runs now or not (waiting to
  -- retry, handed over, or stalled with its lease lapsed: it is claimed again or fails stalled-out). An occurrence
  -- that has started keeps its place too: the policy may make it wait, or end it replaced, but never records it
  -- skipped. A started one waits only for those ahead of it (a live lease, or an earlier due time), so open
  -- occurrences none of which runs never wait for each other: the earliest goes first.
  local started = rec[7] ~= false -- firstStartMs: an attempt was claimed (hasStarted, without a second read)
  local replaced = {}
  if policy ~= 'Allow' or maxConcurrent >= 0 then
    -- entries this old have outlived their record (an open record expires lock + retention after its last
    -- lease); under Allow without a limit nobody walks the set, and plan.lua drops them once a minute
    rcall('ZREMRANGEBYSCORE', activeKey, '-inf', now - retentionMs)
    name()
    local peers = activePeers(activeKey, key, occPrefix)
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
        finalize(occKey, 'skipped', why, retentionMs, pendingKey, key)
        return {'skipped', why}
      end
    elseif policy == 'Replace' then
      for _, p in ipairs(peers) do
        if p.dueMs > dueMs then
          if started then
            local why = 'replaced by ' .. p.key .. ' (concurrencyPolicy Replace)'
            rcall('HSET', occKey, 'error', why)
            finalize(occKey, 'failed', 'replaced', retentionMs, pendingKey, key)
            return {'failed', 'replaced', why}
          end
          local why = 'superseded: newer ' .. p.key .. ' is running (concurrencyPolicy Replace)'
          finalize(occKey, 'skipped', why, retentionMs, pendingKey, key)
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
          finalize(otherKey, 'failed', 'replaced', retentionMs, pendingKey, p.key)
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
  if #a.gates > 0 then name() end
  local gateHeld = passGates(readGates(a.gates), occKey, key, fireMs, (state == 'scheduled' and origin == 'schedule') and deadlineMs or -1,
    occPrefix, pendingKey, retentionMs, lockMs)
  if gateHeld then return gateHeld end

  if state == 'running' and rec[4] ~= '1' then
    -- The previous claimant's lease ran out without a release: it stalled (killed, stopped, partitioned).
    local stalls = rcall('HINCRBY', occKey, 'stalls', 1)
    if stalls > maxStalls then
      finalize(occKey, 'failed', 'stalled ' .. stalls .. ' times (stall limit ' .. maxStalls .. ')', retentionMs, pendingKey, key)
      return {'stalled-out'}
    end
  end
  -- Token and attempt read above and written in the one HSET below (the script is atomic: same as HINCRBY).
  local token = tonumber(rec[10] or '0') + 1
  local attempt = tonumber(rec[6] or '0') + 1
  -- history: which claim this is (a re-claim after a stall or a hand-over, a retry, or the first)
  local att = attemptsWith(rec[12] or nil, token, replica, dueMs, state == 'retrying' and 'retry' or state ~= 'running' and 'first' or rec[4] == '1' and 'handover' or 'stalled')
  local firstStart = tonumber(rec[7] or '0')
  if firstStart == 0 then
    firstStart = now
    rcall('HSET', occKey, 'token', token, 'attempt', attempt, 'state', 'running', 'replica', replica, 'leaseUntil', now + lockMs,
      'released', 0, 'startMs', now, 'activeKey', activeKey, 'firstStartMs', now, 'latenessMs', now - fireMs, 'att', att)
    emitOutcome(occKey, 'started', '', schedule, a.outboxOn)
  else
    rcall('HSET', occKey, 'token', token, 'attempt', attempt, 'state', 'running', 'replica', replica, 'leaseUntil', now + lockMs,
      'released', 0, 'startMs', now, 'activeKey', activeKey, 'att', att)
  end
  if rec[11] or rec[8] then rcall('HDEL', occKey, 'cancelRequested', 'retryAt') end
  rcall('PEXPIRE', occKey, lockMs + retentionMs)
  rcall('ZADD', pendingKey, now, key)
  rcall('ZADD', activeKey, now + lockMs, key)
  local out = {'claimed', token, attempt, now, firstStart}
  for _, v in ipairs(replaced) do out[#out + 1] = v end
  return out
end
