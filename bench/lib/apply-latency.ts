/**
 * Time from an upsert to every replica applying it, from the replicas' own log lines: each replica logs
 * `stored schedule changes applied` with `upToVersion` (runner/sources/stored.ts) when it has applied every
 * change of the store up to that version. Pure, for bench/scenarios/store.ts and its test.
 */

/** One replica's progress: the Redis-independent wall time (ms) at which it had applied up to a version. */
export interface AppliedMark {
  version: number;
  atMs: number;
}

/**
 * The marks of one replica's log line, or undefined when the line is not such a mark.
 * A line is pino JSON with `time` (ISO) and `upToVersion`.
 */
export function appliedMark(line: string): AppliedMark | undefined {
  if (!line.includes('"stored schedule changes applied"')) return undefined;
  try {
    const o = JSON.parse(line) as { time?: string | number; upToVersion?: number };
    const atMs = typeof o.time === 'number' ? o.time : Date.parse(String(o.time));
    if (typeof o.upToVersion !== 'number' || !Number.isFinite(atMs)) return undefined;
    return { version: o.upToVersion, atMs };
  } catch {
    return undefined;
  }
}

/**
 * For each upsert (its version and the wall time it was sent), how long until every replica had applied it: the
 * first mark of each replica at or past its version, the latest of those, minus the send time. An upsert some
 * replica never applied (within its marks) is left out and counted in `missing`.
 * @param marks per replica, in the order logged (versions only grow per replica).
 */
export function applyLatencies(upserts: readonly { version: number; sentAtMs: number }[], marks: readonly (readonly AppliedMark[])[]): { latenciesMs: number[]; missing: number } {
  const latenciesMs: number[] = [];
  let missing = 0;
  for (const u of upserts) {
    let latest = -Infinity;
    for (const m of marks) {
      const at = firstAtOrPast(m, u.version);
      if (at === undefined) {
        latest = NaN;
        break;
      }
      latest = Math.max(latest, at);
    }
    if (Number.isNaN(latest) || marks.length === 0) missing++;
    else latenciesMs.push(Math.max(0, latest - u.sentAtMs));
  }
  return { latenciesMs, missing };
}

/** Binary search: the time of the first mark whose version is ≥ `version`. */
function firstAtOrPast(marks: readonly AppliedMark[], version: number): number | undefined {
  let lo = 0;
  let hi = marks.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (marks[mid]!.version >= version) hi = mid;
    else lo = mid + 1;
  }
  return lo < marks.length ? marks[lo]!.atMs : undefined;
}
