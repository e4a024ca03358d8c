--[[
  plan: record the occurrences a replica computed from the schedules, idempotently, and decide on the Redis
  clock which of them run.

  Any replica may plan any occurrence at any time; the first record wins and later calls change nothing, so
  planning needs no leader and a crash between planning and enqueueing loses nothing (the sweeper re-enqueues
  from `pending`). An occurrence whose due time is older than the horizon is never (re)created: that is what
  keeps a replica that lagged far behind (paused, partitioned) from reviving occurrences whose records have
  already expired, since the horizon is shorter than the record retention.

  What becomes of a new occurrence is decided here, on `TIME`, never on the offering replica's estimate of it
  (a host clock stepped by an hour must not make an hour of occurrences "overdue"). Rules (Kubernetes CronJob
  semantics, made explicit and recorded instead of dropped), per schedule:
  - a final state the definition fixed (a calendar or a blackout: runner/engine/windows.ts): recorded as given;
  - suspended in the schedule file: recorded `skipped: suspended`;
  - its starting deadline passed (`fire + startingDeadline < now`, from the ORIGINAL fire time of an occurrence a
    delay window moved): `missed: starting deadline exceeded`;
  - overdue, i.e. more than the catch-up grace after its fire time (the whole flock, or Redis, was away): the
    catch-up policy keeps the newest `keep` overdue occurrences of the offer (`none`: 0, `latest`: 1, `all`:
    maxCatchUpRuns), which run late with the reason `catch-up: run late (catchUp …)`; the others are `missed`
    with the policy's reason. Fire times grow with due times (a jitter window is shorter than the gap to the
    next due time), so an overdue occurrence is dropped exactly when the occurrence `keep` places later in the
    offer is overdue too: the caller passes that one's fire time (`keepFireMs`), which makes every row
    decidable on its own, whichever chunk of a long offer it travels in;
  - otherwise: recorded `scheduled`, to run.
  The note of a delayed occurrence (`delayed: blackout … until …`) stays in its reason: alone when it runs on
  time, after the catch-up reason (`catch-up: run late (catchUp latest); delayed: …`) or inside the deadline's
  (`starting deadline exceeded (delayed: …)`). Catch-up is judged on the (delayed) fire time, when it may run.

  Last, the call writes the caller's plan mark (`marks[replica] = mark`). Redis loses writes only as a suffix (a
  crash with `appendfsync everysec`, a failover to a replica that lagged), so a surviving mark proves that every
  earlier plan call of that replica survived too: the planner re-offers only the calls after it.

  KEYS[1] pending (ZSET)
  KEYS[2] watermarks (HASH)
  KEYS[3] schedules (SET)
  KEYS[4] plan marks (HASH)
  ARGV[1] packed:
    occPrefix        run-record key prefix
    runsPrefix       run-index key prefix
    activePrefix     active-set key prefix (once a minute per schedule, entries that outlived their record are
                     dropped from its active set: the claim does it only for schedules whose policy walks the set)
    horizonMs        an occurrence older than this is not created
    retentionMs      how long records live
    replica          the caller
    mark             its plan mark ('' for none)
    catchUpGraceMs   later than this after its fire time, an occurrence is overdue
    offers           per schedule: {schedule, suspend (boolean), startingDeadlineMs (-1: none), catchUp (none |
                     latest | all), maxCatchUpRuns, rows}, rows in due-time order, each {dueMs, fireMs,
                     occurrence key, keepFireMs (-1: no occurrence `keep` places later in the offer), fixed
                     state ('' | missed | skipped), note (the fixed state's reason, or a delay's, or ''),
                     deadlineFromMs (the fire time the starting deadline counts from), batchJob (the live-lane batch
                     job the caller adds it to if it runs on time: written to the record's `bj`, so the enqueue
                     writes nothing per occurrence; '' or absent: none)}
  Returns: for each occurrence created scheduled (to enqueue): key, reason ('' on time, the catch-up reason for
    a catch-up run: it goes to the backlog lane), then '|', then for each key created in a final state: key,
    state (missed | skipped), reason.
]]
-- @include "includes/record.lua"

