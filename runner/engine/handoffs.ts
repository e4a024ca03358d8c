/**
 * Hand-offs: a replica that receives a delivery it may not run, because another live replica published the
 * definition that wins (definitions.ts: the definition loaded last wins; a rollout, a canary, a reload reaching
 * replicas at different times), hands it to that publisher instead of only giving it back to the shared queue.
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

/** Most hand-offs one replica takes per heartbeat; the rest wait for the next one. */
export const HANDOFF_TAKE_LIMIT = 200;

/** The delivery an entry of a handoffs set describes, or undefined when it is not one (dropped). */
export function parseHandoff(v: unknown): OccurrenceJobData | undefined {
  if (v === null || typeof v !== 'object') return undefined;
  const o = v as Record<string, unknown>;
  if (typeof o.schedule !== 'string' || typeof o.key !== 'string' || typeof o.dueMs !== 'number' || typeof o.fireMs !== 'number') return undefined;
  const origin = o.origin ?? 'schedule';
  if (origin !== 'schedule' && origin !== 'manual' && origin !== 'backfill' && origin !== 'resume') return undefined;
  return { schedule: o.schedule, key: o.key, dueMs: o.dueMs, fireMs: o.fireMs, origin };
}
