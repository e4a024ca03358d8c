/**
 * Helpers of the `kind: job` tests. The test lane has no controller-manager: no Job controller starts pods or
 * sets a Job's conditions, and no garbage collector finishes a foreground deletion. {@link JobLane} stands in
 * for both, the way the real ones act on the API: it marks Jobs `Complete` or `Failed` through the status
 * subresource (fixtures.ts `setJobFinished`), and removes the `foregroundDeletion` finalizer of a Job being
 * deleted in the foreground (the garbage collector does that once the Job's pods are gone; here it has none).
 * It also records every Job it saw created (uid per occurrence), so a test can tell whether an occurrence ever
 * had two Jobs, even after the history limits deleted them.
 */
import { patchObject, watchEvents, type KubeClient } from '../../k8s/index.js';
import { OCCURRENCE_ANNOTATION } from '../../jobs/job/schema.js';
import type { BatchJob } from '../../jobs/job/state.js';
import type { JobContext, SchedulePolicies } from '../../jobs/types.js';
import { setJobFinished } from './fixtures.js';
import { memoryLog } from './restore-support.js';

/** One event the lane saw, in order. */
export interface LaneEvent {
  type: 'ADDED' | 'MODIFIED' | 'DELETED';
  name: string;
  uid: string;
  occurrence: string;
  /** For a Job being deleted: its finalizers at that moment (`foregroundDeletion` for a Foreground delete). */
  finalizers: string[];
  deleting: boolean;
}

/** Options of {@link JobLane.start}. */
export interface JobLaneOptions {
  /**
   * How the "Job controller" finishes a new Job: after `afterMs`, with `outcome`; undefined leaves it running
   * (the test finishes it with {@link JobLane.finish}).
   */
  finish?: (job: BatchJob) => { afterMs: number; outcome: 'Complete' | 'Failed' } | undefined;
  /**
   * How long the "garbage collector" takes to end a foreground deletion, in ms; default 300 (a real one first
   * deletes the pods), so that a replacing run that does not wait for the deletion is caught creating too early.
   */
  gcDelayMs?: number;
}

/** The test's stand-in for the Job controller and the garbage collector in one namespace; see the module docs. */
export class JobLane {
  readonly events: LaneEvent[] = [];
  /** uids of the Jobs created for each occurrence (by the `cronflock.io/occurrence` annotation). */
  readonly created = new Map<string, Set<string>>();
  /** Names of Jobs finished by the lane, with their outcome. */
  readonly finished = new Map<string, 'Complete' | 'Failed'>();
  private readonly stopping = new AbortController();
  private readonly timers = new Set<NodeJS.Timeout>();
  private loop: Promise<void> = Promise.resolve();

  private constructor(
    private readonly admin: KubeClient,
    readonly namespace: string,
    private readonly options: JobLaneOptions,
  ) {}

  /** Starts watching the namespace's Jobs. */
  static async start(admin: KubeClient, namespace: string, options: JobLaneOptions = {}): Promise<JobLane> {
    const lane = new JobLane(admin, namespace, options);
    let ready!: () => void;
    const started = new Promise<void>((r) => (ready = r));
    lane.loop = lane.run(ready);
    await started;
    return lane;
  }

  private async run(ready: () => void): Promise<void> {
    let rv: string | undefined;
    let first = true;
    while (!this.stopping.signal.aborted) {
      try {
        const events = watchEvents<BatchJob>(this.admin, {
          apiVersion: 'batch/v1',
          kind: 'Job',
          namespace: this.namespace,
          ...(rv ? { resourceVersion: rv } : {}),
          signal: this.stopping.signal,
        });
        if (first) {
          first = false;
          ready(); // the watch request is sent with the first next(); events from now on are seen
        }
        for await (const ev of events) {
          rv = ev.object.metadata?.resourceVersion ?? rv;
          if (ev.type !== 'BOOKMARK') this.onEvent(ev.type, ev.object);
        }
      } catch (e) {
        if (this.stopping.signal.aborted) return;
        throw e;
      }
    }
  }

  private onEvent(type: 'ADDED' | 'MODIFIED' | 'DELETED', job: BatchJob): void {
    const m = job.metadata ?? {};
    const name = m.name ?? '';
    const uid = m.uid ?? '';
    const occurrence = m.annotations?.[OCCURRENCE_ANNOTATION] ?? '';
    const deleting = m.deletionTimestamp !== undefined;
    this.events.push({ type, name, uid, occurrence, finalizers: [...(m.finalizers ?? [])], deleting });
    if (type === 'ADDED') {
      if (!this.created.has(occurrence)) this.created.set(occurrence, new Set());
      this.created.get(occurrence)!.add(uid);
      const plan = this.options.finish?.(job);
      if (plan) this.later(plan.afterMs, () => this.finish(name, plan.outcome));
    }
    if (type !== 'DELETED' && deleting && m.finalizers?.includes('foregroundDeletion')) {
      // The garbage collector: the Job has no pods (no Job controller made any), so the foreground deletion can end.
      this.later(this.options.gcDelayMs ?? 300, () =>
        patchObject(this.admin, { apiVersion: 'batch/v1', kind: 'Job', namespace: this.namespace, name }, { metadata: { finalizers: null } }),
      );
    }
  }

  private later(ms: number, f: () => Promise<unknown>): void {
    const t = setTimeout(() => {
      this.timers.delete(t);
      void f().catch(() => undefined); // a Job deleted meanwhile
    }, ms);
    this.timers.add(t);
  }

  /** Marks Job `name` finished through the status subresource, as the Job controller would. */
  async finish(name: string, outcome: 'Complete' | 'Failed'): Promise<void> {
    if (this.stopping.signal.aborted) return;
    await setJobFinished(this.admin, this.namespace, name, outcome, new Date());
    this.finished.set(name, outcome);
  }

  /** Occurrences that got more than one Job, with their uids. */
  duplicates(): [string, string[]][] {
    return [...this.created].filter(([, uids]) => uids.size > 1).map(([o, uids]) => [o, [...uids]]);
  }

  async stop(): Promise<void> {
    this.stopping.abort();
    for (const t of this.timers) clearTimeout(t);
    await this.loop.catch(() => undefined);
  }
}

/** A job context for calling `runJob` directly (as one claimant of one occurrence would). */
export function jobContext(
  schedule: string,
  dueMs: number,
  o: { fencingToken?: number; attempt?: number; origin?: 'schedule' | 'manual' | 'backfill' | 'resume'; signal?: AbortSignal; key?: string } & Partial<SchedulePolicies> = {},
): JobContext & { log: ReturnType<typeof memoryLog> } {
  const key = o.key ?? `${schedule}@${new Date(dueMs).toISOString()}`;
  return {
    occurrence: {
      schedule,
      key,
      dueMs,
      fireMs: dueMs,
      startMs: Date.now(),
      attempt: o.attempt ?? 1,
      fencingToken: o.fencingToken ?? 1,
      manual: (o.origin ?? 'schedule') !== 'schedule',
      origin: o.origin ?? 'schedule',
    },
    signal: o.signal ?? new AbortController().signal,
    log: memoryLog(),
    replica: 'test',
    schedule: { concurrencyPolicy: o.concurrencyPolicy ?? 'Allow', timeoutMs: o.timeoutMs ?? null },
  };
}
