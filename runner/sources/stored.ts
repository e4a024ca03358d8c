/**
 * The third source of a replica's schedules: the stored schedules (runner/store/), read in full at start and
 * then followed through the change stream, incrementally.
 *
 * - At start: the id of the stream's latest entry is read first, then every stored schedule (so a change made
 *   while reading is seen again, never lost).
 * - Then the stream is followed with XREAD BLOCK on a connection of its own: only the names it carries are read
 *   again (their versions decide: an older version than the one applied changes nothing), and only those
 *   schedules change on the replica (engine/replica.ts `applyChanges`: a changed one applies from its next due
 *   time, a removed one stops after its running occurrence).
 * - A trimmed stream (the reader fell further behind than the stream keeps) falls back to a full read, applied
 *   as the difference from what runs.
 * - A stored name that a schedule file or Schedule owns (runner/store/ownership.ts) is refused here by name and
 *   logged: the older owner keeps it (the store refuses such names; this covers a clash that got in anyway). It
 *   stays compiled in {@link StoredSchedules.applied} and is listed in {@link StoredSchedules.refused}, so that
 *   it starts, from its next due time and without another upsert, once the name is free (sources.ts re-checks
 *   the refused names every {@link REFUSED_RECHECK_MS}).
 * - A stored definition this replica cannot compile (e.g. a job kind it does not know yet: an older replica in a
 *   rollout) is logged and left out; the replicas that know it run it.
 */
import { redisFailure } from '../redis/outage.js';
import type { CompiledSchedule } from '../config/load.js';
import type { Logger } from '../log.js';
import { checkDefinition } from '../store/definition.js';
import { ScheduleStore, type StoredSchedule } from '../store/store.js';
import { ownedElsewhere, ownerText, type NameOwner } from '../store/ownership.js';
import { connectWorker, type RedisTlsFiles } from '../redis/connect.js';
import { Keyspace } from '../redis/keys.js';
import { Slices } from '../time/slices.js';
import { sleep } from '../time/wait.js';

/** A stored schedule compiled, with its version. */
export interface AppliedStored {
  schedule: CompiledSchedule;
  version: number;
}

/** What {@link StoredSchedules.follow} hands to the replica: compiled upserts and removed names. */
export type StoredChangeHandler = (upserted: CompiledSchedule[], removed: string[]) => Promise<void>;

/** How long one XREAD blocks (ms): bounds how long a stop waits for the follower. */
const BLOCK_MS = 2_000;
/** Changes read per XREAD. */
const BATCH = 1_000;

/** The stored schedules of one replica; see the module docs. */
export class StoredSchedules {
  /**
   * What is compiled now, by name: what runs, and the refused ones ({@link refused}), kept so that they can start
   * once their name is free.
   */
  readonly applied = new Map<string, AppliedStored>();
  /**
   * Stored schedules this replica does not run because another source owns the name (a schedule file or Schedule
   * of this replica or of another one that is live or seen within NAME_HOLD_MS), with that owner. Maintained by
   * {@link load} and by the replica's sources (runner/sources/sources.ts), which re-check them.
   */
  readonly refused = new Map<string, NameOwner>();
  private lastId = '0-0';
  private stopped = false;
  private loop: Promise<void> | undefined;
  /** The highest store version whose change this replica has applied from the stream (0: none yet). */
  appliedVersion = 0;
  /** Full reads after a trimmed stream (for tests and logs). */
  fullReads = 0;
  /** The highest store version this replica has seen (the counter at load, versions read since). */
  private seenVersion = 0;

  constructor(
    /** Reads the store; for {@link load}. */
    private readonly store: ScheduleStore,
    /** The same store on a connection of its own: XREAD BLOCK holds it. */
    private readonly follower: ScheduleStore,
    private readonly log: Logger,
    private readonly opts: { baseDir?: string; replica?: string } = {},
  ) {}
  /** Names this replica refused and recorded as refused (runner/store/store.ts, recordRefusal). */
  private readonly refusedHere = new Set<string>();

  /** Reads every stored schedule (the stream position first). @returns what to run. */
  async load(): Promise<CompiledSchedule[]> {
    this.lastId = await this.store.lastChangeId();
    this.seenVersion = await this.store.currentVersion();
    this.applied.clear();
    this.refused.clear();
    // A page at a time: read, compiled, dropped (all 1,000,000 read definitions were held at once before).
    for await (const page of this.store.pages()) {
      // A stored name a schedule file or Schedule owns (a clash that got into the store anyway: an older replica
      // in a rollout, an owner back after longer than the hold): the older owner keeps it, so it is left out here.
      const owned = await this.ownedElsewhere(page.map((x) => x.name));
      for (const [name, o] of owned) {
        this.log.error({ schedule: name, owner: o.source, ownerReplica: o.replica }, `stored schedule "${name}" refused on this replica: the name is owned by ${ownerText(o)}, which had it first (remove the stored one, or the name from the file, to settle it)`);
        this.refused.set(name, o);
      }
      for (const c of await this.compileAll(page)) this.applied.set(c.schedule.name, c);
    }
    return this.schedules();
  }

