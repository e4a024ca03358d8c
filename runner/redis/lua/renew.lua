--[[
  renew: extend the lease of a live claim (and its place in the schedule's active set). Fails when the fencing
  token changed, the record is no longer running, or the lease already ran out on the Redis clock: a lapsed
  lease is never revived, because another replica may be entitled to re-claim from that instant on.
  Also tells the claimant when a newer occurrence asked it to stop (concurrencyPolicy Replace).

  KEYS[1] run record
  ARGV[1] fencing token
  ARGV[2] lockMs
  ARGV[3] retentionMs
  ARGV[4] occurrence key
  Returns: {leaseUntil (Redis ms), cancelRequestedBy or ''}, or {0, ''} when the claim is lost.
]]
-- @include "includes/record.lua"

local rec = rcall('HMGET', KEYS[1], 'token', 'state', 'leaseUntil', 'activeKey', 'cancelRequested')
if rec[1] ~= ARGV[1] or rec[2] ~= 'running' or tonumber(rec[3] or '0') < now then return {0, ''} end
local untilMs = now + tonumber(ARGV[2])
rcall('HSET', KEYS[1], 'leaseUntil', untilMs)
rcall('PEXPIRE', KEYS[1], tonumber(ARGV[2]) + tonumber(ARGV[3]))
if rec[4] then rcall('ZADD', rec[4], 'XX', untilMs, ARGV[4]) end
return {untilMs, rec[5] or ''}
