/**
 * Where a replica's schedules come from, and its reloads: schedule files (a path, watched: watch.ts) and the
 * cluster's Schedule resources (watched), combined by combine.ts into one set that goes to `Replica.reload`
 * whenever either changes, or on SIGHUP; and the stored schedules (stored.ts), whose changes are applied
 * incrementally (`Replica.applyChanges`), one at a time with the reloads. The reload rules, which keep bad input from stopping what works:
 * - reloads run one at a time, each reading the sources again;
 * - a file refused on reload keeps its previous (running) version, and its errors are logged with their
 *   positions (a schedule it defined that a valid file now defines is not kept twice); a refused Schedule
 *   keeps its running generation (combine.ts);
 * - a file-only reload that finds no valid schedule at all keeps the running ones;
 * - the replica then applies the new set (engine/replica.ts `reload`: unchanged schedules go on, changed ones
 *   apply from their next due time, removed ones have their planned occurrences recorded skipped).
 */
import { loadSchedules, type LoadResult } from '../config/load.js';
import type { Replica } from '../engine/replica.js';
import type { Logger } from '../log.js';
import type { ScheduleSource } from '../kubernetes/source.js';
import type { LoadedSchedule } from '../kubernetes/validate.js';
import { combineSources, type Combined, type SourcedSchedule } from './combine.js';
import { watchedStamp, watchSchedules } from './watch.js';
import type { StoredSchedules } from './stored.js';
import { NAME_HOLD_MS, ownerText, type NameOwner } from '../store/ownership.js';
import type { CompiledSchedule } from '../config/load.js';

/**
 * How often (ms) a replica re-checks the stored schedules it refused because another source owned the name: one
 * that is free now starts within this (plus its next due time), without another upsert.
 */
export const REFUSED_RECHECK_MS = 3_000;

/** The replica field of a refusal for this replica's own file or Schedule (StoredSchedules.refused). */
const OWN_REPLICA = 'this replica';

/** Options of {@link ScheduleSources}. */
export interface ScheduleSourcesOptions {
  /** A schedule file or directory; undefined: Schedules from the cluster only. */
  path?: string;
  /** The cluster's Schedules; undefined: files only. */
  cluster?: ScheduleSource;
  /** The stored schedules (loaded); undefined: none. */
  stored?: StoredSchedules;
  log: Logger;
}

/** The combined sources of one replica; see the module docs. */
export class ScheduleSources {
  /** What the replica runs (after the latest successful compose). */
  running: SourcedSchedule[] = [];
  /** The latest combination (verdicts of the Schedules, file errors). */
  latest: Combined | undefined;
  /** Called after each compose that was applied (initial and reloads): the status reporter listens. */
  onApplied: ((c: Combined) => void) | undefined;
  private reloading: Promise<void> = Promise.resolve();
  /** The stored schedules this replica runs (names). */
  private storedRunning = new Set<string>();
  /** Stops the file watch (none: nothing watched). */
  private stopFileWatch: () => void = () => undefined;

  constructor(readonly options: ScheduleSourcesOptions) {}

  /**
   * Loads both sources and combines them with what runs now. A file-only replica whose reload finds no valid
   * schedule at all keeps the running ones (e.g. a ConfigMap mount that is briefly empty); with Schedules from
   * the cluster an empty set is a real state (every Schedule deleted).
   */
  async compose(): Promise<Combined> {
    // Taken before the read: an edit during it shows as a different stamp at recombine().
    const stamp = this.options.path !== undefined ? watchedStamp(this.options.path) : undefined;
    const files = this.options.path !== undefined ? await loadSchedules(this.options.path) : undefined;
    const cluster = this.options.cluster ? await this.options.cluster.load() : [];
    this.loaded = { ...(files ? { files } : {}), cluster, ...(stamp !== undefined ? { stamp } : {}) };
    return this.combine(files, cluster);
  }

  /**
   * Combines the files and Schedules of the latest {@link compose} again, without reading them again (`start` adds the
   * stored schedules once Redis answers: the files it loaded a moment before are the ones it runs, and a second load
   * of 100,000 schedules doubled the start-up and kept a second copy of every compiled schedule alive). What changed
   * in the cluster meanwhile comes with the first reload. Without an earlier compose, or when what the file watch
   * watches changed since that compose began to read (`watchedStamp`: an edit made while the replica waited for
   * Redis, before the watch starts), it composes: such an edit would otherwise wait for the next change or SIGHUP.
   */
  async recombine(): Promise<Combined> {
    const loaded = this.loaded;
    if (!loaded) return this.compose();
    if (this.options.path !== undefined && watchedStamp(this.options.path) !== loaded.stamp) return this.compose();
    return this.combine(loaded.files, loaded.cluster);
  }

