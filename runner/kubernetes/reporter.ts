/**
 * What a replica tells Kubernetes about the Schedules it runs: status (status.ts, status-writer.ts) and
 * Events (events.ts), each by the replica that owns the change:
 * - the claimant of an occurrence: its start (Started, or Reclaimed after a lost claim or hand-over), a retry
 *   (Retrying), its result (Succeeded, Failed); from the executor's run events on this replica;
 * - whichever replica recorded an occurrence missed or skipped (the planner, or the claim script at the fire
 *   time): Missed, Skipped;
 * - the Schedule's rendezvous owner among the live replicas (ownership.ts' hashing over the planner's
 *   membership, keyed by `<namespace>/<name>`): `observedGeneration`, `nextDueTime`, `nextFireTime` and the
 *   conditions (`Ready`, `Invalid` with the loader's message, `Suspended`), once a second when they changed;
 *   it also removes `active` entries whose occurrence Redis has closed (a claimant that died before writing
 *   its result) and hourly counts older than 24 hours.
 * Occurrences skipped because the schedule is suspended get no Event (the `Suspended` condition says it, the
 * counts include them): a suspended schedule would otherwise post an Event at every due time.
 */
import type { PlannedFinalEvent, RunEvent } from '../engine/events.js';
import type { Replica } from '../engine/replica.js';
import { OwnershipView } from '../engine/ownership.js';
import type { Logger } from '../log.js';
import { fireTimeMs } from '../schedule/occurrence.js';
import { formatDurationMs } from '../time/duration.js';
import type { Combined, SourcedSchedule } from '../sources/combine.js';
import type { EventRecorder, ScheduleEvent } from './events.js';
import { refKey, type ScheduleRef } from './resource.js';
import type { ScheduleSource } from './source.js';
import {
  applyRunChanges,
  desiredSchedulePart,
  hasStaleHours,
  runsPart,
  sameJson,
  schedulePart,
  type FinalState,
  type RunChange,
  type ScheduleView,
} from './status.js';
import type { StatusWriter } from './status-writer.js';

/** Options of a {@link KubernetesReporter}. */
export interface ReporterOptions {
  source: ScheduleSource;
  writer: StatusWriter;
  events: EventRecorder;
  log: Logger;
  /** This replica's name. */
  replica: string;
  /** Period of the owner's check, in ms; default 1 000. */
  ownerPeriodMs?: number;
}

const FINAL_STATES = new Set(['succeeded', 'failed', 'missed', 'skipped']);

/** Status and Events of the cluster's Schedules, from one replica; see the module docs. */
export class KubernetesReporter {
  private byName = new Map<string, { ref: ScheduleRef; running: SourcedSchedule }>();
  private latest: Combined | undefined;
  private replica: Replica | undefined;
  private timer: NodeJS.Timeout | undefined;
  private checking = false;

  constructor(private readonly o: ReporterOptions) {}

  /** Starts the owner's periodic check on `replica` (its membership, clock and Redis). */
  attach(replica: Replica): void {
    this.replica = replica;
    const loop = (): void => {
      this.timer = setTimeout(() => {
        void this.ownerCheck()
          .catch((err: Error) => this.o.log.warn({ err: err.message }, 'Schedule status check failed'))
          .finally(() => {
            if (this.timer) loop();
          });
      }, this.o.ownerPeriodMs ?? 1_000);
      this.timer.unref?.();
    };
    loop();
  }

  /** Stops the periodic check and sends what is queued. */
  async stop(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    await Promise.all([this.o.writer.stop(), this.o.events.stop()]);
  }

  /** The combination the replica runs now (after start and each reload). */
  applied(c: Combined): void {
    this.latest = c;
    const byName = new Map<string, { ref: ScheduleRef; running: SourcedSchedule }>();
    for (const r of c.runs) if (r.origin) byName.set(r.schedule.name, { ref: r.origin.ref, running: r });
    this.byName = byName;
    if (this.replica) void this.ownerCheck().catch(() => undefined);
  }

