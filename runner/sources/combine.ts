/**
 * One set of schedules from two sources: schedule files and the cluster's Schedule resources, with the names of
 * the third (the stored schedules, runner/store/: applied by runner/sources/stored.ts). Pure.
 *
 * Rules (the files' rules, extended to Schedules; see loadSchedules in runner/config/load.ts):
 * - A schedule name is unique across the flock. A name defined more than once (two Schedules in different
 *   namespaces, or a file and a Schedule) is refused everywhere it is defined: a file is refused whole (an
 *   error names the Schedule), a Schedule is refused with a message naming the other definition (the file
 *   position, or the other Schedule).
 * - A Schedule the loader refuses runs nothing of its new generation.
 * - What runs goes on when its definition is refused: a running schedule whose file is refused on reload, or
 *   whose Schedule (same uid) is refused in a new generation or for a name conflict, keeps its running version
 *   (bad input never stops what works, and a newcomer cannot take a running schedule's name over). A deleted
 *   Schedule stops.
 * - A name is owned by one source: a file or Schedule that defines a stored schedule's name is refused (naming
 *   the store and the version) before any of it runs; a running one keeps its running version by the rule above,
 *   and then the stored schedule of that name is what is refused on this replica (runner/sources/sources.ts).
 *   The store itself refuses an upsert of a name a file or Schedule owns (its replica live or seen within
 *   NAME_HOLD_MS: runner/store/ownership.ts, lua/store-upsert.lua). Should a stored schedule get such a name
 *   anyway (an older replica in a rollout, every publisher gone longer than that), the older owner keeps it:
 *   a name the published definitions show owned by a file or Schedule (`ownedByDefiners`) does not refuse the
 *   file or Schedule; the stored schedule of that name is refused on this replica, by name, and logged.
 */
import { ConfigError } from '../config/errors.js';
import type { CompiledSchedule, LoadResult } from '../config/load.js';
import { refKey, sourceName, type ScheduleRef } from '../kubernetes/resource.js';
import type { LoadedSchedule } from '../kubernetes/validate.js';

/** A schedule that runs, with the Schedule object (uid, generation) it comes from, if any. */
export interface SourcedSchedule {
  schedule: CompiledSchedule;
  origin?: { ref: ScheduleRef; generation: number };
}

/** What became of one Schedule object. */
export interface ClusterVerdict {
  loaded: LoadedSchedule;
  /** `runs`: its current generation runs; `kept`: refused, an earlier generation goes on; `refused`: nothing runs. */
  state: 'runs' | 'kept' | 'refused';
  /** Why it is refused: the loader refused the spec, or its name is defined elsewhere too. */
  reason?: 'SpecInvalid' | 'NameConflict';
  /** The loader's messages, or the name conflict; empty when it runs. */
  messages: string[];
  /** With `kept`: the generation that goes on running. */
  runningGeneration?: number;
}

/** What {@link combineSources} decided. */
export interface Combined {
  /** What the replica runs. */
  runs: SourcedSchedule[];
  /** The files' errors: the loader's, plus one per name a file shares with a Schedule (sorted by file). */
  fileErrors: ConfigError[];
  /** The files' warnings (deprecated input of valid files): printed, they refuse nothing. */
  fileWarnings: ConfigError[];
  /** Files refused now, by the loader or for a name conflict. */
  refusedFiles: string[];
  /** One verdict per Schedule object. */
  cluster: ClusterVerdict[];
  /**
   * Names whose file or Schedule is refused because the store holds the name: removing the stored schedule
   * makes the replica compose again (sources.ts `applyStored`), so the refused definition starts.
   */
  storeClashes: string[];
}

type Definer =
  | { source: 'file'; file: string; line: number; col: number; schedule: CompiledSchedule }
  | { source: 'cluster'; loaded: LoadedSchedule };

const where = (d: Definer): string =>
  d.source === 'file' ? `${d.file}:${d.schedule.source.line}:${d.schedule.source.col}` : sourceName(d.loaded.ref);

/**
 * Combines the files' load result (undefined: no schedule path) and the loaded Schedules into what runs,
 * given what runs now (`running`; empty at start). See the module docs for the rules.
 */
