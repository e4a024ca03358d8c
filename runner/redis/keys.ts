/**
 * Where cronflock keeps its state in Redis.
 *
 * Every key, ours and BullMQ's, starts with the hash tag `{<namespace>}` so that all keys of one flock land in
 * one Redis Cluster slot: our Lua scripts touch several keys at once, and BullMQ's do too. Several flocks (or a
 * sharded deployment) use different namespaces.
 */

/** Key names of one flock. `ns` is the hash-tagged prefix, e.g. `{cronflock}`. */
export class Keyspace {
  /** Hash-tagged prefix, used as BullMQ's `prefix` too. */
  readonly ns: string;
  /** BullMQ queue of the live lane: occurrences the planner plans on time (see runner/engine/enqueue.ts). */
  readonly queueName = 'occurrences';
  /**
   * BullMQ queue of the backlog lane: work asked for after the fact (backfill, triggers, runs after resume,
   * catch-up runs), served by workers of its own so that it never takes a live occurrence's place.
   */
  readonly backlogQueueName = 'backlog';

  constructor(readonly namespace: string = 'cronflock') {
    if (!/^[A-Za-z0-9._-]{1,64}$/.test(namespace)) {
      throw Object.assign(new Error(`namespace "${namespace}" must be 1–64 characters of letters, digits, '.', '_' or '-'`), {
        code: 'NAMESPACE_INVALID',
      });
    }
    this.ns = `{${namespace}}`;
  }

