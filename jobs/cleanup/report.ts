/**
 * The report of a cleanup run: complete counts, and a bounded list of objects (the first `maxObjects` that
 * were acted on, skipped or errored), so memory stays bounded however many objects a run touches. The
 * engine stores a job's result only when its JSON is at most 4 KB ({@link RESULT_LIMIT}): {@link fitReport}
 * drops objects from the list until it fits and says how many it left out.
 */
import { RESULT_LIMIT } from '../types.js';

/** One object in the report. */
export interface ObjectLine {
  kind: string;
  namespace?: string;
  name: string;
  uid: string;
  /** `deleted`, `deleting` (finalizers), `gone` (404: already deleted), `would delete`, `scaled to zero`, `patched`, `planned`, `skipped`, `error`. */
  result: string;
  /** Why it was skipped or failed. */
  reason?: string;
}

/** What `run()` returns. */
export interface CleanupReport {
  action: string;
  dryRun: boolean;
  /** Objects listed. */
  scanned: number;
  /** Objects the selectors selected (before the safety rules). */
  matched: number;
  /** Objects the action was done to (or would be, in a dry run or plan); 404s count as done. */
  acted: number;
  /** Selected objects left alone, by reason (protected, terminating, changed since scan, ...). */
  skipped: Record<string, number>;
  /** Selected objects that could not be judged or acted on. */
  errored: number;
  /** Set when the run stopped before writing (blast radius). */
  aborted?: string;
  objects: ObjectLine[];
  /** How many objects the list leaves out (counts above are complete). */
  objectsOmitted?: number;
}

/** Accumulates a report; see the module docs. */
export class Report {
  scanned = 0;
  matched = 0;
  acted = 0;
  errored = 0;
  aborted: string | undefined;
  private skipped = new Map<string, number>();
  private objects: ObjectLine[] = [];
  private omitted = 0;

  constructor(
    private readonly action: string,
    private readonly dryRun: boolean,
    private readonly maxObjects: number,
  ) {}

  private add(line: ObjectLine): void {
    if (this.objects.length < this.maxObjects) this.objects.push(line);
    else this.omitted++;
  }

  done(o: Omit<ObjectLine, 'result'>, result: string): void {
    this.acted++;
    this.add({ ...o, result });
  }

  skip(o: Omit<ObjectLine, 'result'>, reason: string): void {
    this.skipped.set(reason, (this.skipped.get(reason) ?? 0) + 1);
    this.add({ ...o, result: 'skipped', reason });
  }

  error(o: Omit<ObjectLine, 'result'>, reason: string): void {
    this.errored++;
    this.add({ ...o, result: 'error', reason: reason.slice(0, 300) });
  }

  /** A snapshot to go back to when a list restarts (410 Gone). */
  mark(): { scanned: number; matched: number; errored: number; skipped: Map<string, number>; objects: number; omitted: number } {
    return { scanned: this.scanned, matched: this.matched, errored: this.errored, skipped: new Map(this.skipped), objects: this.objects.length, omitted: this.omitted };
  }

  reset(m: ReturnType<Report['mark']>): void {
    this.scanned = m.scanned;
    this.matched = m.matched;
    this.errored = m.errored;
    this.skipped = new Map(m.skipped);
    this.objects.length = m.objects;
    this.omitted = m.omitted;
  }

  result(): CleanupReport {
    return fitReport({
      action: this.action,
      dryRun: this.dryRun,
      scanned: this.scanned,
      matched: this.matched,
      acted: this.acted,
      skipped: Object.fromEntries(this.skipped),
      errored: this.errored,
      ...(this.aborted ? { aborted: this.aborted } : {}),
      objects: [...this.objects],
      ...(this.omitted > 0 ? { objectsOmitted: this.omitted } : {}),
    });
  }
}

/** Drops objects from the end of the list until the report's JSON fits in {@link RESULT_LIMIT}. */
export function fitReport(r: CleanupReport, limit = RESULT_LIMIT): CleanupReport {
  let out = r;
  while (JSON.stringify(out).length > limit && out.objects.length > 0) {
    const keep = Math.max(0, Math.min(out.objects.length - 1, Math.floor(out.objects.length * 0.8)));
    out = { ...out, objects: out.objects.slice(0, keep), objectsOmitted: (out.objectsOmitted ?? 0) + (out.objects.length - keep) };
  }
  return out;
}
