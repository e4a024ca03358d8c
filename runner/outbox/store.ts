/**
 * Typed access to the outbox in Redis: the stream `{ns}:outbox` (written by the engine's scripts, see
 * `emitOutcome` in runner/redis/lua/includes/outbox.lua), its consumer group, and the delivery-state scripts
 * (runner/redis/lua/outbox-*.lua; the delivery states are described in lua/includes/outbox-delivery.lua).
 */
import type { RedisClient } from '../redis/connect.js';
import type { Keyspace } from '../redis/keys.js';
import { Scripts } from '../redis/script-loader.js';
import { OutboxKeys } from './keys.js';

/** The consumer group every replica of a flock reads the outbox with: each entry goes to one consumer. */
export const OUTBOX_GROUP = 'deliver';

/** Answer of {@link OutboxStore.take}. */
export type TakeResult =
  | { status: 'take'; attempt: number }
  | { status: 'wait'; waitMs: number }
  | { status: 'done'; kind: string }
  | { status: 'suppressed' };

/** One stream entry as read: its id (`<ms>-<seq>`) and flat field list. */
export interface RawEntry {
  id: string;
  fields: string[];
}

/** The outbox scripts and stream commands, bound to one connection. */
export class OutboxStore {
  readonly k: OutboxKeys;
  private readonly scripts: Scripts;

  constructor(
    readonly redis: RedisClient,
    private readonly keys: Keyspace,
  ) {
    this.k = new OutboxKeys(keys);
    this.scripts = Scripts.on(redis);
  }

  /** Creates the stream and the group (from the stream's start, so entries written before are delivered). */
  async ensureGroup(): Promise<void> {
    try {
      await this.redis.xgroup('CREATE', this.k.stream, OUTBOX_GROUP, '0', 'MKSTREAM');
    } catch (err) {
      if (!String((err as Error).message).includes('BUSYGROUP')) throw err;
    }
  }

  /** New entries for `consumer` (each entry goes to one consumer of the group). */
  async readNew(consumer: string, count: number): Promise<RawEntry[]> {
    const res = (await this.redis.xreadgroup('GROUP', OUTBOX_GROUP, consumer, 'COUNT', count, 'STREAMS', this.k.stream, '>')) as
      | [string, [string, string[]][]][]
      | null;
    return (res?.[0]?.[1] ?? []).map(([id, fields]) => ({ id, fields }));
  }

  /**
   * Entries pending longer than `minIdleMs` (their consumer died, or their retry is due), moved to `consumer`.
   * @returns the entries and the cursor to continue from ('0-0' when the whole list was seen).
   */
  async reclaim(consumer: string, minIdleMs: number, cursor: string, count: number): Promise<{ entries: RawEntry[]; cursor: string }> {
    const res = (await this.redis.xautoclaim(this.k.stream, OUTBOX_GROUP, consumer, minIdleMs, cursor, 'COUNT', count)) as [
      string,
      ([string, string[]] | null)[],
    ];
    const entries = (res[1] ?? []).filter((e): e is [string, string[]] => Array.isArray(e) && Array.isArray(e[1]));
    return { entries: entries.map(([id, fields]) => ({ id, fields })), cursor: res[0] };
  }

  /** May `consumer` send this delivery now (runner/redis/lua/outbox-take.lua)? */
  async take(o: {
    entryId: string;
    field: string;
    consumer: string;
    leaseMs: number;
    rateMax: number;
    rateWindowMs: number;
    event: string;
    schedule: string;
    channel: string;
    stateTtlMs: number;
  }): Promise<TakeResult> {
    const { entryId, ...args } = o;
    const out = (await this.scripts.run(
      'outbox-take',
      [this.k.deliveries(entryId), this.k.rate(o.schedule, o.channel), this.k.summaries, this.k.consumers, this.k.stream, this.k.last],
      args,
    )) as [string, string | number];
    switch (out[0]) {
      case 'take':
        return { status: 'take', attempt: Number(out[1]) };
      case 'wait':
        return { status: 'wait', waitMs: Number(out[1]) };
      case 'done':
        return { status: 'done', kind: String(out[1]) };
      default:
        return { status: 'suppressed' };
    }
  }

  /** Records how a send ended (outbox-settle.lua). @returns 1 recorded, 2 sent after a take-over, 0 ignored. */
  async settle(entryId: string, field: string, consumer: string, outcome: 'sent' | 'retry' | 'gaveup', retryInMs = 0, error = ''): Promise<number> {
    return Number(await this.scripts.run('outbox-settle', [this.k.deliveries(entryId)], { field, consumer, outcome, retryInMs, error: error.slice(0, 500) }));
  }

  /** Acknowledges and deletes the entry once every delivery is done (outbox-complete.lua). @returns true when it did. */
  async complete(entryId: string, fields: readonly string[]): Promise<boolean> {
    return Number(await this.scripts.run('outbox-complete', [this.k.stream, this.k.deliveries(entryId)], [OUTBOX_GROUP, entryId, ...fields])) === 1;
  }

  /**
   * outbox-tick.lua: renews `consumer` as live for `ttlMs` (0: removes it) and ends due rate windows.
   * @returns the number of windows ended.
   */
  async tick(consumer: string, ttlMs: number, limit = 100): Promise<number> {
    return Number(await this.scripts.run('outbox-tick', [this.k.summaries, this.k.stream, this.k.last, this.k.consumers], [this.k.ratePrefix, limit, consumer, ttlMs]));
  }

  /** Removes consumers that hold no entries and were idle longer than `idleMs` (replicas long gone). */
  async forgetIdleConsumers(idleMs: number): Promise<number> {
    const info = (await this.redis.xinfo('CONSUMERS', this.k.stream, OUTBOX_GROUP)) as unknown[][];
    let n = 0;
    for (const c of info) {
      const f: Record<string, unknown> = {};
      for (let i = 0; i + 1 < c.length; i += 2) f[String(c[i])] = c[i + 1];
      if (Number(f.pending) === 0 && Number(f.idle) > idleMs) {
        await this.redis.xgroup('DELCONSUMER', this.k.stream, OUTBOX_GROUP, String(f.name));
        n++;
      }
    }
    return n;
  }
}
