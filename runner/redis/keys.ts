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
  /** BullMQ queue name holding the occurrences. */
  readonly queueName = 'occurrences';

  constructor(readonly namespace: string = 'cronflock') {
    if (!/^[A-Za-z0-9._-]{1,64}$/.test(namespace)) {
      throw new Error(`namespace "${namespace}" must be 1–64 characters of letters, digits, '.', '_' or '-'`);
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
  /** BullMQ job id of an occurrence (BullMQ ids may not contain ':', so the due time is in epoch ms). */
  jobId(schedule: string, dueMs: number): string {
    return `${schedule}@${dueMs}`;
  }
}
