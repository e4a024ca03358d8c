/**
 * Which definition of a schedule the flock runs, when replicas briefly hold different versions of the schedule
 * files (a rollout, a ConfigMap update reaching pods at different times, a reload on one replica first).
 *
 * Rule: **the definition loaded last wins.** Each replica publishes, for every schedule it runs, the content
 * hash of its definition and the Redis time it loaded it; a publication replaces an entry only if it is at
 * least as recent. A replica whose definition of a schedule is not the published one neither plans nor runs
 * that schedule's occurrences (it gives deliveries back for a replica that has the winner); when it reloads the
 * same file, it publishes again and takes part. Equal content means equal hashes: replicas that agree never
 * exclude each other. An old replica that is restarted later would publish its older file as the newest: keep
 * rollouts moving forward (Kubernetes does), and do not run different files against one namespace for long.
 *
 * A publication counts only while its publisher is a live member of the flock (the planner's membership): when
 * the replica that published the winning definition goes away (a canary rolled back, a crash), the remaining
 * replicas run their own definitions again and re-publish them, so a schedule never stops because the
 * replica holding its newest definition is gone.
 */
import type { RedisClient } from '../redis/connect.js';
import type { ConcurrencyPolicy, OnResumePolicy } from '../config/schema.js';
import type { Keyspace } from '../redis/keys.js';
import { jobSummary } from '../../jobs/summary.js';
import { outboxOn } from '../notify/events.js';
import { Scripts } from '../redis/script-loader.js';
import type { LiveReplicas } from './ownership.js';
import type { CompiledSchedule } from '../config/load.js';
import { STORE_SOURCE_FILE } from '../store/definition.js';

/** What replicas publish about each schedule they run (HASH `{ns}:defs`). */
export interface PublishedDefinition {
  cron: string;
  timeZone: string;
  jitterMs: number;
  startingDeadlineMs: number | null;
  concurrencyPolicy: ConcurrencyPolicy;
  onResume: OnResumePolicy;
  definitionHash: string;
  replica: string;
  /** Redis time (ms) the publishing replica loaded this definition. */
  loadedAtMs: number;
  /**
   * The outcomes the schedule's notify/heartbeat want in the outbox (space-separated; see runner/notify/events.ts
   * `outboxOn`); absent without either. Read by the engine scripts' `emitOutcome`: publishing it with the
   * definition makes "the definition loaded last wins" hold for notifications too.
   */
  outboxOn?: string;
  // ---- for people (the dashboard and API; runner/api/): not part of the rule above ----
  /** Where it is defined: `file:line`, or `Schedule <namespace>/<name>` for a Schedule resource. */
  source?: string;
  /** The job kind, and a one-line summary of the job with its secrets left out (jobs/summary.ts). */
  jobKind?: string;
  job?: string;
  /**
   * The schedule's timeout and its `overdueGrace` (ms; null: none) and whether its file suspends it: the overdue
   * rule (runner/records/health.ts) needs them.
   */
  timeoutMs?: number | null;
  overdueGraceMs?: number | null;
  suspend?: boolean;
  /** Its tenant and labels (absent: none), to list and filter by. */
  tenant?: string;
  labels?: Record<string, string>;
}

/**
 * The suspension a published definition's own `suspend: true` makes (absent: it does not say so), in the shape of
 * a run-time one (`cronflock suspend`), so that every status (the API, the dashboard, `cronflock status`) shows
 * one truth: suspended by what, and how it ends. A stored schedule's ends with `resume` (it clears the field:
 * control.ts `resume`); a schedule file's or Schedule resource's only there.
 */
export function definitionSuspension(def: Pick<PublishedDefinition, 'suspend' | 'source' | 'loadedAtMs'>): { sinceMs: number; by: string; note: string } | undefined {
  if (def.suspend !== true) return undefined;
  const stored = def.source === undefined || def.source.startsWith('store');
  return stored
    ? { sinceMs: def.loadedAtMs, by: 'its stored definition', note: 'suspend: true (resume clears it)' }
    : { sinceMs: def.loadedAtMs, by: `its definition in ${def.source}`, note: 'suspend: true (set suspend: false there)' };
}

