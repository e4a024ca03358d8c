/**
 * A Schedule's `status`, as pure functions of what happened. Two parts, each written by the replica that owns
 * the change, with its own field manager (status-writer.ts):
 * - the **runs** part (`cronflock-runs`): `lastScheduleTime`, `lastSuccessfulTime`, `active`, `activeCount`,
 *   `lastResult`, `last24h`, `recent`. Written by the claimant of an occurrence (its start and its result) and
 *   by whichever replica recorded an occurrence missed or skipped.
 * - the **schedule** part (`cronflock-schedule`): `observedGeneration`, `nextDueTime`, `nextFireTime`,
 *   `conditions`. Written by the Schedule's rendezvous owner among the live replicas.
 *
 * Nothing moves backwards: `lastResult` is replaced only by the result of a later occurrence (due time, then
 * fencing token), `lastScheduleTime` and `lastSuccessfulTime` only grow, an `active` entry is replaced only by
 * a claim with a larger fencing token and removed only by the result of that claim or a later one. The
 * writer applies these functions to the object it read and writes with that object's resourceVersion as a
 * precondition, so a concurrent write in between makes it read and decide again (no lost updates).
 */
import { formatDurationMs } from '../time/duration.js';
import { canonicalJson } from '../text/canonical-json.js';
import type { ActiveRun, HourCount, LastResult, ScheduleCondition, ScheduleStatus } from './resource.js';

/** The fields of the runs part. */
export const RUNS_FIELDS = ['lastScheduleTime', 'lastSuccessfulTime', 'active', 'activeCount', 'lastResult', 'last24h', 'recent'] as const;
/** The fields of the schedule part. */
export const SCHEDULE_FIELDS = ['observedGeneration', 'nextDueTime', 'nextFireTime', 'conditions'] as const;

/** The runs part of a status. */
export type RunsPart = Pick<ScheduleStatus, (typeof RUNS_FIELDS)[number]>;
/** The schedule part of a status. */
export type SchedulePart = Pick<ScheduleStatus, (typeof SCHEDULE_FIELDS)[number]>;

/** Final states of an occurrence. */
export type FinalState = 'succeeded' | 'failed' | 'missed' | 'skipped';

/** Something that happened to an occurrence, for the runs part. Times are UTC ms (Redis clock). */
export type RunChange =
  | { type: 'started'; occurrence: string; dueMs: number; replica: string; fencingToken: number; attempt: number; startMs: number }
  | {
      type: 'final';
      occurrence: string;
      dueMs: number;
      state: FinalState;
      reason?: string;
      replica?: string;
      /** The claim's token; undefined for occurrences closed without a claim (missed, skipped when planned). */
      fencingToken?: number;
      attempt?: number;
      latenessMs?: number;
      startMs?: number;
      endMs?: number;
      /** When it was recorded (counts go into this hour). */
      atMs: number;
    }
  /** The claim with this token ended without a result (lost, handed over, retrying later). */
  | { type: 'released'; occurrence: string; fencingToken: number }
  /** Only prune the hourly counts to the last 24 hours. */
  | { type: 'tick'; atMs: number };

const HOUR_MS = 3_600_000;
const iso = (ms: number): string => new Date(ms).toISOString();
const ms = (t: string | undefined): number => (t === undefined ? -Infinity : Date.parse(t));

/** The runs part of `status` (only those fields). */
export function runsPart(status: ScheduleStatus | undefined): RunsPart {
  return pick(status ?? {}, RUNS_FIELDS);
}

/** The schedule part of `status` (only those fields). */
export function schedulePart(status: ScheduleStatus | undefined): SchedulePart {
  return pick(status ?? {}, SCHEDULE_FIELDS);
}

/**
 * Applies `changes` in order to the runs part `current` and returns the new part (a new object; `current` is
 * not modified). See the module docs for the rules that keep it from moving backwards.
 */
