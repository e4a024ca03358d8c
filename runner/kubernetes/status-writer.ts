/**
 * Writes Schedule status: server-side apply on the `status` subresource, one field manager per part
 * (`cronflock-runs`, `cronflock-schedule`; status.ts says who writes which), coalesced per Schedule and part.
 *
 * Why a resourceVersion precondition and not field ownership alone: ownership says WHO may set a field, not
 * WHICH value is newer. Every replica writes the runs part under the same manager name, and two claimants of
 * different occurrences (or a stale claimant after a SIGSTOP) race to set `lastResult`. So each write is a
 * compare-and-set: read the object (the watch's copy, else a GET), compute the part from it with the rules of
 * status.ts (nothing moves backwards), and apply with `metadata.resourceVersion` set: the API server refuses
 * the apply with 409 Conflict when anything changed the object since it was read; then the writer reads again
 * and decides again (up to 8 times, after a random wait that grows; then the updates wait for the next write).
 * The whole part is applied each time (computed from what was read), so
 * SSA's rule "fields this manager no longer sends are removed" removes exactly what the rules removed.
 *
 * Load: changes to one Schedule's part are queued and applied together: the first waits `coalesceMs` (250 ms)
 * for others (a short run's start and result are one write), then at most one write per part every
 * `minIntervalMs` (1 s); unchanged parts are not written; the client's token bucket (k8s/ratelimit.ts) bounds
 * the whole replica.
 */
import { getObject, isK8sError, serverSideApply, type KubeClient } from '../../k8s/index.js';
import type { Logger } from '../log.js';
import { API_VERSION, KIND, refKey, type ScheduleObject, type ScheduleRef, type ScheduleStatus } from './resource.js';
import { runsPart, sameJson, schedulePart, type RunsPart, type SchedulePart } from './status.js';
import { sleep } from '../time/wait.js';

/** Which part of the status, and its field manager. */
export type StatusPart = 'runs' | 'schedule';

/** Field manager of each part. */
export const FIELD_MANAGERS: Record<StatusPart, string> = { runs: 'cronflock-runs', schedule: 'cronflock-schedule' };

/** Computes a part from the current status (and object); undefined = leave it as it is. */
export type PartUpdate = (status: ScheduleStatus, object: ScheduleObject) => RunsPart | SchedulePart | undefined;

/** Options of a {@link StatusWriter}. */
export interface StatusWriterOptions {
  client: KubeClient;
  /** The watch's copy of a Schedule (fresh enough to avoid most conflicts); undefined = GET it. */
  cached: (namespace: string, name: string) => ScheduleObject | undefined;
  log: Logger;
  /** Least time between two writes of one part of one Schedule, in ms; default 1 000. */
  minIntervalMs?: number;
  /**
   * How long the first update waits for others before it is written, in ms; default 250: a short run's start
   * and result become one write (and it is not shown ACTIVE for the second until the next write may go).
   */
  coalesceMs?: number;
  /** Compare-and-set attempts per write; default 8. */
  maxAttempts?: number;
}

interface Queue {
  ref: ScheduleRef;
  part: StatusPart;
  updates: PartUpdate[];
  timer?: NodeJS.Timeout;
  writing?: Promise<void>;
  lastWriteMs: number;
  /** Failed writes in a row whose updates were kept for the next one. */
  requeues?: number;
}

/** Writes whose updates are kept after a transient failure, before they are dropped. */
const MAX_REQUEUES = 10;

/** Coalescing compare-and-set status writer; see the module docs. */
export class StatusWriter {
  private readonly queues = new Map<string, Queue>();
  private latest = new Map<string, ScheduleObject>();
  private stopped = false;
  /** Counts since start (tests, logs). */
  readonly stats = { writes: 0, conflicts: 0, unchanged: 0, gone: 0, failed: 0 };

  constructor(private readonly o: StatusWriterOptions) {}

  /**
   * Queues `update` for one part of the Schedule `ref` (identified by uid: a re-created Schedule of the same
   * name is not written). Updates are applied in order, together with the others queued for that part.
   */
  update(ref: ScheduleRef, part: StatusPart, update: PartUpdate): void {
    if (this.stopped) return;
    const key = `${refKey(ref)}|${part}`;
    let q = this.queues.get(key);
    if (!q) {
      q = { ref, part, updates: [], lastWriteMs: 0 };
      this.queues.set(key, q);
    }
    q.ref = ref;
    q.updates.push(update);
    this.schedule(key, q);
  }

  /**
   * Writes what is queued now, without waiting for the interval (and waits for writes in flight); updates kept
   * after a transient failure are tried again, a bounded number of times. For shutdown and tests.
   */
  async flush(): Promise<void> {
    for (let pass = 0; pass <= MAX_REQUEUES; pass++) {
      let pending = false;
      for (const [key, q] of [...this.queues]) {
        if (q.timer) clearTimeout(q.timer);
        q.timer = undefined;
        await q.writing;
        if (q.updates.length > 0) {
          pending = true;
          await this.write(key, q);
        }
      }
      if (!pending) return;
    }
  }

