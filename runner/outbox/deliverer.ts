/**
 * The outbox deliverer: every replica runs one. It reads the flock's outbox stream through one consumer group
 * (each new entry goes to one replica), sends each delivery of an entry (notifications on each channel, the
 * heartbeat ping), and acknowledges and deletes the entry once every delivery is done.
 *
 * What it guarantees (see the README, "Notifications"):
 * - Nothing is lost: an entry is written atomically with its outcome and leaves the stream only when every
 *   delivery is sent, refused for good, gave up after `maxAttempts`, or was held back by the rate limit (then
 *   counted in a summary). A replica that dies holding entries leaves them pending; any replica takes them
 *   over (XAUTOCLAIM) once they have been idle for `reclaimIdleMs`.
 * - One visible message: a delivery is marked `sending` with a lease before the send and `sent` right after, so
 *   another replica sends it again only when the sender died (or lost Redis) inside that window, and then with
 *   the same id, which receivers that de-duplicate (webhook id / Idempotency-Key, PagerDuty dedup_key,
 *   e-mail Message-ID) show once. Slack and Teams cannot de-duplicate: there such a crash shows twice.
 * - Retries with backoff per delivery (1 s doubling to 5 min, jittered), never re-sending the channels that
 *   succeeded.
 */
import { randomBytes } from 'node:crypto';
import { Counter, register } from 'prom-client';
import type { Logger } from '../log.js';
import type { RedisClient } from '../redis/connect.js';
import type { Keyspace } from '../redis/keys.js';
import { deliveriesFor, messageId, parseEntry, type Delivery, type OutboxEntry, type OutboxSchedule } from '../notify/events.js';
import { sendDelivery } from '../notify/send.js';
import { OutboxStore, type RawEntry } from './store.js';
import { redisFailure } from '../redis/outage.js';

/** Tuning of a deliverer. Durations in ms. */
export interface DelivererOptions {
  replica: string;
  namespace: string;
  /** The Redis clock estimate, ms (entries' ages). */
  now: () => number;
  /** Between two reads of the stream. */
  pollMs?: number;
  /** An entry pending this long (its consumer died, or a retry is due) is taken over by whoever asks. */
  reclaimIdleMs?: number;
  /** Added to a channel's send timeout to make the `sending` lease. */
  leaseMarginMs?: number;
  /** Sends of one delivery before it is given up. */
  maxAttempts?: number;
  retryBaseMs?: number;
  retryMaxMs?: number;
  /** Entries processed at once by this replica. */
  concurrency?: number;
  /** An entry of a schedule no replica here knows is dropped (with a warning) after this long. */
  unknownScheduleMaxAgeMs?: number;
  /** This deliverer counts as live this long after each poll; then its `sending` leases may be taken over. */
  consumerTtlMs?: number;
}

const DEFAULTS = {
  pollMs: 250,
  reclaimIdleMs: 2_000,
  leaseMarginMs: 5_000,
  maxAttempts: 20,
  retryBaseMs: 1_000,
  retryMaxMs: 300_000,
  concurrency: 16,
  unknownScheduleMaxAgeMs: 3_600_000,
  consumerTtlMs: 2_000,
};

/** Delivery states are kept this long at most (an entry that lingers longer is stuck, not in progress). */
const STATE_TTL_MS = 7 * 86_400_000;

function notificationsCounter(): Counter<'schedule' | 'channel' | 'event' | 'outcome'> {
  const name = 'cronflock_notifications_total';
  return (
    (register.getSingleMetric(name) as Counter<'schedule' | 'channel' | 'event' | 'outcome'> | undefined) ??
    new Counter({
      name,
      help: 'Notification and heartbeat deliveries by this replica: outcome sent, retry (a failed send that will be retried), gave-up, suppressed (rate limit)',
      labelNames: ['schedule', 'channel', 'event', 'outcome'],
    })
  );
}