  /** What the latest {@link compose} loaded (for {@link recombine}; released at {@link applied}). */
  private loaded: { files?: LoadResult; cluster: LoadedSchedule[]; stamp?: string } | undefined;

  private async combine(files: LoadResult | undefined, cluster: LoadedSchedule[]): Promise<Combined> {
    const stored = this.options.stored ? new Map([...this.options.stored.applied].map(([n, a]) => [n, a.version])) : undefined;
    // A name both a file (or Schedule) and the store define: the older owner keeps it (runner/store/ownership.ts).
    const clashes = stored ? [...(files?.schedules ?? []).map((s) => s.name), ...cluster.map((l) => l.name)].filter((n) => stored.has(n)) : [];
    const owned = clashes.length > 0 ? await this.options.stored!.ownedElsewhere(clashes) : undefined;
    for (const [name, o] of owned ?? []) {
      this.options.log.error(
        { schedule: name, owner: o.source, ownerReplica: o.replica, version: stored!.get(name) },
        `stored schedule "${name}" (version ${stored!.get(name)}) refused on this replica: the name is owned by ${ownerText(o)}, which had it first; its other schedules are not affected (remove the stored one, or the name from the file, to settle it)`,
      );
    }
    const c = combineSources({ ...(files ? { files } : {}), cluster, running: this.running, ...(stored ? { stored } : {}), ...(owned ? { ownedByDefiners: new Set(owned.keys()) } : {}) });
    if (!this.options.cluster && this.options.path !== undefined && c.runs.length === 0 && this.running.length > 0) {
      this.options.log.error('reload found no valid schedules; keeping the running ones');
      return { ...c, runs: this.running };
    }
    return c;
  }

  /** Adds the stored schedules (loaded) as a source; call {@link compose} again after it. */
  setStored(stored: StoredSchedules): void {
    this.options.stored = stored;
  }

  /**
   * Everything the replica runs for the combination `c`: its files and Schedules, and the stored schedules
   * whose names those do not run (a name a file or Schedule runs is refused for the store on this replica:
   * logged, naming the source).
   */
  withStored(c: Combined): CompiledSchedule[] {
    const runs = c.runs.map((r) => r.schedule);
    const owned = new Map(runs.map((s) => [s.name, s]));
    const stored = (this.options.stored?.schedules() ?? []).filter((s) => {
      const other = owned.get(s.name);
      if (other) this.refuseStored(s.name, other);
      return !other;
    });
    this.storedRunning = new Set(stored.map((s) => s.name));
    return [...runs, ...stored];
  }

  /** Logs the refusal of stored schedule `name` for this replica's own file or Schedule, and keeps it to re-check. */
  private refuseStored(name: string, other: CompiledSchedule): void {
    const source = `${other.source.file}:${other.source.line}`;
    this.options.stored?.refused.set(name, { source, replica: OWN_REPLICA, lastSeenAgoMs: null });
    this.options.log.error({ schedule: name, source }, `stored schedule "${name}" refused on this replica: the name is defined by ${other.source.file}:${other.source.line}:${other.source.col} (a name is owned by one source)`);
  }