  /** A run event of this replica's executor. */
  onRun(e: RunEvent): void {
    const s = this.byName.get(e.schedule);
    if (!s) return;
    const { ref } = s;
    const now = e.endMs ?? e.startMs ?? Date.now();
    switch (e.state) {
      case 'started':
        this.runs(ref, { type: 'started', occurrence: e.key, dueMs: e.dueMs, replica: e.replica, fencingToken: e.fencingToken ?? 0, attempt: e.attempt ?? 1, startMs: e.startMs ?? now });
        void this.startEvents(ref, e);
        return;
      case 'succeeded':
      case 'failed':
        this.final(ref, e, e.state, e.error, now);
        return;
      case 'stalled-out':
        this.final(ref, e, 'failed', e.error ?? 'stalled: its claimants stopped renewing more often than --max-stalls allows', now);
        return;
      case 'missed':
      case 'skipped':
        this.final(ref, e, e.state, e.error ?? (e.state === 'missed' ? 'starting deadline exceeded' : undefined), now);
        return;
      case 'retrying':
        this.runs(ref, { type: 'released', occurrence: e.key, fencingToken: e.fencingToken ?? 0 });
        this.event(ref, e.key, 'Retrying', 'Warning', `attempt-${e.attempt ?? 0}`, `${e.key}: attempt ${e.attempt ?? '?'} failed on ${e.replica} and will be retried: ${e.error ?? ''}`, now);
        return;
      case 'lost':
      case 'handover':
        this.runs(ref, { type: 'released', occurrence: e.key, fencingToken: e.fencingToken ?? 0 });
        return;
      default:
        return; // final (already closed), stale: nothing happened
    }
  }

  /** An occurrence this replica's planner recorded missed or skipped. */
  onPlannedFinal(o: PlannedFinalEvent): void {
    const s = this.byName.get(o.schedule);
    if (!s) return;
    const now = this.replica?.clock.now() ?? Date.now();
    this.runs(s.ref, { type: 'final', occurrence: o.key, dueMs: o.dueMs, state: o.state, reason: o.reason, replica: this.o.replica, atMs: now });
    if (o.reason !== 'suspended') {
      this.event(s.ref, o.key, o.state === 'missed' ? 'Missed' : 'Skipped', o.state === 'missed' ? 'Warning' : 'Normal', '', `${o.key}: ${o.state}: ${o.reason}`, now);
    }
  }

  private final(ref: ScheduleRef, e: RunEvent, state: FinalState, reason: string | undefined, now: number): void {
    this.runs(ref, {
      type: 'final',
      occurrence: e.key,
      dueMs: e.dueMs,
      state,
      ...(reason ? { reason } : {}),
      replica: e.replica,
      ...(e.fencingToken !== undefined ? { fencingToken: e.fencingToken } : {}),
      ...(e.attempt !== undefined ? { attempt: e.attempt } : {}),
      ...(e.startMs !== undefined ? { latenessMs: e.startMs - e.fireMs, startMs: e.startMs } : {}),
      ...(e.endMs !== undefined ? { endMs: e.endMs } : {}),
      atMs: now,
    });
    if (state === 'skipped' && reason === 'suspended') return;
    const took = e.startMs !== undefined && e.endMs !== undefined ? ` in ${formatDurationMs(Math.max(0, e.endMs - e.startMs))}` : '';
    const on = e.fencingToken ? ` on ${e.replica} (attempt ${e.attempt ?? '?'}, fencing token ${e.fencingToken})` : ` by ${e.replica}`;
    const what: Record<FinalState, [ScheduleEvent['reason'], ScheduleEvent['type'], string]> = {
      succeeded: ['Succeeded', 'Normal', `succeeded${on}${took}`],
      failed: ['Failed', 'Warning', `failed${on}${took}: ${reason ?? 'job failed'}`],
      missed: ['Missed', 'Warning', `missed: ${reason ?? ''}`],
      skipped: ['Skipped', 'Normal', `skipped: ${reason ?? ''}`],
    };
    const [r, type, note] = what[state];
    this.event(ref, e.key, r, type, '', `${e.key} ${note}`, now);
  }

  /** Started (per attempt that is not a re-claim) and Reclaimed (after a lost claim or a hand-over). */
  private async startEvents(ref: ScheduleRef, e: RunEvent): Promise<void> {
    const at = e.startMs ?? Date.now();
    const attempt = e.attempt ?? 1;
    let failures = 0;
    let reclaims = 0;
    if (attempt > 1 && this.replica) {
      // Which earlier attempts failed (retries) and which were lost (stalls) or handed over, from the run
      // record: each count names one Event, so the Event for this claim is the one not created yet.
      const [stalls, handovers, failed] = await this.replica.store.redis
        .hmget(this.replica.keys.occurrence(e.key), 'stalls', 'handovers', 'failures')
        .catch(() => [null, null, null]);
      failures = Number(failed ?? 0);
      reclaims = Number(stalls ?? 0) + Number(handovers ?? 0);
    }
    const late = e.startMs !== undefined ? `, ${formatDurationMs(Math.max(0, e.startMs - e.fireMs))} after its fire time` : '';
    const retry = failures > 0 ? ` (retry ${failures})` : '';
    this.event(ref, e.key, 'Started', 'Normal', `start-${failures}`, `${e.key} started on ${e.replica}${retry} (attempt ${attempt}, fencing token ${e.fencingToken ?? '?'}${late})`, at);
    if (reclaims > 0) {
      this.event(ref, e.key, 'Reclaimed', 'Warning', `reclaim-${reclaims}`, `${e.key} re-claimed by ${e.replica} (attempt ${attempt}, fencing token ${e.fencingToken ?? '?'}) after its claimant lost its claim or handed it over`, at);
    }
  }