/**
 * Whether a published {@link PublishedDefinition.source} is the store's (a stored schedule: `store…`, see
 * store/definition.ts STORE_SOURCE_FILE); absent (published by an older cronflock) is not.
 */
export function isStoredSource(source: string | undefined): boolean {
  return source !== undefined && source.startsWith(STORE_SOURCE_FILE);
}

/** Where a schedule is defined, as {@link PublishedDefinition.source} says it. */
function sourceOf(s: Pick<CompiledSchedule, 'source'>): string {
  return `${s.source.file}${s.source.line ? `:${s.source.line}` : ''}`;
}

/**
 * Whether `replica` is a live member of the planning membership now, on the Redis clock. One script keyed on
 * the membership set, so that in a Redis Cluster the TIME comes from the node that owns the flock's keys.
 */
export async function isLiveMember(redis: RedisClient, keys: Keyspace, replica: string): Promise<boolean> {
  const live = await Scripts.on(redis).run('is-live-member', [keys.replicas], [replica]);
  return Number(live) === 1;
}

/** Schedules per publish script call. */
const PUBLISH_CHUNK = 1000;
/** Published definitions read per HSCAN page. */
const DEFINITIONS_PAGE = 1000;
/** Changed names read per page of the change log. */
const CHANGES_PAGE = 2000;
/**
 * How many names the change log keeps (the newest changes): a replica further behind than this reads every
 * definition again. A tick behind at 1,000 changes/s is a few thousand names.
 */
export const DEFINITIONS_LOG_KEEP = 50_000;

/**
 * How long (ms) the publisher of a definition that this replica holds too (same hash) must have been missing from
 * the membership before this replica re-publishes it under its own name. 0: at once. Control operations (`suspend`,
 * `trigger`, the API's actions: engine/control.ts) refuse a schedule whose publisher is not a live member, so any
 * grace is a window in which they refuse schedules the flock still runs (seen: 30 s after a SIGKILL); the storm it
 * was meant to prevent (a replica busy loading 100,000 schedules missing its membership TTL, every other replica
 * re-sending its definitions) is prevented by the loading hold instead (planner.ts whileLoading: a long TTL while a
 * large load runs). Kept as a constructor parameter for tests of the mechanism.
 */
export const SAME_DEFINITION_ORPHAN_GRACE_MS = 0;

/**
 * The grace of {@link SAME_DEFINITION_ORPHAN_GRACE_MS} for a stored schedule (flock.schedules.upsert, `apply -f`):
 * its publisher's name is only a label — every replica follows the store, plans a definition it holds with the
 * same hash whoever published it, and control operations accept a stored schedule whose publisher is gone while
 * other replicas are live (engine/control.ts) — so nothing waits on its rename, and a publisher that lapsed for a
 * few seconds (a CPU-starved replica holding 1M stored schedules: seen every minute at load 10 on 2 cores) must not
 * make the others rename its names: each rename is a change every replica reads, and the renames of a lapse fed the
 * next lapse (issue 19, 1M stored schedules at 1,000 changes/s). A replica gone for this long is renamed as before.
 */
export const STORED_ORPHAN_GRACE_MS = 30_000;

/**
 * How many same-definition orphans (a gone publisher's names whose definition this replica holds with the same
 * hash) one refresh re-publishes under this replica's name. Nothing waits on those renames (the definition is
 * current for every replica that holds it, whoever published it; control operations accept a stored schedule
 * whose publisher is gone while other replicas are live): bounded, a replica that lapsed while publishing 1M
 * definitions costs each tick a change-log read of a few thousand names, not a million renames that push every
 * reader past the change log into full reads of the set (seen at 1M stored schedules, 3 replicas: the readers
 * starved, lapsed in turn, and their names were renamed again). Schedule files of up to this many schedules are
 * renamed in one tick, as before.
 */