  /** Writes what is queued, then drops further updates. */
  async stop(): Promise<void> {
    await this.flush();
    this.stopped = true;
  }

  private schedule(key: string, q: Queue): void {
    if (q.timer || q.writing) return;
    const wait = Math.max(this.o.coalesceMs ?? 250, q.lastWriteMs + (this.o.minIntervalMs ?? 1_000) - Date.now());
    q.timer = setTimeout(() => {
      q.timer = undefined;
      void this.write(key, q);
    }, wait);
    q.timer.unref?.();
  }

  private async write(key: string, q: Queue): Promise<void> {
    const updates = q.updates.splice(0);
    if (updates.length === 0) return;
    q.writing = this.casApply(q.ref, q.part, updates)
      .then(() => {
        q.requeues = 0;
      })
      .catch((err: Error) => {
        // A transient failure (contention, the API server busy or away) keeps the updates for the next write:
        // status must not lose an outcome. Others (forbidden, invalid) would fail again: drop them, loudly.
        const again = isK8sError(err, 'CONFLICT', 'TOO_MANY_REQUESTS', 'SERVER_ERROR', 'NETWORK', 'TIMEOUT') && (q.requeues ?? 0) < MAX_REQUEUES;
        if (again) {
          q.requeues = (q.requeues ?? 0) + 1;
          q.updates.unshift(...updates);
        } else this.stats.failed++;
        this.o.log.warn({ schedule: refKey(q.ref), part: q.part, err: err.message, retrying: again }, 'writing Schedule status failed');
      })
      .finally(() => {
        q.writing = undefined;
        q.lastWriteMs = Date.now();
        if (q.updates.length > 0) this.schedule(key, q);
        else if (!q.timer) this.queues.delete(key);
      });
    await q.writing;
  }

  private async casApply(ref: ScheduleRef, part: StatusPart, updates: PartUpdate[]): Promise<void> {
    let obj: ScheduleObject | undefined = this.freshest(ref);
    const attempts = this.o.maxAttempts ?? 8;
    for (let attempt = 1; ; attempt++) {
      obj ??= await this.get(ref);
      if (!obj || obj.metadata.uid !== ref.uid) {
        this.stats.gone++;
        return; // deleted (or re-created: a new object with its own status)
      }
      const status = obj.status ?? {};
      const before = part === 'runs' ? runsPart(status) : schedulePart(status);
      let next: RunsPart | SchedulePart = before;
      for (const u of updates) next = u({ ...status, ...next }, obj) ?? next;
      if (sameJson(before, next)) {
        this.stats.unchanged++;
        return;
      }
      try {
        const written = await serverSideApply<ScheduleObject>(
          this.o.client,
          {
            apiVersion: API_VERSION,
            kind: KIND,
            metadata: { name: ref.name, namespace: ref.namespace, resourceVersion: obj.metadata.resourceVersion },
            status: next,
          },
          { fieldManager: FIELD_MANAGERS[part], force: true, subresource: 'status' },
        );
        this.stats.writes++;
        this.latest.set(refKey(ref), written);
        return;
      } catch (e) {
        if (isK8sError(e, 'NOT_FOUND')) {
          this.stats.gone++;
          return;
        }
        if (!isK8sError(e, 'CONFLICT') || attempt >= attempts) throw e;
        this.stats.conflicts++;
        obj = undefined; // changed since it was read: read again, decide again
        // Writers that collided retry at random moments, so that they do not collide again in lockstep.
        await sleep(Math.random() * Math.min(1_000, 20 * 2 ** attempt));
      }
    }
  }

  /** The newer of the watch's copy and this writer's last answer (resourceVersions of one etcd are numbers). */
  private freshest(ref: ScheduleRef): ScheduleObject | undefined {
    const cached = this.o.cached(ref.namespace, ref.name);
    const mine = this.latest.get(refKey(ref));
    if (!mine || mine.metadata.uid !== ref.uid) return cached;
    if (!cached) return mine;
    const a = Number(cached.metadata.resourceVersion);
    const b = Number(mine.metadata.resourceVersion);
    return Number.isFinite(a) && Number.isFinite(b) && b > a ? mine : cached;
  }

  private async get(ref: ScheduleRef): Promise<ScheduleObject | undefined> {
    try {
      return await getObject<ScheduleObject>(this.o.client, { apiVersion: API_VERSION, kind: KIND, namespace: ref.namespace, name: ref.name });
    } catch (e) {
      if (isK8sError(e, 'NOT_FOUND')) return undefined;
      throw e;
    }
  }
}