  private runs(ref: ScheduleRef, change: RunChange): void {
    this.o.writer.update(ref, 'runs', (status) => applyRunChanges(runsPart(status), [change]));
  }

  private event(ref: ScheduleRef, occurrence: string, reason: ScheduleEvent['reason'], type: ScheduleEvent['type'], discriminator: string, note: string, atMs: number): void {
    this.o.events.record({ ref, occurrence, reason, type, discriminator, note, atMs });
  }

  /** The rendezvous owner's part: see the module docs. */
  private async ownerCheck(): Promise<void> {
    const replica = this.replica;
    const latest = this.latest;
    if (!replica || !latest || this.checking) return;
    this.checking = true;
    try {
      const live = new Set(replica.live.members());
      live.add(this.o.replica);
      const view = new OwnershipView([...live].map((r) => ({ replica: r, digest: '' })), this.o.replica, '');
      const now = replica.clock.now();
      const owned = latest.cluster.filter((v) => view.owns(refKey(v.loaded.ref)));
      if (owned.length === 0) return;
      const suspended = await replica.store.redis.hgetall(replica.keys.suspended).catch(() => ({}) as Record<string, string>);
      for (const v of owned) {
        const ref = v.loaded.ref;
        const obj = this.o.source.object(ref.namespace, ref.name);
        if (!obj || obj.metadata.uid !== ref.uid) continue;
        const running = latest.runs.find((r) => r.origin?.ref.uid === ref.uid)?.schedule;
        const nextDue = running ? running.due.next(now) : null;
        const sv: ScheduleView = {
          generation: v.loaded.generation,
          state: v.state,
          ...(v.reason ? { reason: v.reason } : {}),
          messages: v.messages,
          ...(v.runningGeneration !== undefined ? { runningGeneration: v.runningGeneration } : {}),
          ...(running && nextDue !== null ? { nextDueMs: nextDue, nextFireMs: fireTimeMs(running.name, nextDue, running.jitterMs) } : {}),
          specSuspended: running?.suspend ?? false,
          suspendedByCommand: running !== undefined && suspended[running.name] !== undefined,
        };
        if (!sameJson(desiredSchedulePart(sv, schedulePart(obj.status), now), schedulePart(obj.status))) {
          this.o.writer.update(ref, 'schedule', (status) => desiredSchedulePart(sv, schedulePart(status), now));
        }
        const closed = await this.closedActive(replica, obj.status?.active ?? [], now);
        const changes: RunChange[] = closed.map((a) => ({ type: 'released', occurrence: a.occurrence, fencingToken: a.fencingToken }));
        // A Schedule that has not run yet shows ACTIVE 0, not nothing; old hourly counts leave the 24 hours.
        if (hasStaleHours(obj.status, now) || obj.status?.activeCount === undefined) changes.push({ type: 'tick', atMs: now });
        if (changes.length > 0) this.o.writer.update(ref, 'runs', (status) => applyRunChanges(runsPart(status), changes));
      }
    } finally {
      this.checking = false;
    }
  }

  /**
   * `active` entries whose claim is over in Redis (the occurrence is final or expired, or another claim
   * holds it) although nobody removed them: their claimant died before writing its result. Entries younger
   * than two lock periods are left alone (their claimant's write may be on its way).
   */
  private async closedActive(replica: Replica, active: readonly { occurrence: string; fencingToken: number; startTime: string }[], now: number): Promise<typeof active> {
    const old = active.filter((a) => Date.parse(a.startTime) < now - 2 * replica.opts.lockMs);
    const out: typeof active[number][] = [];
    for (const a of old) {
      const [state, token] = await replica.store.redis.hmget(replica.keys.occurrence(a.occurrence), 'state', 'token');
      if (state == null || FINAL_STATES.has(state) || Number(token) !== a.fencingToken) out.push(a);
    }
    return out;
  }
}
