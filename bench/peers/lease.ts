/**
 * Peer for the failover scenario: a singleton behind lease-based leader election, built the way client-go's
 * `leaderelection` package behaves with the Kubernetes defaults, over a Redis key instead of a Lease object:
 *
 * - every candidate tries to acquire every RetryPeriod (2 s) stretched by a random factor up to 1.2 (client-go
 *   `wait.JitterUntil(…, RetryPeriod, JitterFactor 1.2, …)`): `SET <lease> <identity> NX PX <LeaseDuration 15 s>`;
 * - the leader renews every RetryPeriod (`PEXPIRE` if it still holds the key, atomically in Lua); when no
 *   renewal succeeded for RenewDeadline (10 s) it stops leading and exits, as operators do in OnStoppedLeading;
 * - on becoming leader it starts the singleton's work at once: here it resumes the run a dead leader left
 *   (the most generous reading; a cron singleton would rather wait for the next due time).
 *
 * One difference from client-go, in the peer's favour: the lease expires on the Redis clock 15 s after the last
 * renewal, whereas client-go's followers count 15 s from when they *observed* the last renewal (up to one retry
 * period later).
 *
 * Forked with IPC. Env: BENCH_REDIS_URL, BENCH_LEASE_KEY, BENCH_IDENTITY, BENCH_LEASE_MS (15000),
 * BENCH_RENEW_DEADLINE_MS (10000), BENCH_RETRY_MS (2000).
 * When it starts leading it sets `<lease>:run` to `{"holder": identity, "startMs": now}` and sends
 * `{type: 'leading', atMs}`.
 */
import { Redis } from 'ioredis';
import { sleep } from '../../runner/time/wait.js';

const url = process.env.BENCH_REDIS_URL!;
const key = process.env.BENCH_LEASE_KEY ?? 'lease';
const me = process.env.BENCH_IDENTITY ?? `cand-${process.pid}`;
const leaseMs = Number(process.env.BENCH_LEASE_MS ?? 15_000);
const renewDeadlineMs = Number(process.env.BENCH_RENEW_DEADLINE_MS ?? 10_000);
const retryMs = Number(process.env.BENCH_RETRY_MS ?? 2_000);
const JITTER_FACTOR = 1.2;

const RENEW = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) else return 0 end`;

const redis = new Redis(url, { maxRetriesPerRequest: 1 });
redis.on('error', () => undefined);

async function acquire(): Promise<void> {
  for (;;) {
    try {
      if ((await redis.set(key, me, 'PX', leaseMs, 'NX')) === 'OK') return;
    } catch {
      /* Redis away: try again next period */
    }
    await sleep(retryMs * (1 + Math.random() * JITTER_FACTOR));
  }
}

async function lead(): Promise<never> {
  const atMs = Date.now();
  await redis.set(`${key}:run`, JSON.stringify({ holder: me, startMs: atMs }));
  process.send?.({ type: 'leading', atMs });
  let lastRenewed = Date.now();
  for (;;) {
    await sleep(retryMs);
    try {
      const ok = Number(await redis.eval(RENEW, 1, key, me, leaseMs)) === 1;
      if (ok) lastRenewed = Date.now();
      else {
        process.send?.({ type: 'lost' });
        process.exit(1);
      }
    } catch {
      /* retried until the renew deadline */
    }
    if (Date.now() - lastRenewed > renewDeadlineMs) {
      process.send?.({ type: 'lost' });
      process.exit(1);
    }
  }
}

process.on('disconnect', () => process.exit(0));
void acquire().then(lead);
