/**
 * Where the outbox lives in Redis, over the flock's Keyspace (runner/redis/keys.ts): every key under its hash
 * tag, so one Cluster slot. The Lua side (`emitOutcome` in runner/redis/lua/includes/outbox.lua) derives the
 * stream and `last` from a run record's key; keep the two in step.
 */
import type { Keyspace } from '../redis/keys.js';

/** Key names of the outbox of one flock (all under the flock's hash tag, so one Cluster slot). */
export class OutboxKeys {
  constructor(private readonly keys: Keyspace) {}
  private get ns(): string {
    return this.keys.ns;
  }
  /** STREAM of outcomes and summaries not yet delivered. */
  get stream(): string {
    return `${this.ns}:outbox`;
  }
  /** HASH schedule → last outcome among succeeded, failed, missed (for recovered). */
  get last(): string {
    return `${this.ns}:outbox:last`;
  }
  /** HASH `<event>/<channel>` → delivery state of one entry. */
  deliveries(entryId: string): string {
    return `${this.ns}:outbox:d:${entryId}`;
  }
  /** HASH of the rate window of a schedule on a channel. */
  rate(schedule: string, channel: string): string {
    return `${this.ratePrefix}${schedule}:${channel}`;
  }
  /** Prefix of the rate windows' keys (the tick derives each from a summaries member). */
  get ratePrefix(): string {
    return `${this.ns}:outbox:rate:`;
  }
  /** ZSET consumer → expiry (Redis ms): deliverers alive now; a dead one's `sending` leases are taken over. */
  get consumers(): string {
    return `${this.ns}:outbox:consumers`;
  }
  /** ZSET `<schedule>|<channel>|<window start>` → window end: windows that owe a summary. */
  get summaries(): string {
    return `${this.ns}:outbox:summaries`;
  }
}