  /**
   * Which of `names` a schedule file or Schedule resource owns (runner/store/ownership.ts: published by a replica
   * that is live or was seen within NAME_HOLD_MS). Throws Redis errors.
   */
  ownedElsewhere(names: readonly string[]): Promise<Map<string, NameOwner>> {
    return names.length === 0 ? Promise.resolve(new Map()) : ownedElsewhere(this.store.redis, this.store.keys, names);
  }

  /**
   * Which of `names` the flock runs as stored schedules: published (`{ns}:defs`) with source `store`, with the
   * replica that published it. Throws Redis errors.
   */
  async publishedByStore(names: readonly string[]): Promise<Map<string, string>> {
    const out = new Map<string, string>();
    if (names.length === 0) return out;
    const raw = await this.store.redis.hmget(this.store.keys.definitions, ...names);
    for (const [i, r] of raw.entries()) {
      if (!r) continue;
      const p = JSON.parse(r) as { source?: string; replica?: string };
      if (p.source?.startsWith('store') === true) out.set(names[i]!, p.replica ?? '?');
    }
    return out;
  }

  /** The stored schedules to run now: those applied, less the {@link refused} ones. */
  schedules(): CompiledSchedule[] {
    return [...this.applied.values()].filter((a) => !this.refused.has(a.schedule.name)).map((a) => a.schedule);
  }

  /**
   * Follows the change stream until {@link stop}, handing each batch of changes to `apply` (one batch at a time).
   * Redis errors are logged and retried after a second.
   */
  follow(apply: StoredChangeHandler): void {
    this.loop ??= (async () => {
      while (!this.stopped) {
        try {
          const { changes, trimmed } = await this.follower.changesAfter(this.lastId, { blockMs: BLOCK_MS, count: BATCH });
          if (this.stopped) break;
          if (trimmed) {
            await this.fullRead(apply);
            continue;
          }
          if (changes.length === 0) continue;
          this.lastId = changes[changes.length - 1]!.id;
          const names = [...new Set(changes.map((c) => c.name))];
          const found = new Map((await this.store.getMany(names)).map((s) => [s.name, s]));
          const upserted: StoredSchedule[] = [];
          const removed: string[] = [];
          for (const name of names) {
            const s = found.get(name);
            const have = this.applied.get(name);
            if (!s) {
              if (have) removed.push(name);
            } else if (!have || s.version > have.version) upserted.push(s);
          }
          await this.applyDiff(upserted, removed, apply);
          // When this replica applied which version: how far behind the store it is (the bench's time from an
          // upsert to every replica applying it reads this line).
          this.appliedVersion = Math.max(this.appliedVersion, ...changes.map((c) => c.version));
          this.seenVersion = Math.max(this.seenVersion, this.appliedVersion);
          this.log.info({ upToVersion: this.appliedVersion, changes: changes.length }, 'stored schedule changes applied');
        } catch (err) {
          if (this.stopped) break;
          // In words, as every Redis failure in the log (outage.ts), never the client's internals.
          const f = redisFailure(err);
          this.log.warn(f.fields, `following the stored schedules failed: ${f.text}; retrying`);
          await sleep(1_000);
        }
      }
    })();
  }