  /** Run record (HASH) of one occurrence. */
  occurrence(occurrenceKey: string): string {
    return `${this.ns}:occ:${occurrenceKey}`;
  }
  /** Prefix of run-record keys; scripts append the occurrence key. */
  get occurrencePrefix(): string {
    return `${this.ns}:occ:`;
  }
  /** ZSET of a schedule's occurrence keys scored by due time (ms): the run history index. */
  runs(schedule: string): string {
    return `${this.ns}:runs:${schedule}`;
  }
  /** Prefix of run-history index keys; scripts append the schedule name. */
  get runsPrefix(): string {
    return `${this.ns}:runs:`;
  }
  /** SET of schedule names that have run records. */
  get schedules(): string {
    return `${this.ns}:schedules`;
  }
  /** ZSET of planned, not yet claimed occurrence keys scored by fire time (ms): what the sweeper re-checks. */
  get pending(): string {
    return `${this.ns}:pending`;
  }
  /** HASH schedule → latest planned due time (ms): where planning resumes. A cache: losing it loses nothing. */
  get watermarks(): string {
    return `${this.ns}:wm`;
  }
  /** HASH replica → its latest plan mark (`<incarnation>:<seq>`): which of its plan calls Redis still has. */
  get planMarks(): string {
    return `${this.ns}:planmarks`;
  }
  /** ZSET of live replicas scored by membership expiry (Redis time, ms): who shares the planning. */
  get replicas(): string {
    return `${this.ns}:replicas`;
  }
  /** HASH replica → digest of the definitions it runs: planning is shared only among replicas that agree. */
  get replicaDigests(): string {
    return `${this.ns}:replicas:digest`;
  }
  /**
   * ZSET replica → its latest heartbeat (Redis time, ms), kept a day after it stopped: how long ago a publisher of
   * a file's or Schedule's names was last seen (names stay owned for NAME_HOLD_MS: runner/store/ownership.ts).
   */
  get replicasSeen(): string {
    return `${this.ns}:replicas:seen`;
  }
  /**
   * ZSET of occurrences handed to one replica (member: the delivery's JSON, score: its fire time, Redis ms): a
   * replica holding an older definition hands a delivery to the publisher of the current one, which takes it at
   * its next heartbeat (runner/engine/handoffs.ts).
   */
  handoffs(replica: string): string {
    return `${this.ns}:handoffs:${replica}`;
  }
  /**
   * HASH replica → what it can run that others may not, space-separated (its registered handlers, `handler:<name>`):
   * where a replica without a handler hands a delivery (runner/engine/handoffs.ts).
   */
  get replicaCapabilities(): string {
    return `${this.ns}:replicas:can`;
  }
  /** HASH replica → what it says about itself for the dashboard (runner/api/replica-info.ts). */
  get replicaInfo(): string {
    return `${this.ns}:replicas:info`;
  }
  /** ZSET of a schedule's claimed occurrences scored by lease end: what the concurrency policy sees. */
  active(schedule: string): string {
    return `${this.activePrefix}${schedule}`;
  }
  /** Prefix of {@link active}: the plan script derives a schedule's active set from it. */
  get activePrefix(): string {
    return `${this.ns}:active:`;
  }
  /**
   * Keys of a gate (redis/lua/includes/gates.lua): `group` a concurrency group's, `schedule` a schedule's own rate
   * limit's. `waiting` ZSET (fire time → occurrence key; `:seen` HASH beside it), `holders` SET of occurrence
   * keys, `rate` ZSET of start times (Redis ms).
   */
  gate(kind: 'group' | 'schedule', name: string): { waiting: string; holders: string; rate: string } {
    const base = `${this.ns}:${kind === 'group' ? 'grp' : 'rl'}:${name}`;
    return { waiting: `${base}:waiting`, holders: `${base}:holders`, rate: `${base}:rate` };
  }
  /** Prefix of concurrency-group keys (`<prefix><group>:waiting` …), for the metrics. */
  get groupPrefix(): string {
    return `${this.ns}:grp:`;
  }
  /**
   * ZSET of a schedule's backfill occurrences waiting for admission, scored by due time (admitted oldest
   * first). Their run records have no expiry while they wait.
   */
  backfillQueue(schedule: string): string {
    return `${this.ns}:bfq:${schedule}`;
  }
  /** Prefix of backfill-queue keys; scripts append the schedule name. */
  get backfillQueuePrefix(): string {
    return `${this.ns}:bfq:`;
  }
  /**
   * ZSET of the schedules with backfill occurrences waiting or admitted, scored by the Redis time (ms) their
   * backfill was first asked for: admission serves them in that order.
   */
  get backfillSchedules(): string {
    return `${this.ns}:bfs`;
  }
  /**
   * ZSET of admitted backfill occurrences not yet final, scored by admission time (Redis ms): what counts
   * against the flock-wide backfill concurrency.
   */
  get backfillAdmitted(): string {
    return `${this.ns}:bfa`;
  }
  /** HASH schedule → JSON {sinceMs, by}: schedules suspended at run time (`cronflock suspend`). */
  get suspended(): string {
    return `${this.ns}:suspended`;
  }
  /** HASH schedule → Redis time (ms) of its latest success, flock-wide (for "time since last success"). */
  get lastSuccess(): string {
    return `${this.ns}:lastok`;
  }
  /**
   * HASH schedule → `<consecutive failures>|<state>|<dueMs>|<endMs>|<reason>`: the latest final state of each
   * schedule, flock-wide (written with every final state: lua/includes/last-result.lua; read by records/last-result.ts).
   */
  get lastResult(): string {
    return `${this.ns}:lastresult`;
  }
  /** HASH schedule → JSON definition: what the replicas run, for `trigger`, `backfill` and operators. */
  get definitions(): string {
    return `${this.ns}:defs`;
  }
  /** STRING: the version of {@link Keyspace.definitions}, bumped on every change (readers re-read on a new one). */
  get definitionsVersion(): string {
    return `${this.ns}:defs:version`;
  }
  /**
   * ZSET schedule → the version of {@link Keyspace.definitionsVersion} its latest publication or withdrawal took:
   * the change log replicas read instead of the whole hash (lua/definitions-changes.lua); capped (the oldest
   * names are dropped, raising the floor in {@link Keyspace.definitionsLog}).
   */
  get definitionsChanges(): string {
    return `${this.ns}:defs:changes`;
  }
  /**
   * HASH `floor` (the highest version dropped from {@link Keyspace.definitionsChanges}: a reader holding an older
   * one reads everything) and `logged` (the version after the latest logged change).
   */
  get definitionsLog(): string {
    return `${this.ns}:defs:changes:state`;
  }
  /**
   * SET of the names whose published definition (in {@link Keyspace.definitions}) says `suspend: true`, kept by the
   * publish-definitions script: `cronflock status` counts them (SCARD) without reading every definition.
   */
  get definitionsSuspended(): string {
    return `${this.ns}:defs:suspended`;
  }
  /**
   * HASH of one stored schedule (runner/store/): `def` (the definition as JSON, as a schedule file's entry),
   * `version` (from {@link Keyspace.storeVersion}), `updatedAtMs` (Redis time), `by` (who wrote it).
   */
  storedSchedule(name: string): string {
    return `${this.ns}:store:s:${name}`;
  }
  /**
   * HASH replica → JSON `{version, reason, atMs}`: why that replica refused this stored schedule (it does not
   * compile there: a module path it cannot find …), written by the replica (runner/sources/stored.ts), dropped
   * by it when it accepts a later version; the key expires {@link STORE_REFUSAL_KEEP_MS} after its last write.
   * Read by the API, which shows only the refusals of the current version by live replicas.
   */
  storeRefusals(name: string): string {
    return `${this.ns}:store:refused:${name}`;
  }
  /** ZSET of the stored schedules' names, all scored 0: listed in name order by prefix and cursor (ZRANGEBYLEX). */
  get storeIndex(): string {
    return `${this.ns}:store:names`;
  }
  /** STRING: the flock's stored-schedule version counter; every upsert and removal takes the next value. */
  get storeVersion(): string {
    return `${this.ns}:store:version`;
  }
  /** STREAM of stored-schedule changes (`name`, `version`, `op` upsert|remove), capped: what replicas follow. */
  get storeChanges(): string {
    return `${this.ns}:store:changes`;
  }
  /** HASH tenant → how many stored schedules it has, kept by the store scripts (the per-tenant limit counts it). */
  get storeTenantCounts(): string {
    return `${this.ns}:store:tenants`;
  }
  /** ZSET of `<tenant>\0<name>` for every stored schedule with a tenant, all scored 0: listing by tenant (ZRANGEBYLEX). */
  get storeTenantIndex(): string {
    return `${this.ns}:store:by-tenant`;
  }
  /**
   * HASH tenant → the most stored schedules it may have; field `*`: every tenant without its own. Absent: no
   * limit. Set by `cronflock tenants set-limit`; read by the upsert script.
   */
  get storeTenantLimits(): string {
    return `${this.ns}:store:tenant-limits`;
  }
  /** HASH owner, token, until (Redis ms) of the flock-wide job lock `name` (runner/redis/job-locks.ts). */
  jobLock(name: string): string {
    return `${this.ns}:joblock:${name}`;
  }
  /** STRING: the fencing counter of job lock `name`; never expires, so a token is never handed out twice. */
  jobFence(name: string): string {
    return `${this.ns}:jobfence:${name}`;
  }
  /** HASH: the fenced checkpoints of `scope` under job lock `name`. */
  jobCheckpoints(name: string, scope: string): string {
    return `${this.ns}:jobckpt:${name}:${scope}`;
  }
  /** BullMQ job id of an occurrence: its key with ':' (not allowed in BullMQ ids) replaced by '-'. */
  jobId(occurrenceKey: string): string {
    return occurrenceKey.replaceAll(':', '-');
  }
}
