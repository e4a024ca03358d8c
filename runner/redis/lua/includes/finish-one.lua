--[[
  finishOne(occKey, pendingKey, lastSuccessKey, a): the finish of one attempt (finish.lua's rules; `a` is one of
  its items). Returns {1, 0} recorded final; {2, retryAt} retrying; {0, 0} refused (stale or lapsed claim).
]]
-- @include "record.lua"

local function finishOne(occKey, pendingKey, lastSuccessKey, a)
  local rec = rcall('HMGET', occKey, 'token', 'state', 'leaseUntil')
  if rec[1] ~= tostring(a.token) or rec[2] ~= 'running' or tonumber(rec[3] or '0') < now then
    if rcall('EXISTS', occKey) == 1 then rcall('HINCRBY', occKey, 'refused', 1) end
    return {0, 0}
  end
  if a.error ~= '' and a.result ~= '' then rcall('HSET', occKey, 'error', a.error, 'result', a.result)
  elseif a.error ~= '' then rcall('HSET', occKey, 'error', a.error)
  elseif a.result ~= '' then rcall('HSET', occKey, 'result', a.result) end
  if a.state == 'failed' then
    local failures = rcall('HINCRBY', occKey, 'failures', 1)
    if failures <= a.retries then
      local base = math.min(a.retryBackoffMaxMs, a.retryBackoffMs * 2 ^ (failures - 1))
      local retryAt = now + math.floor(base * (0.5 + a.jitter / 2))
      rcall('HSET', occKey, 'state', 'retrying', 'retryAt', retryAt, 'released', 1, 'leaseUntil', 0, 'reason', a.reason)
      holdPlace(occKey, a.key, retryAt + a.lockMs)
      rcall('ZADD', pendingKey, retryAt, a.key)
      return {2, retryAt}
    end
  end
  local schedule = finalize(occKey, a.state, a.reason, a.retentionMs, pendingKey, a.key)
  if a.state == 'succeeded' and schedule then rcall('HSET', lastSuccessKey, schedule, now) end
  return {1, 0}
end
