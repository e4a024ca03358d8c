--[[
  release: give a claim up on purpose (SIGTERM hand-over, or a claimant that learnt its lease lapsed) so that
  another replica may claim at once instead of waiting for the lease to run out. Not counted as a stall. The
  occurrence has started: it keeps its place in the schedule's active set (scored now + lockMs) until it is
  final, for the replica that takes it up (the concurrency policy treats it as open meanwhile).

  KEYS[1] run record
  ARGV[1] fencing token
  ARGV[2] why
  ARGV[3] occurrence key
  ARGV[4] lockMs
  Returns: 1 when released, 0 when the claim was no longer ours.
]]
-- @include "includes/record.lua"

local rec = rcall('HMGET', KEYS[1], 'token', 'state')
if rec[1] ~= ARGV[1] or rec[2] ~= 'running' then return 0 end
rcall('HSET', KEYS[1], 'leaseUntil', 0, 'released', 1, 'releaseReason', ARGV[2])
rcall('HINCRBY', KEYS[1], 'handovers', 1)
holdPlace(KEYS[1], ARGV[3], now + tonumber(ARGV[4]))
return 1