local args = cmsgpack.unpack(ARGV[1])
local occPrefix, runsPrefix, activePrefix = args.occPrefix, args.runsPrefix, args.activePrefix
local horizonMs, retentionMs, replica = args.horizonMs, args.retentionMs, args.replica
local graceMs = args.catchUpGraceMs
local toEnqueue = {}
local finals = {}
local latest = {}
local created = {} -- schedules with a record created by this call
for _, offer in ipairs(args.offers) do
  local schedule, suspend, deadlineMs = offer.schedule, offer.suspend, offer.startingDeadlineMs
  local catchUp, maxCatchUpRuns = offer.catchUp, offer.maxCatchUpRuns
  local dropWhy = 'catch-up: superseded by a later overdue occurrence'
  if catchUp == 'none' then dropWhy = 'catch-up: none (overdue when planned)'
  elseif catchUp == 'all' then dropWhy = 'catch-up: more than maxCatchUpRuns (' .. maxCatchUpRuns .. ') overdue' end
  for _, row in ipairs(offer.rows) do
    local dueMs, fireMs, key, keepFireMs = row[1], row[2], row[3], row[4]
    local fixed, note, deadlineFromMs, batchJob = row[5], row[6], row[7], row[8] or ''
    local occKey = occPrefix .. key
    if now - dueMs <= horizonMs and rcall('EXISTS', occKey) == 0 then
      local state, reason = 'scheduled', note
      local after = ''
      if note ~= '' then after = '; ' .. note end
      if fixed ~= '' then
        state = fixed
      elseif suspend then
        state, reason = 'skipped', 'suspended'
      elseif deadlineMs >= 0 and deadlineFromMs + deadlineMs < now then
        state, reason = 'missed', 'starting deadline exceeded'
        if note ~= '' then reason = reason .. ' (' .. note .. ')' end
      elseif fireMs + graceMs < now then
        if keepFireMs >= 0 and keepFireMs + graceMs < now then
          state, reason = 'missed', dropWhy .. after
        else
          reason = 'catch-up: run late (catchUp ' .. catchUp .. ')' .. after
          batchJob = '' -- a catch-up run goes to the backlog lane, one job each (engine/enqueue.ts laneOf)
        end
      end
      -- the schedules SET gets the schedule below, once per schedule and minute, not per record
      createRecord(occKey, runsPrefix .. schedule, false, schedule, key, dueMs, fireMs, 'schedule', state, reason, replica, retentionMs,
        (state == 'scheduled' and batchJob ~= '') and batchJob or nil)
      created[schedule] = true
      if state == 'scheduled' then
        rcall('ZADD', KEYS[1], fireMs, key)
        toEnqueue[#toEnqueue + 1] = key; toEnqueue[#toEnqueue + 1] = reason
      else
        finals[#finals + 1] = key; finals[#finals + 1] = state; finals[#finals + 1] = reason
      end
    end
    if not latest[schedule] or latest[schedule] < dueMs then latest[schedule] = dueMs end
  end
end
for schedule, dueMs in pairs(latest) do
  local wm = tonumber(rcall('HGET', KEYS[2], schedule) or '0')
  if wm < dueMs then
    rcall('HSET', KEYS[2], schedule, dueMs)
    -- Forget index entries whose records have expired, and active-set entries that outlived their record (an
    -- open record expires lock + retention after its last lease): once a minute of due times per schedule is
    -- enough. The schedule joins the schedules SET (it never leaves it) then too: at its first plan, and again
    -- each minute, so a schedule whose first planned records came after a plan call that created none is
    -- listed within a minute.
    if math.floor(wm / 60000) ~= math.floor(dueMs / 60000) then
      rcall('ZREMRANGEBYSCORE', runsPrefix .. schedule, '-inf', now - retentionMs - horizonMs)
      rcall('ZREMRANGEBYSCORE', activePrefix .. schedule, '-inf', now - retentionMs)
      if created[schedule] then rcall('SADD', KEYS[3], schedule) end
    end
  end
end
if args.mark ~= '' then rcall('HSET', KEYS[4], replica, args.mark) end
toEnqueue[#toEnqueue + 1] = '|'
for _, v in ipairs(finals) do toEnqueue[#toEnqueue + 1] = v end
return toEnqueue