  /**
   * Re-checks the stored schedules refused for their name ({@link StoredSchedules.refused}), one at a time with the
   * reloads: those whose name no source owns any more (the file dropped it, its Schedule was deleted, its replicas
   * have been gone for NAME_HOLD_MS) start on `replica`, from their next due time, without another upsert; logged
   * `stored schedule "<name>" runs on this replica now: …`. For a name this replica's own file still defines while
   * the flock runs the stored one (published as the store's by a live replica: the store took the name while this
   * replica was away for longer than the hold), warns once, naming the stored schedule. Called every
   * {@link REFUSED_RECHECK_MS} while there are refused names (cheap: one owned-names call for those names).
   */
  recheckRefused(replica: Replica): Promise<void> {
    const stored = this.options.stored;
    if (!stored || stored.refused.size === 0) return this.reloading;
    const p = (this.reloading = this.reloading.then(async () => {
      const mine = new Set(this.running.map((r) => r.schedule.name));
      const names = [...stored.refused.keys()].filter((n) => stored.applied.has(n));
      for (const n of [...stored.refused.keys()]) if (!stored.applied.has(n)) stored.refused.delete(n);
      await this.warnTaken(names.filter((n) => mine.has(n)));
      const candidates = names.filter((n) => !mine.has(n));
      if (candidates.length === 0) return;
      const owners = await stored.ownedElsewhere(candidates);
      const free = candidates.filter((n) => !owners.has(n));
      for (const [n, o] of owners) stored.refused.set(n, o);
      if (free.length === 0) return;
      const was = new Map(free.map((n) => [n, stored.refused.get(n)!]));
      for (const n of free) stored.refused.delete(n);
      await replica.applyChanges(free.map((n) => stored.applied.get(n)!.schedule), []);
      for (const n of free) {
        this.storedRunning.add(n);
        const o = was.get(n)!;
        this.options.log.info(
          { schedule: n, version: stored.applied.get(n)!.version, formerOwner: o.source },
          `stored schedule "${n}" runs on this replica now: its name is free (${o.source} no longer defines it, or its replicas are gone); from its next due time`,
        );
      }
    }));
    this.reloading = p.catch((err: Error) => this.options.log.error({ err: err.message }, 're-checking the refused stored schedules failed'));
    return this.reloading;
  }

  /** Names of this replica's files whose warning "the store took the name" was logged (once per name). */
  private warnedTaken = new Set<string>();

  /**
   * For names this replica's own files run and the store holds too: when a live replica publishes the stored one
   * (`source: store`), the store took the name while this replica was away for longer than NAME_HOLD_MS (by the
   * rule "the definition loaded last wins", the flock runs the stored one, and this replica's file version does
   * not run): warn once, naming the stored schedule and how to settle it.
   */
  private async warnTaken(names: readonly string[]): Promise<void> {
    const stored = this.options.stored;
    const check = names.filter((n) => !this.warnedTaken.has(n));
    if (!stored || check.length === 0) return;
    const taken = await stored.publishedByStore(check);
    for (const [n, publisher] of taken) {
      this.warnedTaken.add(n);
      const s = stored.applied.get(n)!;
      const file = this.running.find((r) => r.schedule.name === n)?.schedule.source;
      this.options.log.warn(
        { schedule: n, storedVersion: s.version, publishedBy: publisher, file: file ? `${file.file}:${file.line}` : undefined },
        `schedule "${n}" of ${file ? `${file.file}:${file.line}` : 'this replica\'s file'} no longer runs: its name was taken by the schedule store (stored schedule "${n}", version ${s.version}) while this replica was away for longer than ${NAME_HOLD_MS / 60_000} min, and the flock runs the stored one (published by replica ${publisher}); to give the name back to the file, remove the stored one (cronflock delete ${n}, or flock.schedules.remove); else rename it in the file`,
      );
    }
  }