  /** Stops following (waits up to one XREAD block). */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.loop;
  }

  /**
   * After a trimmed or vanished stream: reads everything and applies the difference from what runs. When the
   * version counter went back (Redis lost the store: restarted without its data, a flush), versions no longer
   * compare with what runs: the store as it is now is applied whole (what is stored runs as stored, what is not
   * stored stops), and said at error — the schedules the store lost must be written again.
   */
  private async fullRead(apply: StoredChangeHandler): Promise<void> {
    this.fullReads++;
    this.lastId = await this.store.lastChangeId();
    const counter = await this.store.currentVersion();
    const lost = counter < this.seenVersion;
    // Page by page: only the names are kept, and the definitions that differ from what runs.
    const names = new Set<string>();
    const upserted: StoredSchedule[] = [];
    for await (const page of this.store.pages()) {
      for (const s of page) {
        names.add(s.name);
        if (lost || (this.applied.get(s.name)?.version ?? -1) < s.version) upserted.push(s);
      }
    }
    const removed = [...this.applied.keys()].filter((n) => !names.has(n));
    if (lost) {
      this.log.error(
        { versionSeen: this.seenVersion, versionNow: counter, stopped: removed.length, stored: names.size },
        `the schedule store went back from version ${this.seenVersion} to ${counter}: Redis lost it (restarted without its data?); ` +
          `${removed.length} stored schedule(s) this replica ran are no longer stored and stop here; write them again (flock.schedules.upsert, cronflock apply -f) — run Redis with appendonly yes`,
      );
    } else this.log.warn({ after: this.lastId }, 'the stored schedules\' change stream was trimmed past this replica; reading every stored schedule again');
    this.seenVersion = counter;
    this.appliedVersion = Math.min(this.appliedVersion, counter);
    await this.applyDiff(upserted, removed, apply);
  }

  private async applyDiff(upserted: readonly StoredSchedule[], removed: readonly string[], apply: StoredChangeHandler): Promise<void> {
    const compiled = await this.compileAll(upserted);
    // A definition that no longer compiles here stops here (as a removal) rather than running an older version.
    const failed = upserted.filter((s) => !compiled.some((c) => c.schedule.name === s.name) && this.applied.has(s.name)).map((s) => s.name);
    const gone = [...removed, ...failed];
    if (compiled.length === 0 && gone.length === 0) return;
    await apply(compiled.map((c) => c.schedule), gone);
    for (const name of gone) {
      this.applied.delete(name);
      this.refused.delete(name);
    }
    for (const c of compiled) this.applied.set(c.schedule.name, c);
  }

  /** A best-effort write about refusals: never holds the apply up; a failure is logged at debug. */
  private note(p: Promise<void>): void {
    p.catch((err: unknown) => this.log.debug({ err: (err as Error).message }, 'could not record a stored schedule refusal'));
  }

  private async compileAll(list: readonly StoredSchedule[]): Promise<AppliedStored[]> {
    const out: AppliedStored[] = [];
    // In slices: compiling 100,000 definitions takes seconds, during which the planner must still tick (its
    // heartbeat keeps this replica's membership; runner/time/slices.ts).
    const slices = new Slices();
    for (const s of list) {
      await slices.pass();
      const r = await checkDefinition(s.definition, this.opts.baseDir !== undefined ? { baseDir: this.opts.baseDir } : {});
      if (r.ok) {
        out.push({ schedule: r.schedule, version: s.version });
        if (this.refusedHere.delete(s.name) && this.opts.replica) this.note(this.store.clearRefusal(s.name, this.opts.replica));
      } else {
        this.log.error({ schedule: s.name, version: s.version, problems: r.error.problems }, `stored schedule cannot run on this replica: ${r.error.message}`);
        // Recorded for the API: "not yet applied" would be false while live replicas refuse it.
        if (this.opts.replica) {
          this.refusedHere.add(s.name);
          this.note(this.store.recordRefusal(s.name, this.opts.replica, s.version, r.error.message));
        }
      }
    }
    return out;
  }
}

/**
 * Opens the stored schedules of a flock for one replica: two connections (reads; the follower's XREAD BLOCK),
 * which queue commands until Redis answers (a replica may start before Redis), and the first full read.
 * @returns the source and a function that stops following and closes its connections.
 */
export async function openStoredSchedules(p: {
  redisUrl: string;
  redisTls?: RedisTlsFiles;
  namespace: string;
  replica: string;
  log: Logger;
  baseDir?: string;
}): Promise<{ stored: StoredSchedules; close: () => Promise<void> }> {
  const keys = new Keyspace(p.namespace);
  const reads = connectWorker(p.redisUrl, `cronflock:${p.replica}:store`, p.redisTls);
  const follow = connectWorker(p.redisUrl, `cronflock:${p.replica}:store-follow`, p.redisTls);
  for (const c of [reads, follow]) c.on('error', (err: Error) => p.log.debug({ err: err.message }, 'redis connection error (stored schedules)'));
  const opts = p.baseDir !== undefined ? { baseDir: p.baseDir } : {};
  const stored = new StoredSchedules(new ScheduleStore(reads, keys, opts), new ScheduleStore(follow, keys, opts), p.log, { ...opts, replica: p.replica });
  const close = async (): Promise<void> => {
    follow.disconnect(); // ends a blocked XREAD at once
    await stored.stop();
    reads.disconnect();
  };
  try {
    await stored.load();
  } catch (err) {
    await close();
    throw err;
  }
  return { stored, close };
}
