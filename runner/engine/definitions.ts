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

/** The published definition of a schedule, as far as the rule needs it. */
interface Winner {
  hash: string;
  replica: string;
  loadedAtMs: number;
}

/** The published definitions as this replica last read them, and the rule above. */
export class Definitions {
  private winners = new Map<string, Winner>();
  /** The distinct publishers among the winners (a handful): checked each tick instead of every schedule. */
  private publishers = new Set<string>();
  private version: string | null = null;
  /** What this replica published last (re-published when the winner's publisher is gone). */
  private mine = new Map<string, CompiledSchedule>();
  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keyspace,
    private readonly replica: string,
    /** Who is a live member (the planner's membership view; every publisher counts as live before the first). */
    private readonly live: Pick<LiveReplicas, 'has'>,
  ) {}

  private isLive(replica: string): boolean {
    return this.live.has(replica);
  }

  /**
   * Publishes this replica's definitions (they win: they are the latest loaded) and withdraws the names it no
   * longer runs (only where its own publication is the current one). Then refreshes the view.
   */
  async publish(schedules: readonly CompiledSchedule[], removed: readonly string[] = []): Promise<void> {
    await this.publishOnly(schedules, removed);
    this.mine = new Map(schedules.map((s) => [s.name, s]));
    await this.refresh(true);
  }

  /**
   * Publishes changes to some of this replica's definitions (stored schedules' changes): `upserted` win (the
   * latest loaded), `removed` are withdrawn where this replica's publication is the current one; the others
   * are not sent again. Then refreshes the view.
   */
  async publishChanges(upserted: readonly CompiledSchedule[], removed: readonly string[]): Promise<void> {
    await this.publishOnly(upserted, removed);
    for (const name of removed) this.mine.delete(name);
    for (const s of upserted) this.mine.set(s.name, s);
    await this.refresh();
  }

  private async publishOnly(schedules: readonly CompiledSchedule[], removed: readonly string[]): Promise<void> {
    // Chunked: a call's arguments are spread into one function call (the stack limits it) and one script run
    // (which blocks Redis while it runs). Each chunk applies the same rule on its own, so chunks compose.
    let args: string[] = [this.replica];
    const flush = async (removedNames: readonly string[]): Promise<void> => {
      await Scripts.on(this.redis).run('publish-definitions', [this.keys.definitions, this.keys.definitionsVersion], [...args, '|', ...removedNames]);
      args = [this.replica];
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
      args.push(s.name, JSON.stringify(def));
      if (args.length >= 2 * PUBLISH_CHUNK) await flush([]);
    }
    for (let i = 0; i < removed.length; i += PUBLISH_CHUNK) await flush(removed.slice(i, i + PUBLISH_CHUNK));
    if (args.length > 1 || removed.length === 0) await flush([]);
  }

  /**
   * Re-reads the published definitions when their version changed (one GET otherwise), and re-publishes this
   * replica's definitions of schedules whose winning publisher is no longer live.
   * @returns true when the view changed (re-read or re-published).
   */
  async refresh(force = false): Promise<boolean> {
    const v = await this.redis.get(this.keys.definitionsVersion);
    let changed = false;
    if (force || v !== this.version) {
      // Read in pages (HSCAN), not with one HGETALL: 100,000 definitions are ~45 MB of JSON at once, which grew
      // the heap for good. A definition published while the scan runs changes the version read above, so the
      // next refresh reads again; one present throughout is returned (perhaps twice: the later one is kept).
      const winners = new Map<string, Winner>();
      const publishers = new Map<string, string>();
      let cursor = '0';
      do {
        const [next, flat] = await this.redis.hscan(this.keys.definitions, cursor, 'COUNT', DEFINITIONS_PAGE);
        for (let i = 0; i + 1 < flat.length; i += 2) {
          const d = JSON.parse(flat[i + 1]!) as PublishedDefinition;
          // One string per publisher, not per schedule.
          let replica = publishers.get(d.replica);
          if (replica === undefined) publishers.set(d.replica, (replica = d.replica));
          winners.set(flat[i]!, { hash: d.definitionHash, replica, loadedAtMs: d.loadedAtMs });
        }
        cursor = next;
      } while (cursor !== '0');
      this.winners = winners;
      this.publishers = new Set(publishers.keys());
      this.version = v;
      changed = true;
    }
    // Cheap in the usual case: every publisher is live, so no schedule needs a look (100k schedules, each tick).
    if ([...this.publishers].every((r) => r === this.replica || this.isLive(r))) return changed;
    const candidates = [...this.mine.values()].filter((s) => {
      const w = this.winners.get(s.name);
      // A departed publisher of a rival definition, or of this same one (then only its name is refreshed).
      return w !== undefined && w.replica !== this.replica && !this.isLive(w.replica);
    });
    const orphaned = candidates.length === 0 ? candidates : await this.stillOrphaned(candidates);
    if (orphaned.length > 0) {
      await this.publishOnly(orphaned, []);
      await this.refresh(true);
      return true;
    }
    return changed;
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
    const w = this.winners.get(name);
    return w !== undefined && this.isLive(w.replica);
  }

  /**
   * True when this replica's definition of `s` is the published one, or nothing is published for it, or its
   * publisher is no longer live.
   */
  isCurrent(s: CompiledSchedule): boolean {
    const w = this.winners.get(s.name);
    return w === undefined || w.hash === s.definitionHash || !this.isLive(w.replica);
  }
}