export function applyRunChanges(current: RunsPart, changes: readonly RunChange[]): RunsPart {
  const out: RunsPart = structuredClone(current);
  let active = [...(out.active ?? [])];
  for (const c of changes) {
    if (c.type === 'started') {
      const i = active.findIndex((a) => a.occurrence === c.occurrence);
      const entry: ActiveRun = {
        occurrence: c.occurrence,
        dueTime: iso(c.dueMs),
        replica: c.replica,
        fencingToken: c.fencingToken,
        attempt: c.attempt,
        startTime: iso(c.startMs),
      };
      if (i < 0) active.push(entry);
      else if (active[i]!.fencingToken <= c.fencingToken) active[i] = entry;
      // Manual occurrences (`~manual`, `~resume`) are not what the cron expression scheduled (CronJob semantics).
      if (!c.occurrence.includes('~') && c.dueMs > ms(out.lastScheduleTime)) out.lastScheduleTime = iso(c.dueMs);
    } else if (c.type === 'released') {
      active = active.filter((a) => !(a.occurrence === c.occurrence && a.fencingToken === c.fencingToken));
    } else if (c.type === 'final') {
      active = active.filter((a) => !(a.occurrence === c.occurrence && (c.fencingToken === undefined || a.fencingToken <= c.fencingToken)));
      const last = out.lastResult;
      const same = last !== undefined && last.occurrence === c.occurrence && last.state === c.state && (last.fencingToken ?? 0) === (c.fencingToken ?? 0);
      if (!same) count(out, c.state, c.atMs);
      if (last === undefined || later(c, last)) out.lastResult = result(c);
      if (c.state === 'succeeded' && c.endMs !== undefined && c.endMs > ms(out.lastSuccessfulTime)) out.lastSuccessfulTime = iso(c.endMs);
    }
    prune(out, c.type === 'final' || c.type === 'tick' ? c.atMs : undefined);
  }
  active.sort((a, b) => (a.occurrence < b.occurrence ? -1 : a.occurrence > b.occurrence ? 1 : 0));
  out.active = active;
  out.activeCount = active.length;
  return out;
}

/** Whether the final change `c` is about a later occurrence (due time, then fencing token) than `last`. */
function later(c: Extract<RunChange, { type: 'final' }>, last: LastResult): boolean {
  const due = ms(last.dueTime);
  if (c.dueMs !== due) return c.dueMs > due;
  return (c.fencingToken ?? 0) >= (last.fencingToken ?? 0);
}

function result(c: Extract<RunChange, { type: 'final' }>): LastResult {
  const r: LastResult = { occurrence: c.occurrence, dueTime: iso(c.dueMs), state: c.state };
  if (c.reason) r.reason = c.reason.slice(0, 1024);
  if (c.replica) r.replica = c.replica;
  if (c.fencingToken !== undefined) r.fencingToken = c.fencingToken;
  if (c.attempt !== undefined) r.attempt = c.attempt;
  if (c.latenessMs !== undefined) r.lateness = formatDurationMs(Math.max(0, c.latenessMs));
  if (c.startMs !== undefined) r.startTime = iso(c.startMs);
  if (c.endMs !== undefined) r.endTime = iso(c.endMs);
  return r;
}

function count(out: RunsPart, state: FinalState, atMs: number): void {
  const hour = iso(Math.floor(atMs / HOUR_MS) * HOUR_MS);
  const recent = [...(out.recent ?? [])];
  let bucket = recent.find((b) => b.hour === hour);
  if (!bucket) {
    bucket = { hour, succeeded: 0, failed: 0, missed: 0, skipped: 0 };
    recent.push(bucket);
  }
  bucket[state] += 1;
  out.recent = recent;
}

/** Keeps the hours of the last 24 (the current one included) and sums them into `last24h`. */
function prune(out: RunsPart, nowMs: number | undefined): void {
  if (nowMs === undefined || out.recent === undefined) return;
  const from = Math.floor(nowMs / HOUR_MS) * HOUR_MS - 23 * HOUR_MS;
  const recent: HourCount[] = out.recent.filter((b) => ms(b.hour) >= from).sort((a, b) => ms(a.hour) - ms(b.hour));
  out.recent = recent;
  out.last24h = recent.reduce(
    (s, b) => ({ succeeded: s.succeeded + b.succeeded, failed: s.failed + b.failed, missed: s.missed + b.missed, skipped: s.skipped + b.skipped }),
    { succeeded: 0, failed: 0, missed: 0, skipped: 0 },
  );
}