/** Reads the outbox and delivers. {@link start} once; {@link setSchedules} on every reload. */
export class OutboxDeliverer {
  private readonly store: OutboxStore;
  private readonly o: Required<Omit<DelivererOptions, 'replica' | 'namespace' | 'now'>> & Pick<DelivererOptions, 'replica' | 'namespace' | 'now'>;
  /** `<replica>#<incarnation>`: this process's name in the group and in the live-consumer set. */
  readonly consumer: string;
  private schedules = new Map<string, OutboxSchedule>();
  private readonly inFlight = new Map<string, Promise<void>>();
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> = Promise.resolve();
  private stopped = false;
  private cursor = '0-0';
  private groupReady = false;
  private lastForget = 0;
  private readonly counter = notificationsCounter();

  constructor(
    redis: RedisClient,
    keys: Keyspace,
    opts: DelivererOptions,
    private readonly log: Logger,
  ) {
    this.store = new OutboxStore(redis, keys);
    this.o = { ...DEFAULTS, ...opts };
    this.consumer = `${opts.replica}#${randomBytes(4).toString('hex')}`;
  }

  /** The schedules this replica knows (their notify and heartbeat blocks). */
  setSchedules(schedules: readonly ({ name: string } & OutboxSchedule)[]): void {
    this.schedules = new Map(schedules.filter((s) => s.notify || s.heartbeat).map((s) => [s.name, { notify: s.notify, heartbeat: s.heartbeat }]));
  }

  /** Changes some of the schedules this replica knows (stored schedules' changes); the others stay. */
  changeSchedules(upserted: readonly ({ name: string } & OutboxSchedule)[], removed: readonly string[]): void {
    for (const name of removed) this.schedules.delete(name);
    for (const s of upserted) {
      if (s.notify || s.heartbeat) this.schedules.set(s.name, { notify: s.notify, heartbeat: s.heartbeat });
      else this.schedules.delete(s.name);
    }
  }

  /** Starts the read loop. */
  start(): void {
    this.schedule(0);
  }

