--[[
  finish: record the results of attempts, each only while its claim is live: the token is current and the lease
  has not lapsed on the Redis clock (fencing). A stale claimant's completion is refused and counted in the
  record's `refused` field; a lapsed-but-not-yet-taken-over claim is refused too, so the occurrence is claimed
  again rather than finished by a claimant that may have been presumed dead.

  A failure with retries left becomes `retrying` (an open state) until `retryAt`: the delay is
  min(retryBackoffMax, retryBackoff * 2^(failures-1)) scaled by a jitter factor in [0.5, 1). The occurrence has
  started, so it keeps its place in the schedule's active set (scored retryAt + lockMs) until it is final: the
  concurrency policy sees it between attempts, however late its retry is taken up, and it ends succeeded or
  failed, never skipped or missed.

  Several attempts per call, each decided on its own (includes/finish-one.lua): a replica's finishes that come
  together (runner/redis/store.ts, a Coalescer) share one round trip and one script set-up.

  KEYS[1] pending (ZSET)
  KEYS[2] last success per schedule (HASH, Redis ms)
  ARGV[1] packed:
    occPrefix   run-record key prefix (the record of an item is occPrefix .. its key)
    items       one map per attempt: token (the claim's fencing token), state (succeeded | failed | skipped),
                reason, error, result (JSON; '' for none each), retentionMs (how long a final record lives),
                key (the occurrence key), retries (allowed), retryBackoffMs (first retry delay),
                retryBackoffMaxMs (longest), jitter (u in [0, 1)), lockMs (a retrying run's active-set score
                is retryAt + lockMs)
  Returns: one {code, retryAt} per item, in order: {1, 0} recorded final; {2, retryAt} retrying at retryAt (Redis
    ms); {0, 0} refused.
]]
-- @include "includes/finish-one.lua"

local args = cmsgpack.unpack(ARGV[1])
local out = {}
for i, item in ipairs(args.items) do
  out[i] = finishOne(args.occPrefix .. item.key, KEYS[1], KEYS[2], item)
end
return out