/** Whether the hourly counts hold an hour that is no longer in the last 24. */
export function hasStaleHours(status: ScheduleStatus | undefined, nowMs: number): boolean {
  const from = Math.floor(nowMs / HOUR_MS) * HOUR_MS - 23 * HOUR_MS;
  return (status?.recent ?? []).some((b) => ms(b.hour) < from);
}

/** What the owner knows to compute the schedule part. */
export interface ScheduleView {
  /** `metadata.generation` of the Schedule. */
  generation: number;
  /** `runs`: this generation runs; `kept`: refused, `runningGeneration` goes on; `refused`: nothing runs. */
  state: 'runs' | 'kept' | 'refused';
  reason?: 'SpecInvalid' | 'NameConflict';
  messages: string[];
  runningGeneration?: number;
  /** Next due and fire time of what runs (undefined when nothing runs or it never fires again). */
  nextDueMs?: number;
  nextFireMs?: number;
  /** `spec.suspend` of what runs. */
  specSuspended: boolean;
  /** Suspended at run time (`cronflock suspend`). */
  suspendedByCommand: boolean;
}

/** Longest condition message the API accepts (metav1.Condition). */
const MAX_MESSAGE = 32_768;

/**
 * The schedule part for `view`, keeping each condition's `lastTransitionTime` from `current` when its status
 * did not change. `nowMs` stamps the transitions that happen now.
 */
export function desiredSchedulePart(view: ScheduleView, current: SchedulePart, nowMs: number): SchedulePart {
  const g = view.generation;
  const conds: Omit<ScheduleCondition, 'lastTransitionTime'>[] = [];
  const invalidMsg = view.messages.join('; ').slice(0, MAX_MESSAGE);
  if (view.state === 'runs') {
    conds.push({ type: 'Ready', status: 'True', reason: 'Running', message: `the flock runs generation ${g}`, observedGeneration: g });
    conds.push({ type: 'Invalid', status: 'False', reason: 'Valid', message: 'the spec was loaded', observedGeneration: g });
  } else {
    const reason = view.reason ?? 'SpecInvalid';
    conds.push({
      type: 'Ready',
      status: 'False',
      reason: view.state === 'kept' ? 'PreviousGenerationRunning' : reason,
      message:
        view.state === 'kept'
          ? `generation ${g} is refused; generation ${view.runningGeneration ?? '?'} goes on running until the spec is fixed`
          : `generation ${g} is refused; nothing of this Schedule runs`,
      observedGeneration: g,
    });
    conds.push({ type: 'Invalid', status: 'True', reason, message: invalidMsg || 'refused', observedGeneration: g });
  }
  if (view.suspendedByCommand) {
    conds.push({ type: 'Suspended', status: 'True', reason: 'SuspendedByCommand', message: 'cronflock suspend: occurrences are recorded skipped until cronflock resume', observedGeneration: g });
  } else if (view.specSuspended) {
    conds.push({ type: 'Suspended', status: 'True', reason: 'SpecSuspended', message: 'spec.suspend is true: occurrences are recorded skipped', observedGeneration: g });
  } else {
    conds.push({ type: 'Suspended', status: 'False', reason: 'NotSuspended', message: 'neither spec.suspend nor cronflock suspend', observedGeneration: g });
  }
  const before = new Map((current.conditions ?? []).map((c) => [c.type, c]));
  const conditions = conds.map((c): ScheduleCondition => {
    const old = before.get(c.type);
    const lastTransitionTime = old && old.status === c.status ? old.lastTransitionTime : iso(nowMs);
    return { ...c, lastTransitionTime } as ScheduleCondition;
  });
  const out: SchedulePart = { observedGeneration: g, conditions };
  if (view.nextDueMs !== undefined) out.nextDueTime = iso(view.nextDueMs);
  if (view.nextFireMs !== undefined) out.nextFireTime = iso(view.nextFireMs);
  return out;
}

/** Deep equality of two JSON values with object keys in any order (status parts). */
export function sameJson(a: unknown, b: unknown): boolean {
  return canonicalJson(a) === canonicalJson(b);
}

function pick<T extends object, K extends readonly (keyof T)[]>(o: T, keys: K): Pick<T, K[number]> {
  const out: Partial<T> = {};
  for (const k of keys) if (o[k] !== undefined) out[k] = o[k];
  return out as Pick<T, K[number]>;
}