  /**
   * Stops: reads once more (outcomes of runs that finished during the replica's grace period), waits up to
   * `waitMs` for the sends in flight to be settled, then leaves the live-consumer set, so that another replica
   * takes over at once whatever is left (and nothing that is still being sent).
   */
  async stop(waitMs = 5_000): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.running;
    await this.tick().catch(() => undefined);
    let t: NodeJS.Timeout | undefined;
    await Promise.race([Promise.allSettled([...this.inFlight.values()]), new Promise((r) => (t = setTimeout(r, waitMs)))]);
    clearTimeout(t);
    await this.store.tick(this.consumer, 0, 0).catch(() => undefined);
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.running = this.tick()
        .catch((err: Error) => {
          if (/NOGROUP/.test(err.message)) this.groupReady = false; // the stream was deleted: create it again
          this.log.debug({ err: err.message }, 'outbox read failed; retrying');
        })
        .finally(() => this.schedule(this.o.pollMs));
    }, ms);
  }

  private async tick(): Promise<void> {
    if (!this.groupReady) {
      await this.store.ensureGroup();
      this.groupReady = true;
    }
    await this.store.tick(this.consumer, this.o.consumerTtlMs);
    if (Date.now() - this.lastForget > 600_000) {
      this.lastForget = Date.now();
      await this.store.forgetIdleConsumers(86_400_000).catch(() => 0);
    }
    let free = this.o.concurrency - this.inFlight.size;
    if (free <= 0) return;
    const fresh = await this.store.readNew(this.consumer, free);
    for (const e of fresh) this.begin(e);
    free = this.o.concurrency - this.inFlight.size;
    if (free <= 0 || this.stopped) return;
    const { entries, cursor } = await this.store.reclaim(this.consumer, this.o.reclaimIdleMs, this.cursor, free);
    this.cursor = cursor;
    for (const e of entries) this.begin(e);
  }

  private begin(raw: RawEntry): void {
    if (this.inFlight.has(raw.id)) return;
    const p = this.process(raw)
      .catch((err: Error) => {
        const f = redisFailure(err);
        this.log.warn({ entry: raw.id, ...f.fields }, `outbox entry not processed (${f.text}); it stays pending`);
      })
      .finally(() => this.inFlight.delete(raw.id));
    this.inFlight.set(raw.id, p);
  }

  private async process(raw: RawEntry): Promise<void> {
    const entry = parseEntry(raw.fields);
    if (!entry) {
      this.log.warn({ entry: raw.id }, 'outbox entry not understood; dropped');
      await this.store.complete(raw.id, []);
      return;
    }
    const s = this.schedules.get(entry.schedule);
    if (!s) {
      // Another replica may run this schedule (a rollout with different files); after long enough, nobody does.
      if (this.o.now() - entry.atMs > this.o.unknownScheduleMaxAgeMs) {
        this.log.warn({ entry: raw.id, schedule: entry.schedule }, 'outbox entry of a schedule no replica delivers for; dropped');
        await this.store.complete(raw.id, []);
      }
      return;
    }
    const deliveries = deliveriesFor(entry, s);
    await Promise.all(deliveries.map((d) => this.deliver(raw.id, entry, d, s)));
    await this.store.complete(raw.id, deliveries.map((d) => d.field));
  }

  private async deliver(entryId: string, entry: OutboxEntry, d: Delivery, s: OutboxSchedule): Promise<void> {
    const timeoutMs = (d.channel === 'heartbeat' ? s.heartbeat?.timeoutMs : s.notify?.timeoutMs) ?? 10_000;
    const rate = s.notify?.rateLimit;
    const taken = await this.store.take({
      entryId,
      field: d.field,
      consumer: this.consumer,
      leaseMs: timeoutMs + this.o.leaseMarginMs,
      rateMax: d.rateLimited && rate ? rate.max : 0,
      rateWindowMs: rate?.perMs ?? 0,
      event: d.event,
      schedule: entry.schedule,
      channel: d.channel,
      stateTtlMs: STATE_TTL_MS,
    });
    const labels = { schedule: entry.schedule, channel: d.channel, event: d.event };
    if (taken.status === 'suppressed') {
      this.counter.inc({ ...labels, outcome: 'suppressed' });
      this.log.info({ entry: entryId, ...labels }, 'notification held back by the rate limit (counted in the window\'s summary)');
      return;
    }
    if (taken.status !== 'take') return;
    const id = messageId(this.o.namespace, entry, d.event);
    const log = { entry: entryId, id, ...labels, ...(entry.kind === 'outcome' ? { occurrence: entry.key } : {}), sendAttempt: taken.attempt };
    const res = await sendDelivery({ namespace: this.o.namespace, notify: s.notify, heartbeat: s.heartbeat }, entry, d, id);
    if (res.ok) {
      const r = await this.store.settle(entryId, d.field, this.consumer, 'sent');
      this.counter.inc({ ...labels, outcome: 'sent' });
      if (r === 2) this.log.warn(log, 'sent after another replica took the send over: it may send a second copy (same id)');
      else if (d.channel === 'heartbeat') this.log.debug(log, 'heartbeat ping sent');
      else this.log.info(log, 'notification sent');
      return;
    }
    if (res.permanent || taken.attempt >= this.o.maxAttempts) {
      await this.store.settle(entryId, d.field, this.consumer, 'gaveup', 0, res.error);
      this.counter.inc({ ...labels, outcome: 'gave-up' });
      this.log.error({ ...log, error: res.error }, res.permanent ? 'notification refused for good; given up' : `notification failed ${taken.attempt} times; given up`);
      return;
    }
    const backoff = Math.min(this.o.retryMaxMs, this.o.retryBaseMs * 2 ** (taken.attempt - 1));
    const delay = Math.round(backoff * (0.5 + Math.random() / 2));
    await this.store.settle(entryId, d.field, this.consumer, 'retry', delay, res.error);
    this.counter.inc({ ...labels, outcome: 'retry' });
    this.log.warn({ ...log, error: res.error, retryInMs: delay }, 'notification failed; retrying');
  }
}
