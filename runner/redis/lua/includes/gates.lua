--[[
  Gates: concurrency groups and rate limits across the flock (issue 17, points 3 and 4), decided inside the
  claim script (claim.lua includes this file and calls `passGates` just before it takes the claim), so a
  slot or a start is granted in the same atomic step as the claim, on the Redis clock.

  A gate is one of:
  - a concurrency group (`group: cluster-prod`, `groups: {cluster-prod: {maxConcurrent: 2}}`): its holders are a
    SET of occurrence keys. A holder counts while its run record is `running` with a live lease
    (`leaseUntil` > now): the slot of a claimant that died frees exactly when its lease lapses, of one that
    finished, handed over or waits to retry at once. There is no separate TTL to keep in step with the lease.
  - a rate limit (`rateLimit: {max, per}`, of a schedule or of a group): a ZSET of the start times (Redis ms) of
    the last window. A start is granted while fewer than `max` starts lie in (now − per, now], so any window of
    length `per` holds at most `max` starts (a sliding window: bursts up to `max`, never more).

  Waiting keeps its order: each gate has a waiting ZSET (score: fire time, member: occurrence key). A claim that
  a gate refuses adds its occurrence to the waiting set of each of its gates and returns `held`; a gate with `f`
  free slots (or starts) admits only the first `f` live waiters by fire time, so a later occurrence never takes
  the place of an earlier one. A waiter is live while its record is open and its delivery asked within the
  lease length (`<waiting>:seen`, HASH key → Redis ms): the waiter of a replica that died is passed over, not
  waited for. A waiter that has not started and is past its starting deadline is recorded missed, with the
  gate it waited for in the reason, by whichever claim walks past it; its own delivery then finds it final.

  Run-record fields written here: waitingFor (label of the gate that held it last), waitSince (Redis ms of the
  first refusal), startBy (fire time + starting deadline, Redis ms; absent: none), and on admission waited
  ("group cluster-prod 1.2 s" / "rate limit … 0.4 s": the lateness a gate caused, shown in the run record).

  Arguments: the claim's packed `gates`, a list of one map per gate: label ("group <name>" | "rate limit
  <schedule>"), waiting (key of the ZSET), holders (key of the SET, '' for a rate limit only), maxConcurrent
  (-1: none), rate (key of the ZSET, '' for none), rateMax, perMs.
  `passGates` returns nil when every gate admits (and records the slot and the start), else `{'held', waitMs,
  label}`. Keys: built by the Store from its keyspace ({ns}:grp:<group>:… and {ns}:rl:<schedule>:…).
  A waiter held by a concurrency group is told to ask again in 200 ms (gateFree), or sooner when a run of its
  group ends on its replica (the executor wakes it).
]]
-- @include "record.lua"

-- The claim's packed `gates`: a list of {label, waiting, holders, maxConcurrent, rate, rateMax, perMs}.
local function readGates(list)
  local gates = {}
  for _, g in ipairs(list or {}) do
    gates[#gates + 1] = {label = g.label, waiting = g.waiting, holders = g.holders, maxConcurrent = tonumber(g.maxConcurrent),
      rate = g.rate, rateMax = tonumber(g.rateMax), perMs = tonumber(g.perMs)}
  end
  return gates
end

-- Free slots (concurrency) and free starts (rate) of a gate now, how long to wait when there are none, and
-- whether the rate limit is the tighter of the two.
local function gateFree(g, occPrefix)
  local free, waitMs, byRate = 1000000000, 200, false
  if g.holders ~= '' and g.maxConcurrent >= 0 then
    local live = 0
    for _, h in ipairs(rcall('SMEMBERS', g.holders)) do
      local r = rcall('HMGET', occPrefix .. h, 'state', 'leaseUntil')
      if r[1] == 'running' and tonumber(r[2] or '0') > now then live = live + 1 else rcall('SREM', g.holders, h) end
    end
    free = g.maxConcurrent - live
  end
  if g.rate ~= '' then
    rcall('ZREMRANGEBYSCORE', g.rate, '-inf', now - g.perMs)
    local rateFree = g.rateMax - rcall('ZCARD', g.rate)
    -- the rate limit is what holds a waiter back when it leaves no more room than the slots do
    if rateFree <= free then free = rateFree; byRate = true end
    if rateFree <= 0 then
      local oldest = rcall('ZRANGE', g.rate, 0, 0, 'WITHSCORES')
      waitMs = math.max(1, tonumber(oldest[2]) + g.perMs - now + 1)
    end
  end
  return free, waitMs, byRate
