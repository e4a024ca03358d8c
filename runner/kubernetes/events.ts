/**
 * Kubernetes Events about Schedules: one Event per occurrence outcome (Started, Succeeded, Failed, Retrying,
 * Missed, Skipped, Reclaimed), created by the replica that recorded the outcome, exactly once across the
 * flock: the Event's name is a hash of the Schedule's uid, the occurrence, the outcome and what makes the
 * outcome distinct (the retry or re-claim count), so creating it again answers 409 AlreadyExists, which is a
 * no-op, never a second Event.
 *
 * API: core `v1` Events, with every field both Event APIs know: `involvedObject` (the Schedule), `message`,
 * `firstTimestamp`/`lastTimestamp` and `count: 1`, `source` (component `cronflock`, host the replica), and the
 * newer `eventTime` (microseconds), `reportingComponent` `cronflock.io/cronflock`, `reportingInstance` (the
 * replica) and `action` `Run`. Why not events.k8s.io/v1: it refuses the timestamps and `source` on create, and
 * `kubectl describe` (v1.37) orders Events by `lastTimestamp`, so Events without it are listed in no order;
 * these are listed in time order, show the replica under FROM, and appear in events.k8s.io/v1 too (the same
 * objects: `note`, `regarding`, `reportingController`).
 *
 * Load: Events are created one at a time in the background (after the client's rate limit); at most
 * `maxPending` (1 000) wait, older ones are dropped first and counted (a catch-up that records thousands of
 * missed occurrences at once must not hold the replica's memory or its API budget).
 */
import { createHash } from 'node:crypto';
import { createObject, isK8sError, type KubeClient } from '../../k8s/index.js';
import type { Logger } from '../log.js';
import { API_VERSION, KIND, type ScheduleRef } from './resource.js';

/** Reasons of the Events (CamelCase, as Kubernetes reasons are). */
export type EventReason = 'Started' | 'Succeeded' | 'Failed' | 'Retrying' | 'Missed' | 'Skipped' | 'Reclaimed';

/** One Event to create. */
export interface ScheduleEvent {
  ref: ScheduleRef;
  reason: EventReason;
  type: 'Normal' | 'Warning';
  /** Occurrence key. */
  occurrence: string;
  /** Makes repeated outcomes of one occurrence distinct (e.g. the retry number); '' when there is one. */
  discriminator: string;
  /** Human-readable, at most 1 KB (longer notes are cut). */
  note: string;
  /** When it happened, UTC ms. */
  atMs: number;
}

/** `reportingComponent` (events.k8s.io: `reportingController`) of cronflock's Events. */
export const REPORTING_CONTROLLER = 'cronflock.io/cronflock';

/**
 * The Event's name: `<schedule object name>.<16 hex digits>` of sha256 over uid, occurrence, reason and
 * discriminator. The same on every replica, so a second create of the same outcome is refused (409).
 */
export function eventName(e: Pick<ScheduleEvent, 'ref' | 'occurrence' | 'reason' | 'discriminator'>): string {
  const h = createHash('sha256').update(`${e.ref.uid}\n${e.occurrence}\n${e.reason}\n${e.discriminator}`).digest('hex');
  return `${e.ref.name}.${h.slice(0, 16)}`;
}

/** `firstTimestamp`/`lastTimestamp` (metav1.Time: RFC 3339, whole seconds). */
function seconds(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}

/** `eventTime` (metav1.MicroTime: RFC 3339 with six fractional digits). */
function microTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

/** Creates Schedule Events in the background; see the module docs. */
export class EventRecorder {
  private readonly pending: ScheduleEvent[] = [];
  private running: Promise<void> | undefined;
  private stopped = false;
  /** Counts since start (tests, logs). */
  readonly stats = { created: 0, existed: 0, dropped: 0, failed: 0 };

  constructor(
    private readonly client: KubeClient,
    private readonly replica: string,
    private readonly log: Logger,
    private readonly maxPending = 1_000,
  ) {}

  /** Queues an Event (dropping the oldest queued one when `maxPending` are waiting). */
  record(e: ScheduleEvent): void {
    if (this.stopped) return;
    this.pending.push(e);
    if (this.pending.length > this.maxPending) {
      this.pending.shift();
      if (this.stats.dropped++ % 100 === 0) this.log.warn({ dropped: this.stats.dropped }, 'too many Events waiting; dropping the oldest');
    }
    this.running ??= this.drain().finally(() => (this.running = undefined));
  }

  /** Waits until every queued Event was sent. */
  async flush(): Promise<void> {
    while (this.running) await this.running;
  }

  /** Sends what is queued, then drops further Events. */
  async stop(): Promise<void> {
    await this.flush();
    this.stopped = true;
  }

  private async drain(): Promise<void> {
    for (let e = this.pending.shift(); e; e = this.pending.shift()) await this.create(e);
  }

  private async create(e: ScheduleEvent): Promise<void> {
    const instance = this.replica.slice(0, 128);
    const note = Buffer.byteLength(e.note) > 1024 ? `${Buffer.from(e.note).subarray(0, 1000).toString()}…` : e.note;
    try {
      await createObject(this.client, {
        apiVersion: 'v1',
        kind: 'Event',
        metadata: { name: eventName(e), namespace: e.ref.namespace, labels: { 'cronflock.io/schedule': e.ref.name } },
        involvedObject: { apiVersion: API_VERSION, kind: KIND, namespace: e.ref.namespace, name: e.ref.name, uid: e.ref.uid },
        reason: e.reason,
        type: e.type,
        message: note,
        firstTimestamp: seconds(e.atMs),
        lastTimestamp: seconds(e.atMs),
        count: 1,
        source: { component: 'cronflock', host: instance },
        eventTime: microTime(e.atMs),
        reportingComponent: REPORTING_CONTROLLER,
        reportingInstance: instance,
        action: 'Run',
      });
      this.stats.created++;
    } catch (err) {
      if (isK8sError(err, 'CONFLICT')) {
        this.stats.existed++; // another replica (or an earlier try) created it: one Event per outcome
        return;
      }
      this.stats.failed++;
      this.log.warn({ schedule: `${e.ref.namespace}/${e.ref.name}`, reason: e.reason, occurrence: e.occurrence, err: (err as Error).message }, 'creating a Schedule Event failed');
    }
  }
}
