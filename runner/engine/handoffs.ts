/**
 * Hand-offs: a replica that receives a delivery it may not or cannot run hands it to a replica that can, instead
 * of only giving it back to the shared queue:
 * - another live replica published the definition that wins (definitions.ts: the definition loaded last wins; a
 *   rollout, a canary, a reload reaching replicas at different times): to that publisher;
 * - the job needs what this process lacks (`kind: handler` without that handler registered here: applications
 *   whose replicas register different handlers, a rollout adding one): to a live replica that publishes it
 *   ({@link CapabilityDirectory}).
 *
 * Why: the delivery queue is shared, and BullMQ cannot address a job to one worker. Given back alone, the job goes
 * to whichever replica asks next, which may again be one without the winning definition: each such round costs a
 * second, and in a rollout where most replicas are still old, a run came seconds late (seen in
 * test/integration/reload.test.ts). Handed off, it reaches a replica that can run it within a heartbeat.
 *
 * How: the delivery's JSON goes into the publisher's ZSET (`{ns}:handoffs:<replica>`, scored by fire time); the
 * publisher's heartbeat answers how many wait (lua/heartbeat.lua), and then the executor takes those firing
 * within the prefetch (lua/handoff-take.lua) and processes each as it would a member of a batch. The delivery job
 * itself stays in the queue, given back for a second as before: the hand-off is a shortcut, never the only copy,
 * so a publisher that dies with entries taken loses nothing, and the claim (claim.lua) still lets exactly one
 * delivery run the occurrence; the others find it held or final.
 */
import type { OccurrenceJobData } from './enqueue.js';
import type { RedisClient } from '../redis/connect.js';
import type { Keyspace } from '../redis/keys.js';
import { jobKinds } from '../../jobs/registry.js';

/** Most hand-offs one replica takes per heartbeat; the rest wait for the next one. */
export const HANDOFF_TAKE_LIMIT = 200;

/**
 * The delivery an entry of a handoffs set describes (its JSON text), or undefined when it is not one: dropped, the
 * delivery job itself still exists.
 */
export function parseHandoff(raw: string): OccurrenceJobData | undefined {
  let v: unknown;
  try {
    v = JSON.parse(raw);
  } catch {
    return undefined;
  }
  if (v === null || typeof v !== 'object') return undefined;
  const o = v as Record<string, unknown>;
  if (typeof o.schedule !== 'string' || typeof o.key !== 'string' || typeof o.dueMs !== 'number' || typeof o.fireMs !== 'number') return undefined;
  const origin = o.origin ?? 'schedule';
  if (origin !== 'schedule' && origin !== 'manual' && origin !== 'backfill' && origin !== 'resume') return undefined;
  return { schedule: o.schedule, key: o.key, dueMs: o.dueMs, fireMs: o.fireMs, origin };
}

/** How long a read of the published capabilities serves (ms): they change when a replica starts or stops. */
export const CAPABILITIES_READ_EVERY_MS = 2_000;

/**
 * What each replica can run that others may not (HASH `{ns}:replicas:can`, replica → space-separated
 * capabilities such as `handler:sendReport`, from {@link JobKind.capabilities}): written by each replica's every
 * heartbeat with its membership ({@link mine}, lua/heartbeat.lua), removed when it leaves or its membership
 * expires (heartbeat.lua), and read on demand, at most every {@link CAPABILITIES_READ_EVERY_MS}, by a replica
 * looking for where to hand a delivery it cannot run.
 *
 * Why every heartbeat, not only when they change: a replica whose process starved past the membership TTL (2 s;
 * a loaded CI host) had its entry removed by another's heartbeat and, published only on change, never wrote it
 * again; no replica handed it a delivery afterwards, and its handler's runs came only when the shared queue
 * happened to deliver them to it, seconds late or not at all (test/integration/handoff-handlers.test.ts).
 */
export class CapabilityDirectory {
  private read: { atMs: number; byReplica: Map<string, Set<string>> } | undefined;
  private reading: Promise<Map<string, Set<string>>> | undefined;

  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keyspace,
    private readonly replica: string,
    /** Who is a live member now (the planner's membership view). */
    private readonly live: { has(replica: string): boolean },
  ) {}

  /**
   * This process's capabilities as the heartbeat publishes them: space-separated, sorted ('' when it has none:
   * the heartbeat then removes its entry).
   */
  mine(): string {
    return jobKinds.flatMap((k) => k.capabilities?.() ?? []).sort().join(' ');
  }

  /** A live replica other than this one that publishes `capability` (chosen at random), or undefined. */
  async replicaWith(capability: string): Promise<string | undefined> {
    const byReplica = await this.current();
    const able = [...byReplica].filter(([r, caps]) => r !== this.replica && caps.has(capability) && this.live.has(r)).map(([r]) => r);
    return able.length === 0 ? undefined : able[Math.floor(Math.random() * able.length)];
  }

  private async current(): Promise<Map<string, Set<string>>> {
    const now = performance.now();
    if (this.read && now - this.read.atMs < CAPABILITIES_READ_EVERY_MS) return this.read.byReplica;
    this.reading ??= this.redis
      .hgetall(this.keys.replicaCapabilities)
      .then((all) => {
        const byReplica = new Map(Object.entries(all).map(([r, caps]) => [r, new Set(caps.split(' '))]));
        this.read = { atMs: performance.now(), byReplica };
        return byReplica;
      })
      .finally(() => {
        this.reading = undefined;
      });
    return this.reading;
  }
}