  /**
   * Applies changes of stored schedules to `replica` (one at a time with the reloads), leaving out names a file
   * or Schedule runs here. A failure is logged and changes nothing.
   */
  applyStored(replica: Replica, upserted: readonly CompiledSchedule[], removed: readonly string[]): Promise<void> {
    this.reloading = this.reloading.then(async () => {
      const owned = new Map(this.running.map((r) => [r.schedule.name, r.schedule]));
      let up = upserted.filter((s) => {
        const other = owned.get(s.name);
        if (other) this.refuseStored(s.name, other);
        return !other;
      });
      // A name another replica's file or Schedule owns (a clash that got into the store anyway): the older owner
      // keeps it; the stored schedule is refused here by name rather than taking the name over.
      const elsewhere = await (this.options.stored?.ownedElsewhere(up.map((s) => s.name)) ?? Promise.resolve(new Map<string, NameOwner>()));
      if (elsewhere.size > 0) {
        for (const [name, o] of elsewhere) {
          this.options.log.error({ schedule: name, owner: o.source, ownerReplica: o.replica }, `stored schedule "${name}" refused on this replica: the name is owned by ${ownerText(o)}, which had it first (remove the stored one, or the name from the file, to settle it)`);
        }
        up = up.filter((s) => !elsewhere.has(s.name));
      }
      for (const n of removed) this.options.stored?.refused.delete(n);
      for (const s of up) this.options.stored?.refused.delete(s.name);
      for (const [name, o] of elsewhere) this.options.stored?.refused.set(name, o);
      const rm = removed.filter((n) => this.storedRunning.has(n));
      await replica.applyChanges(up, rm);
      for (const n of rm) this.storedRunning.delete(n);
      for (const s of up) this.storedRunning.add(s.name);
      // A file or Schedule refused because the store held one of its names may run now that the stored schedule
      // is gone: compose again (after the stored source has dropped the name: StoredSchedules updates what it
      // applied once this returns, so the reload is queued behind it).
      const freed = removed.filter((n) => this.latest?.storeClashes.includes(n) === true);
      if (freed.length > 0) {
        this.options.log.info({ schedules: freed }, `stored schedule${freed.length > 1 ? 's' : ''} ${freed.map((n) => `"${n}"`).join(', ')} removed: re-checking the definitions refused for ${freed.length > 1 ? 'those names' : 'that name'}`);
        setImmediate(() => void this.reload(replica, 'stored schedule removed'));
      }
    });
    const p = this.reloading;
    this.reloading = p.catch((err: Error) => this.options.log.error({ err: err.message }, 'applying stored schedule changes failed'));
    return p;
  }

  /** Records `c` as what runs (after the replica started or reloaded with it) and tells the listener. */
  applied(c: Combined): void {
    this.running = c.runs;
    this.latest = c;
    this.loaded = undefined;
    this.onApplied?.(c);
  }

  /**
   * Reloads `replica` from both sources (one reload at a time): file errors are logged with their positions;
   * refused definitions keep their running versions (combine.ts). A failure is logged and changes nothing.
   */
  reload(replica: Replica, why: string): Promise<void> {
    const log = this.options.log;
    this.reloading = this.reloading
      .then(async () => {
        const c = await this.compose();
        for (const e of c.fileErrors) log.error({ file: e.file, line: e.line, col: e.col, field: e.field }, `reload refused: ${e.reason}`);
        for (const v of c.cluster) {
          if (v.state !== 'runs') log.error({ schedule: v.loaded.name, object: `${v.loaded.ref.namespace}/${v.loaded.ref.name}`, generation: v.loaded.generation, state: v.state }, `Schedule refused: ${v.messages.join('; ')}`);
        }
        const diff = await replica.reload(this.withStored(c)); // logs 'schedules reloaded' when something changed
        this.applied(c);
        const changed = diff.added.length + diff.changed.length + diff.removed.length > 0;
        if (c.refusedFiles.length > 0) log.warn({ why, refused: c.refusedFiles }, `reload: ${c.refusedFiles.length} file(s) refused; their running versions go on`);
        else if (!changed) log.info({ why }, this.options.cluster ? 'schedule files and Schedules re-read; nothing changed' : 'schedule files re-read; nothing changed');
      })
      .catch((err: Error) => log.error({ why, err: err.message }, 'reload failed; keeping the running schedules'));
    return this.reloading;
  }

  /**
   * Reloads `replica` when a source changes: the cluster's Schedules (always, when watched), the schedule files
   * (when `watchFiles`), and on SIGHUP.
   */
  watch(replica: Replica, watchFiles: boolean): void {
    if (this.options.cluster) this.options.cluster.onChange = () => void this.reload(replica, 'Schedules changed');
    if (watchFiles && this.options.path !== undefined) this.stopFileWatch = watchSchedules(this.options.path, () => void this.reload(replica, 'file changed'));
    process.on('SIGHUP', () => void this.reload(replica, 'SIGHUP'));
    this.options.stored?.follow((up, rm) => this.applyStored(replica, up, rm));
    if (this.options.stored) {
      this.recheckTimer = setInterval(() => void this.recheckRefused(replica), REFUSED_RECHECK_MS);
      this.recheckTimer.unref();
    }
  }

  private recheckTimer: NodeJS.Timeout | undefined;

  /** Stops watching the schedule files and following the stored schedules (the cluster's watch stops with its source; SIGHUP still reloads). */
  async unwatch(): Promise<void> {
    this.stopFileWatch();
    clearInterval(this.recheckTimer);
    void this.options.stored?.stop(); // its connection is closed by its owner, which ends a blocked read
  }
}
