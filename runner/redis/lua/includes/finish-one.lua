--[[
  finishOne(occKey, pendingKey, lastSuccessKey, a): the finish of one attempt (finish.lua's rules; `a` is one of
  its items; a.outboxOn, optional: the schedule's outboxOn as the replica holds it, outbox.lua). Returns {1, 0}
  recorded final; {2, retryAt} retrying; {0, 0} refused (stale or lapsed claim).
  a.inLease = 1: the job's outcome was reached within the lease (the claimant knows it: its signal had not fired);
  then a finish that reaches Redis after the lease's end (an outage, a failover, a pause between the end and the
  call) is still recorded while nobody has claimed the occurrence since — its token is still the record's, so no
  other claimant exists and running the job again would be the duplicate. A finish without it (a late completion
  of an abandoned claim) needs a live lease.
  a.endMs (optional): when the run ended, on the Redis clock as the replica estimates it (engine/executor.ts); the
  record's end is that time bounded to [the attempt's startMs, now], so a finish that reached Redis late (an
  outage) records the run's duration, not the outage's, and a replica's clock error never puts the end before
  the start or after the Redis time of the finish. Absent: now. The schedule's last success takes the same end.
]]
-- @include "record.lua"

local FINISH_FIELDS = {'token', 'leaseUntil', 'startMs'}
local function finishOne(occKey, pendingKey, lastSuccessKey, a)
  -- One read of the record for the whole finish: the claim's fields, and what finalize needs (FINAL_FIELDS).
  local r, rec = readFinalFields(occKey, FINISH_FIELDS)
  if rec[1] ~= tostring(a.token) or r.state ~= 'running' or (tonumber(rec[2] or '0') < now and a.inLease ~= 1) then
    if r.state then rcall('HINCRBY', occKey, 'refused', 1) end
    return {0, 0}
  end
  if a.error ~= '' and a.result ~= '' then rcall('HSET', occKey, 'error', a.error, 'result', a.result)
  elseif a.error ~= '' then rcall('HSET', occKey, 'error', a.error)
  elseif a.result ~= '' then rcall('HSET', occKey, 'result', a.result) end
  if a.error ~= '' then r.error = a.error end
  if a.result ~= '' then r.result = a.result end
  if a.state == 'failed' then
    local failures = rcall('HINCRBY', occKey, 'failures', 1)
    if failures <= a.retries then
      local base = math.min(a.retryBackoffMaxMs, a.retryBackoffMs * 2 ^ (failures - 1))
      local retryAt = now + math.floor(base * (0.5 + a.jitter / 2))
      rcall('HSET', occKey, 'state', 'retrying', 'retryAt', retryAt, 'released', 1, 'leaseUntil', 0, 'reason', a.reason)
      holdPlace(occKey, a.key, retryAt + a.lockMs, r.activeKey or false)
      rcall('ZADD', pendingKey, retryAt, a.key)
      return {2, retryAt}
    end
  end
  local endMs = now
  if a.endMs then endMs = math.max(tonumber(rec[3] or '0') or 0, math.min(tonumber(a.endMs), now)) end
  local schedule = finalize(occKey, a.state, a.reason, a.retentionMs, pendingKey, a.key, r, a.outboxOn, endMs)
  -- The last success is the run's end as recorded (the runs and the metrics agree), never moved back: a success
  -- whose finish arrives after a later one's (runs that overlap, a finish held across an outage) keeps the later.
  if a.state == 'succeeded' and schedule then
    if endMs >= now or endMs > (tonumber(rcall('HGET', lastSuccessKey, schedule) or '0') or 0) then rcall('HSET', lastSuccessKey, schedule, endMs) end
  end
  return {1, 0}
end
