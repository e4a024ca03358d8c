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

  Several occurrences per call, each claimed on its own (includes/claim-one.lua) on the call's one reading of the
  Redis clock: a replica's claims that come together (runner/redis/store.ts, a Coalescer) share one round trip
  and one script set-up. Keys of an occurrence's own schedule travel in its item (same hash tag, same slot).

  KEYS[1] pending (ZSET)
  KEYS[2] schedules (SET)
  KEYS[3] suspended schedules (HASH)
  ARGV[1] packed:
    items   one map per occurrence: occKey (its run record), runsKey (its schedule's run index, ZSET),
            activeKey (its schedule's active set, ZSET), backfillKey (its schedule's backfill queue, ZSET), and
            replica (the claimant), lockMs (the lease), horizonMs (an unknown occurrence older than this is not
            created: stale), retentionMs (how long the record lives after its fire time, or once final),
            schedule, dueMs, fireMs, key (the occurrence key), startingDeadlineMs (-1: none),
            earlyToleranceMs (how long before the fire time a claim is accepted), catchUpGraceMs (an unknown
            scheduled occurrence later than this after its fire time is 'lost'; -1: never), maxStalls (stalls after which
            the occurrence fails: stalled-out), origin (schedule | manual | backfill | resume),
            concurrencyPolicy (Allow | Forbid | Replace), maxConcurrent (-1: no limit), gates (the concurrency
            group and rate limits the claim must pass, includes/gates.lua: a list of maps; empty: none)
  Returns: one answer per item, in order, each one of:
    {'claimed', token, attempt, nowMs, firstStartMs, [key, dueMs, fireMs]...}   the caller holds the claim until
                                  leaseUntil; the triples are older occurrences it ended failed: replaced
                                  (waiting to retry, handed over or stalled)
    {'early', waitMs}             the fire time (or retry time) has not come on the Redis clock
    {'held', waitMs, who}         another claimant's lease is live, or the concurrency policy, a group or a
                                  rate limit says wait (who: the gate's label, e.g. "group cluster-prod")
    {'final', state}              already finished: nothing to do
    {'stale'}                     older than the horizon and unknown: a revived duplicate, run nothing
    {'plan-lost'}                 a scheduled occurrence without a record past the catch-up grace: Redis lost
                                  its plan; run nothing, the re-plan decides (catch-up policy)
    {'missed', reason}            recorded missed: it can no longer start within its starting deadline (the
                                  reason names the group or rate limit it waited for, if any)
    {'skipped', reason}           recorded skipped: suspended, overlap (Forbid) or superseded (Replace)
    {'paused'}                    a backfill occurrence of a suspended schedule: back to waiting, unrun
    {'failed', reason, error}     recorded failed: it had started, and a newer occurrence replaces it (Replace)
    {'stalled-out'}               recorded failed: it stalled more than maxStalls times
]]
-- @include "includes/claim-one.lua"

local args = cmsgpack.unpack(ARGV[1])
local out = {}
for i, it in ipairs(args.items) do
  out[i] = claimOne(it.occKey, KEYS[1], it.runsKey, KEYS[2], it.activeKey, KEYS[3], it.backfillKey, it)
end
return out