end

-- True when key is among the first free live waiters of the gate by fire time. Walks the head of the waiting
-- set: drops waiters that are final or gone, records missed those past their starting deadline, passes over
-- those whose delivery stopped asking.
local function gateAdmits(g, key, free, occPrefix, pendingKey, retentionMs, lockMs)
  if free <= 0 then return false end
  local seenKey = g.waiting .. ':seen'
  local ahead, from = 0, 0
  while from < 500 do
    local batch = rcall('ZRANGE', g.waiting, from, from + 31)
    if #batch == 0 then return false end
    for _, w in ipairs(batch) do
      if w == key then return ahead < free end
      local wKey = occPrefix .. w
      local r = rcall('HMGET', wKey, 'state', 'startBy', 'firstStartMs', 'waitingFor', 'waitSince')
      if not r[1] or isFinal(r[1]) then
        rcall('ZREM', g.waiting, w); rcall('HDEL', seenKey, w)
      elseif r[2] and not r[3] and now > tonumber(r[2]) then
        local why = 'starting deadline exceeded: waited for ' .. (r[4] or g.label) .. ' ' .. string.format('%.1f s', (now - tonumber(r[5] or now)) / 1000)
        finalize(wKey, 'missed', why, retentionMs, pendingKey, w)
        rcall('ZREM', g.waiting, w); rcall('HDEL', seenKey, w)
      else
        from = from + 1
        if tonumber(rcall('HGET', seenKey, w) or '0') > now - lockMs then
          ahead = ahead + 1
          if ahead >= free then return false end
        end
      end
    end
  end
  return false
end

-- Admits the claim through every gate, or records it waiting. nil: admitted (slot and start recorded).
local function passGates(gates, occKey, key, fireMs, deadlineMs, occPrefix, pendingKey, retentionMs, lockMs)
  if #gates == 0 then return nil end
  local refusedBy, waitMs = nil, 0
  for _, g in ipairs(gates) do
    rcall('ZADD', g.waiting, 'NX', fireMs, key)
    rcall('HSET', g.waiting .. ':seen', key, now)
  end
  for _, g in ipairs(gates) do
    local free, w, byRate = gateFree(g, occPrefix)
    if not gateAdmits(g, key, free, occPrefix, pendingKey, retentionMs, lockMs) then
      -- a group refused by its own rate limit says so: "rate limit of group X"
      if not refusedBy then refusedBy = (byRate and string.sub(g.label, 1, 6) == 'group ') and ('rate limit of ' .. g.label) or g.label end
      if w > waitMs then waitMs = w end
    end
  end
  if refusedBy then
    rcall('HSET', occKey, 'waitingFor', refusedBy)
    rcall('HSETNX', occKey, 'waitSince', now)
    if deadlineMs >= 0 then rcall('HSET', occKey, 'startBy', fireMs + deadlineMs) end
    return {'held', waitMs, refusedBy}
  end
  for _, g in ipairs(gates) do
    rcall('ZREM', g.waiting, key); rcall('HDEL', g.waiting .. ':seen', key)
    if g.holders ~= '' and g.maxConcurrent >= 0 then rcall('SADD', g.holders, key) end
    if g.rate ~= '' then rcall('ZADD', g.rate, now, key .. '#' .. now) end
  end
  local w = rcall('HMGET', occKey, 'waitingFor', 'waitSince')
  if w[1] and w[2] then
    rcall('HSET', occKey, 'waited', w[1] .. ' ' .. string.format('%.1f s', (now - tonumber(w[2])) / 1000), 'waitedMs', now - tonumber(w[2]))
    rcall('HDEL', occKey, 'waitingFor', 'waitSince', 'startBy')
  end
  return nil
end