export const SAME_DEFINITION_RENAMES_PER_REFRESH = 10_000;

/** The published definition of a schedule, as far as the rule needs it. */
interface Winner {
  hash: string;
  replica: string;
  loadedAtMs: number;
}

/** The published definitions as this replica last read them, and the rule above. */
export class Definitions {
  private winners = new Map<string, Winner>();
  /**
   * The distinct publishers among the winners (a handful), with how many winners each: checked each tick instead
   * of every schedule.
   */
  private publishers = new Map<string, number>();
  /** Names whose winner changed since {@link takeChanged} (null: possibly every name: a full read). */
  private touched: Set<string> | null = null;
  /** One string per publisher id, shared by its winners. */
  private readonly interned = new Map<string, string>();
  private version: string | null = null;
  /** The epoch of the published set this view holds (publish-definitions.lua; null: none had been published). */
  private epoch: string | null = null;
  /** Names whose winner was set or withdrawn by the refresh under way (null: all of them, a full read). */
  private seen: Set<string> | null = new Set();
  /**
   * When this replica loaded each of its definitions (Redis ms, as published): a re-publication sends it, so that
   * an older definition re-published after its rival's publisher lapsed, or after Redis lost the set, does not
   * beat a newer one (the rule is the load time, not the publication time).
   */
  private readonly loadedAt = new Map<string, number>();
  /** What this replica published last (re-published when the winner's publisher is gone). */
  private mine = new Map<string, CompiledSchedule>();
  /**
   * Names this replica published (with this hash) that the view has not read back yet ({@link publishChanges}
   * does not wait for a read of the view): counted as this replica's until the next refresh reads them.
   */
  private readonly pending = new Map<string, string>();
  /** Publishers of winners that were not live members at a refresh, since when (performance.now(), ms). */
  private readonly missingSince = new Map<string, number>();
  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keyspace,
    private readonly replica: string,
    /** Who is a live member (the planner's membership view; every publisher counts as live before the first). */
    private readonly live: Pick<LiveReplicas, 'has'>,
    /** How many names the change log keeps ({@link DEFINITIONS_LOG_KEEP}; smaller in tests of the fall-back). */
    private readonly logKeep = DEFINITIONS_LOG_KEEP,
    /**
     * How long the publisher of a definition equal to this replica's must have been gone before this replica
     * names itself the publisher ({@link SAME_DEFINITION_ORPHAN_GRACE_MS}; a rival definition's gone publisher is
     * replaced at once).
     */
    private readonly orphanGraceMs = SAME_DEFINITION_ORPHAN_GRACE_MS,
    /** Same-definition orphans re-published per refresh ({@link SAME_DEFINITION_RENAMES_PER_REFRESH}; smaller in tests). */
    private readonly renamesPerRefresh = SAME_DEFINITION_RENAMES_PER_REFRESH,
    /** The grace for a stored schedule's same definition ({@link STORED_ORPHAN_GRACE_MS}; shorter in tests). */
    private readonly storedOrphanGraceMs = STORED_ORPHAN_GRACE_MS,
  ) {}

  private isLive(replica: string): boolean {
    return this.live.has(replica);
  }

  /**
   * Publishes this replica's definitions (they win: they are the latest loaded) and withdraws the names it no
   * longer runs (only where its own publication is the current one). Then refreshes the view.
   */
  async publish(schedules: readonly CompiledSchedule[], removed: readonly string[] = []): Promise<void> {
    await this.publishOnly(await this.notPublished(schedules), removed);
    this.mine = new Map(schedules.map((s) => [s.name, s]));
    for (const name of [...this.loadedAt.keys()]) if (!this.mine.has(name)) this.loadedAt.delete(name);
    await this.refresh();
    this.noteLoadTimes(schedules);
    // The publish script keeps `{ns}:defs:suspended` with each publication; definitions published before it did
    // (a flock upgraded in place) are not sent again (same hash), so a start or reload adds its suspended current
    // ones here (idempotent; there are few).
    const held = schedules.filter((s) => s.suspend === true && this.isCurrent(s)).map((s) => s.name);
    if (held.length > 0) await this.redis.sadd(this.keys.definitionsSuspended, ...held);
  }

  /** Records the load time of each of `schedules` that the view shows published as this replica has it. */
  private noteLoadTimes(schedules: readonly CompiledSchedule[]): void {
    for (const s of schedules) {
      const w = this.winners.get(s.name);
      if (w !== undefined && w.hash === s.definitionHash) this.loadedAt.set(s.name, w.loadedAtMs);
    }
  }

  /**
   * Of `schedules`, those the flock does not already run as they are: no published definition, another hash, or a
   * publisher that is not a live member in Redis now. The others are not sent: a replica that starts or reloads
   * with the definitions the flock runs (100,000 of them) costs Redis a read of the view, not a script call per
   * schedule. Reads the view first when this replica has none yet. A definition published by someone else after
   * the look is a later load, which wins anyway; a publisher gone after it is the orphan case of {@link refresh}.
   */
  private async notPublished(schedules: readonly CompiledSchedule[]): Promise<CompiledSchedule[]> {
    if (this.version === null) await this.refresh();
    const publishers = new Set<string>();
    for (const s of schedules) {
      const w = this.winners.get(s.name);
      if (w !== undefined && w.hash === s.definitionHash) publishers.add(w.replica);
    }
    const live = new Set<string>();
    for (const r of publishers) if (r === this.replica || (await isLiveMember(this.redis, this.keys, r))) live.add(r);
    return schedules.filter((s) => {
      const w = this.winners.get(s.name);
      return w === undefined || w.hash !== s.definitionHash || !live.has(w.replica);
    });
  }

  /**
   * Publishes changes to some of this replica's definitions (stored schedules' changes): `upserted` win (the
   * latest loaded), `removed` are withdrawn where this replica's publication is the current one; the others
   * are not sent again. Does not read the view back: the next refresh (the planner's tick) does, and until then
   * `upserted` count as published by this replica ({@link pending}). A stored change waited here for a refresh,
   * which at 1M schedules could be a full read of the set, or a re-publication, and the next change behind it.
   */
  async publishChanges(upserted: readonly CompiledSchedule[], removed: readonly string[]): Promise<void> {
    await this.publishOnly(upserted, removed);
    for (const name of removed) {
      this.mine.delete(name);
      this.loadedAt.delete(name);
      this.pending.delete(name);
      // Withdrawn by the script where this replica's publication is the current one.
      if (this.winners.get(name)?.replica === this.replica) this.delete(name);
    }
    for (const s of upserted) {
      this.mine.set(s.name, s);
      this.pending.set(s.name, s.definitionHash);
    }
  }

  /**
   * Sends `schedules` and `removed` to the publish script. `again`: a re-publication, which carries each one's
   * load time (known ones; the others count as loaded now).
   */
  private async publishOnly(schedules: readonly CompiledSchedule[], removed: readonly string[], again = false): Promise<void> {
    // Chunked: a call's arguments are spread into one function call (the stack limits it) and one script run
    // (which blocks Redis while it runs). Each chunk applies the same rule on its own, so chunks compose.
    let args: (string | number)[] = [this.replica, this.logKeep];
    const flush = async (removedNames: readonly string[]): Promise<void> => {
      await Scripts.on(this.redis).run('publish-definitions', this.publishKeys(), [...args, '|', ...removedNames]);
      args = [this.replica, this.logKeep];
    };
    for (const s of schedules) {
      const on = outboxOn(s);
      const def: Omit<PublishedDefinition, 'loadedAtMs'> = {
        cron: s.due.expression,
        timeZone: s.due.timeZone,
        jitterMs: s.jitterMs,
        startingDeadlineMs: s.startingDeadlineMs,
        concurrencyPolicy: s.concurrencyPolicy,
        onResume: s.onResume,
        definitionHash: s.definitionHash,
        replica: this.replica,
        ...(on ? { outboxOn: on } : {}),
        source: sourceOf(s),
        jobKind: s.job.kind,
        job: jobSummary(s.job as { kind: string } & Record<string, unknown>),
        timeoutMs: s.timeoutMs,
        overdueGraceMs: s.overdueGraceMs ?? null,
        suspend: s.suspend,
        ...(s.tenant !== undefined ? { tenant: s.tenant } : {}),
        ...(s.labels !== undefined ? { labels: s.labels } : {}),
      };
      const at = again ? this.loadedAt.get(s.name) : undefined;
      args.push(s.name, JSON.stringify(at === undefined ? def : { ...def, loadedAtMs: at }));
      if (args.length >= 2 * PUBLISH_CHUNK + 2) await flush([]);
    }
    for (let i = 0; i < removed.length; i += PUBLISH_CHUNK) await flush(removed.slice(i, i + PUBLISH_CHUNK));
    if (args.length > 2) await flush([]); // nothing to send: no call
  }

  private publishKeys(): string[] {
    return [this.keys.definitions, this.keys.definitionsVersion, this.keys.definitionsChanges, this.keys.definitionsLog, this.keys.replicas, this.keys.definitionsSuspended];
  }

  /**
   * Brings the view up to date when the version of the published definitions changed (one GET otherwise): reads
   * only the names changed since the version it holds, from the change log (lua/definitions-changes.lua), or
   * everything when it has none yet or the log no longer reaches back to it. Then re-publishes this replica's
   * definitions of schedules whose winning publisher is no longer live.
   * @param full read everything even when the log would do.
   * @returns true when the view changed (read or re-published).
   */
  async refresh(full = false): Promise<boolean> {
    // This replica's publications made before this read are read back by it: they are settled after it.
    const settling = [...this.pending];
    const changed = await this.refreshNow(full);
    const settled: CompiledSchedule[] = [];
    for (const [name, hash] of settling) {
      if (this.pending.get(name) !== hash) continue; // published again meanwhile: the next refresh settles it
      this.pending.delete(name);
      const s = this.mine.get(name);
      if (s !== undefined) settled.push(s);
    }
    this.noteLoadTimes(settled);
    return changed;
  }

  private async refreshNow(full: boolean): Promise<boolean> {
    // One round trip (auto-pipelined): the version, and the epoch of the set.
    const [v, epoch] = await Promise.all([this.redis.get(this.keys.definitionsVersion), this.redis.hget(this.keys.definitionsLog, 'epoch')]);
    // Redis lost the published set, or its latest writes: the epoch changed, or the version went back.
    const lost = this.version !== null && ((this.epoch !== null && epoch !== this.epoch) || Number(v ?? 0) < Number(this.version));
    this.seen = new Set();
    let changed = false;
    if (full || lost || this.version === null) {
      await this.readAll(v);
      changed = true;
    } else if (v !== this.version) {
      changed = await this.readChanges();
    }
    this.epoch = epoch;
    // A definition of this replica that is published by nobody (Redis lost it), or loaded later than the winner
    // (a rival re-published an older one while this replica's membership lapsed): publish it again, with its load
    // time. Only the names this refresh read are looked at (none in the usual case).
    const mine = this.seen === null ? [...this.mine.values()] : [...this.seen].flatMap((n) => this.mine.get(n) ?? []);
    const newer = mine.filter((s) => {
      const w = this.winners.get(s.name);
      return w === undefined || (w.hash !== s.definitionHash && (this.loadedAt.get(s.name) ?? -Infinity) > w.loadedAtMs);
    });
    if (newer.length > 0) {
      await this.publishOnly(newer, [], true);
      await this.refresh();
      this.noteLoadTimes(newer);
      return true;
    }
    // Cheap in the usual case: every publisher is live, so no schedule needs a look (100k schedules, each tick).
    const nowMs = performance.now();
    for (const r of this.missingSince.keys()) if (!this.publishers.has(r) || this.isLive(r)) this.missingSince.delete(r);
    if ([...this.publishers.keys()].every((r) => r === this.replica || this.isLive(r))) return changed;
    let gone = 0;
    for (const [r, n] of this.publishers) {
      if (r === this.replica || this.isLive(r)) continue;
      gone += n;
      if (!this.missingSince.has(r)) this.missingSince.set(r, nowMs);
    }
    // Same-definition orphans: at most SAME_DEFINITION_RENAMES_PER_REFRESH, from a random place among them (so
    // that the replicas left rename different ones), wrapping round to the first ones when fewer follow it.
    const limit = this.renamesPerRefresh;
    const first = gone > limit ? Math.floor(Math.random() * gone) : 0;
    let at = 0;
    const candidates: CompiledSchedule[] = [];
    const before: CompiledSchedule[] = [];
    let renames = 0;
    for (const s of this.mine.values()) {
      const w = this.winners.get(s.name);
      if (w === undefined || w.replica === this.replica || this.isLive(w.replica) || this.pending.has(s.name)) continue;
      // A departed publisher of a rival definition: this replica's own is the one to run, at once. Of this same
      // definition (only its publisher's name is refreshed): nothing depends on it soon, so only once the publisher
      // has been gone for the grace (a replica that missed its membership for a moment, its event loop busy
      // loading, must not make every other replica re-publish every definition it published), and a bounded
      // number per refresh.
      if (w.hash !== s.definitionHash) candidates.push(s);
      else if (nowMs - this.missingSince.get(w.replica)! >= (isStoredSource(s.source.file) ? this.storedOrphanGraceMs : this.orphanGraceMs)) {
        if (at++ < first) {
          if (before.length < limit) before.push(s);
        } else if (renames < limit) {
          candidates.push(s);
          renames++;
        }
      }
    }
    for (const s of before) {
      if (renames++ >= limit) break;
      candidates.push(s);
    }
    const orphaned = candidates.length === 0 ? candidates : await this.stillOrphaned(candidates);
    if (orphaned.length > 0) {
      await this.publishOnly(orphaned, [], true);
      // Read back by the next refresh; this replica's own definitions are current meanwhile (their publisher is
      // gone, or it is this replica).
      for (const s of orphaned) this.pending.set(s.name, s.definitionHash);
      return true;
    }
    return changed;
  }

  /** The refresh the planner's ticks started and may have stopped waiting for ({@link refreshForTick}). */
  private tickRefresh: Promise<void> | undefined;
  /** A refresh started for a tick that ended (true: changed) since a tick last took the changes. */
  private tickRefreshed = false;
  /** A refresh started for a tick that failed after the tick stopped waiting: the next tick throws it. */
  private tickRefreshError: unknown;

  /**
   * The refresh as the planner's tick needs it: starts one (or joins the one a previous tick left running) and
   * waits for it at most `waitMs`; a longer one goes on in the background, the tick plans with the view as it is,
   * and a later tick takes what it changed. Why: the tick also renews the membership, and it waited for the whole
   * refresh first — at 1M stored schedules a change-log read of thousands of names, re-publications, a full read
   * — so a replica whose refresh took longer than the 2 s membership TTL dropped out of the flock, and the others
   * renamed its definitions, which made their own refreshes longer (the 1M change-apply runs of issue 19).
   * Refreshes as quick as usual (one GET) end within the wait: the tick sees them as before.
   * @returns what changed since the previous call: true (anything may have: a full read), the names, or false.
   * @throws the error of a refresh that failed (within the wait, or since the previous call).
   */
  async refreshForTick(waitMs: number): Promise<true | string[] | false> {
    this.tickRefresh ??= this.refresh().then(
      (changed) => {
        this.tickRefreshed ||= changed;
        this.tickRefresh = undefined;
      },
      (err: unknown) => {
        this.tickRefreshError = err;
        this.tickRefresh = undefined;
      },
    );
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.tickRefresh, new Promise<void>((r) => (timer = setTimeout(r, waitMs)))]);
    clearTimeout(timer);
    if (this.tickRefreshError !== undefined) {
      const err = this.tickRefreshError;
      this.tickRefreshError = undefined;
      throw err;
    }
    if (!this.tickRefreshed) return false;
    this.tickRefreshed = false;
    return this.takeChanged();
  }

  /** Waits for a refresh a tick left running (a stop: nothing may write after the replica left). */
  async settled(): Promise<void> {
    await this.tickRefresh;
  }

  /** How the view was last brought up to date: full reads and change-log reads, and names read from the log. */
  readonly reads = { full: 0, changes: 0, changedNames: 0 };

  /** The version of the published definitions this view holds (null before the first read). */
  get heldVersion(): string | null {
    return this.version;
  }

  /**
   * Reads every published definition, version `v` having been read first: a definition published while the scan
   * runs takes a newer version, so the next refresh reads it from the log. In HSCAN pages, not one HGETALL:
   * 100,000 definitions are ~45 MB of JSON at once, which grew the heap for good. Read into a new view that
   * replaces the old one whole at the end: the planner's tick and the executor may ask the view while the scan
   * runs ({@link refreshForTick} does not wait for it), and a half-read view answers "current" for every name not
   * read yet.
   */
  private async readAll(v: string | null): Promise<void> {
    this.reads.full++;
    const into = { winners: new Map<string, Winner>(), publishers: new Map<string, number>() };
    let cursor = '0';
    do {
      const [next, flat] = await this.redis.hscan(this.keys.definitions, cursor, 'COUNT', DEFINITIONS_PAGE);
      // A name returned twice (HSCAN may) is set twice: the later value is kept.
      for (let i = 0; i + 1 < flat.length; i += 2) this.setIn(into, flat[i]!, flat[i + 1]!);
      cursor = next;
    } while (cursor !== '0');
    this.winners = into.winners;
    this.publishers = into.publishers;
    this.touched = null;
    this.seen = null;
    this.version = v ?? '0';
  }

  /**
   * Reads the names changed since the held version, a page at a time, and applies them (a name without a
   * definition is withdrawn). Falls back to {@link readAll} when the log cannot bring the view up to date.
   */
  private async readChanges(): Promise<boolean> {
    this.reads.changes++;
    for (;;) {
      const keys = [this.keys.definitions, this.keys.definitionsVersion, this.keys.definitionsChanges, this.keys.definitionsLog];
      const res = (await Scripts.on(this.redis).run('definitions-changes', keys, [this.version ?? '0', CHANGES_PAGE])) as (string | null)[];
      if (res[0] === 'full') {
        await this.readAll(res[1] ?? null);
        return true;
      }
      let names = 0;
      for (let i = 2; i + 1 < res.length; i += 2) {
        names++;
        const raw = res[i + 1];
        if (raw === null || raw === undefined) this.delete(res[i]!);
        else this.set(res[i]!, raw);
      }
      this.reads.changedNames += names;
      this.version = res[1]!;
      if (names < CHANGES_PAGE) return true;
    }
  }

  /** Sets the winner of `name` from its published JSON, counting its publisher. */
  private set(read: string, raw: string): void {
    const name = this.setIn({ winners: this.winners, publishers: this.publishers }, read, raw);
    this.touched?.add(name);
    this.seen?.add(name);
  }

  /** Sets the winner of `read` from its published JSON in the maps of `view`, counting its publisher; returns the name. */
  private setIn(view: { winners: Map<string, Winner>; publishers: Map<string, number> }, read: string, raw: string): string {
    const d = JSON.parse(raw) as PublishedDefinition;
    // The strings of this replica's own definition where they are equal, not a copy per schedule from each read (at
    // 100,000 schedules the names and hashes read from Redis held ~12 MB beside the equal ones of the schedules).
    const own = this.mine.get(read);
    const name = own?.name ?? read;
    const hash = own !== undefined && own.definitionHash === d.definitionHash ? own.definitionHash : d.definitionHash;
    const was = view.winners.get(name);
    if (was !== undefined) {
      const n = (view.publishers.get(was.replica) ?? 1) - 1;
      if (n > 0) view.publishers.set(was.replica, n);
      else view.publishers.delete(was.replica);
    }
    // One string per publisher, not per schedule.
    let replica = this.interned.get(d.replica);
    if (replica === undefined) this.interned.set(d.replica, (replica = d.replica));
    view.winners.set(name, { hash, replica, loadedAtMs: d.loadedAtMs });
    view.publishers.set(replica, (view.publishers.get(replica) ?? 0) + 1);
    return name;
  }

  /** Forgets the winner of `name`, if any, and its count for its publisher. */
  private delete(name: string): void {
    const w = this.winners.get(name);
    if (w === undefined) return;
    this.touched?.add(name);
    this.seen?.add(name);
    this.winners.delete(name);
    const n = (this.publishers.get(w.replica) ?? 1) - 1;
    if (n > 0) this.publishers.set(w.replica, n);
    else this.publishers.delete(w.replica);
  }

  /**
   * The names whose published definition changed since the previous call (so whose {@link isCurrent} may answer
   * differently), or true when any may have (a full read came in between); and starts counting again.
   */
  takeChanged(): true | string[] {
    const t = this.touched;
    this.touched = new Set();
    return t === null ? true : [...t];
  }

  /** The winners by name, for tests that compare the view with a full read. */
  snapshot(): Map<string, { hash: string; replica: string; loadedAtMs: number }> {
    return new Map([...this.winners].map(([k, w]) => [k, { ...w }]));
  }

  /**
   * Of schedules whose publisher this replica's membership view (up to a tick old) misses, those whose publisher
   * is not a member in Redis now either: a replica that has just joined and published is not taken for gone.
   */
  private async stillOrphaned(candidates: readonly CompiledSchedule[]): Promise<CompiledSchedule[]> {
    const publishers = [...new Set(candidates.map((s) => this.winners.get(s.name)!.replica))];
    const live = new Set<string>();
    for (const r of publishers) if (await isLiveMember(this.redis, this.keys, r)) live.add(r);
    return candidates.filter((s) => !live.has(this.winners.get(s.name)!.replica));
  }

  /**
   * Redis time (ms) the published definition of `name` was first loaded (unchanged by re-publications of the
   * same content): since when the flock runs the schedule as it is, for the overdue rule (records/health.ts).
   */
  loadedAtMs(name: string): number | undefined {
    return this.winners.get(name)?.loadedAtMs;
  }

  /** True when a live replica publishes a definition of `name` (it may run it even if this one does not). */
  has(name: string): boolean {
    return this.publisherOf(name) !== undefined;
  }

  /** The live replica whose definition of `name` is the published one (undefined: none, or it is gone). */
  publisherOf(name: string): string | undefined {
    if (this.pending.has(name)) return this.replica;
    const w = this.winners.get(name);
    return w !== undefined && this.isLive(w.replica) ? w.replica : undefined;
  }

  /**
   * True when this replica's definition of `s` is the published one, or nothing is published for it, or its
   * publisher is no longer live.
   */
  isCurrent(s: CompiledSchedule): boolean {
    if (this.pending.get(s.name) === s.definitionHash) return true;
    const w = this.winners.get(s.name);
    return w === undefined || w.hash === s.definitionHash || !this.isLive(w.replica);
  }

  /**
   * True when the published definition of `s` (as last read) has the same hash as this replica's: then what the
   * engine scripts would read from it (its `outboxOn`) is what this replica's definition says, and the claim and
   * finish can carry it instead of the scripts reading the definition per outcome.
   */
  isPublishedAs(s: CompiledSchedule): boolean {
    return (this.pending.get(s.name) ?? this.winners.get(s.name)?.hash) === s.definitionHash;
  }
}