export function combineSources(input: {
  files?: LoadResult;
  cluster: readonly LoadedSchedule[];
  running: readonly SourcedSchedule[];
  /** The stored schedules' names and versions (runner/store/); absent: none. */
  stored?: ReadonlyMap<string, number>;
  /**
   * Stored names that a schedule file or Schedule owns nonetheless (published by a replica live or seen within
   * NAME_HOLD_MS: runner/store/ownership.ts): the older owner keeps the name, so a file or Schedule that defines
   * one is not refused for it (the stored schedule of that name is refused on this replica instead).
   */
  ownedByDefiners?: ReadonlySet<string>;
}): Combined {
  const files: LoadResult = input.files ?? { schedules: [], errors: [], files: [], warnings: [] };
  const byName = new Map<string, Definer[]>();
  const add = (name: string, d: Definer): void => void byName.set(name, [...(byName.get(name) ?? []), d]);
  for (const s of files.schedules) add(s.name, { source: 'file', file: s.source.file, line: s.source.line, col: s.source.col, schedule: s });
  for (const l of input.cluster) add(l.name, { source: 'cluster', loaded: l });

  const fileErrors = [...files.errors];
  const refusedFiles = new Set(files.files.filter((f) => !f.ok).map((f) => f.file));
  const conflicts = new Map<string, string[]>(); // Schedule key → messages
  for (const [name, defs] of byName) {
    if (defs.length < 2) continue;
    for (const d of defs) {
      const others = defs.filter((o) => o !== d).map(where).join(', ');
      if (d.source === 'file') {
        refusedFiles.add(d.file);
        fileErrors.push(
          new ConfigError({
            code: 'NAME_DUPLICATE',
            file: d.file,
            line: d.line,
            col: d.col,
            field: 'name',
            reason: `name "${name}" is also defined by ${others}; both are refused`,
            hint: 'schedule names must be unique across the flock (files and Schedule resources): rename or remove one',
          }),
        );
      } else {
        const key = refKey(d.loaded.ref);
        conflicts.set(key, [...(conflicts.get(key) ?? []), `metadata.name: name "${name}" is also defined in ${others}; both are refused (names are unique across the flock's files and Schedules)`]);
      }
    }
  }

  const stored = input.stored ?? new Map<string, number>();
  const storeClashes = new Set<string>();
  const storedWhere = (name: string): string => `the schedule store (stored schedule "${name}", version ${stored.get(name)})`;
  const kept = input.ownedByDefiners ?? new Set<string>();
  for (const s of files.schedules) {
    if (!stored.has(s.name) || kept.has(s.name)) continue;
    storeClashes.add(s.name);
    refusedFiles.add(s.source.file);
    fileErrors.push(
      new ConfigError({
        code: 'NAME_DUPLICATE',
        file: s.source.file,
        line: s.source.line,
        col: s.source.col,
        field: 'name',
        reason: `name "${s.name}" is also defined in ${storedWhere(s.name)}; a name is owned by one source, so this file is refused`,
        hint: 'rename the schedule, or remove the stored one first (flock.schedules.remove)',
      }),
    );
  }
  for (const l of input.cluster) {
    if (!stored.has(l.name) || kept.has(l.name)) continue;
    storeClashes.add(l.name);
    const key = refKey(l.ref);
    conflicts.set(key, [...(conflicts.get(key) ?? []), `metadata.name: name "${l.name}" is also defined in ${storedWhere(l.name)}; a name is owned by one source, so this Schedule is refused`]);
  }

  const runs: SourcedSchedule[] = [];
  for (const s of files.schedules) if (!refusedFiles.has(s.source.file)) runs.push({ schedule: s });
  const verdicts: ClusterVerdict[] = [];
  const refusedSchedules = new Map<string, ClusterVerdict>(); // by uid
  for (const l of input.cluster) {
    const conflict = conflicts.get(refKey(l.ref));
    if (l.schedule && !conflict) {
      runs.push({ schedule: l.schedule, origin: { ref: l.ref, generation: l.generation } });
      verdicts.push({ loaded: l, state: 'runs', messages: [] });
      continue;
    }
    const v: ClusterVerdict = {
      loaded: l,
      state: 'refused',
      reason: conflict ? 'NameConflict' : 'SpecInvalid',
      messages: conflict ? [...conflict, ...l.errors] : l.errors,
    };
    verdicts.push(v);
    refusedSchedules.set(l.ref.uid, v);
  }

  const names = new Set(runs.map((r) => r.schedule.name));
  for (const r of input.running) {
    if (names.has(r.schedule.name)) continue;
    let keep: boolean;
    if (r.origin) {
      const v = refusedSchedules.get(r.origin.ref.uid);
      keep = v !== undefined;
      if (v) {
        v.state = 'kept';
        v.runningGeneration = r.origin.generation;
      }
    } else keep = refusedFiles.has(r.schedule.source.file);
    if (keep) {
      runs.push(r);
      names.add(r.schedule.name);
    }
  }
  fileErrors.sort((a, b) => (a.file < b.file ? -1 : a.file > b.file ? 1 : a.line - b.line || a.col - b.col));
  return { runs, fileErrors, fileWarnings: files.warnings, refusedFiles: [...refusedFiles].sort(), cluster: verdicts, storeClashes: [...storeClashes].sort() };
}
