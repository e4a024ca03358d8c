/**
 * `npm run bench -- wakeup [--seconds 3] [--together 8]`: what one script call costs Redis when Redis sleeps
 * between calls, against the same calls arriving together. Why it matters (issue 16): jittered occurrences fire at
 * their own milliseconds, so each claim and each finish wakes Redis on its own; with jitter 0 the calls of a second
 * arrive together and share a wake-up. The throughput bench's gap between the two columns (Redis CPU per
 * occurrence, jittered vs jitter 0) is this cost, not the commands the scripts run.
 *
 * On a private redis-server (AOF on, as the README asks of production): a one-HSET script called
 * - back to back (Redis never sleeps: the floor of a call),
 * - paced, one call per timer turn (~1 ms apart: Redis sleeps in epoll between calls, as under jittered load),
 * - paced, `together` calls per timer turn (the calls of a turn share one wake-up).
 * Redis CPU per call = (user + system CPU of the server over the phase − its idle CPU over as long) / calls.
 */
import { Redis } from 'ioredis';
import { counterDelta, redisCounters } from '../lib/redis-stats.js';
import { BenchRedis } from '../lib/redis.js';
import { reportFigures } from '../lib/report.js';
import { fmt, ratio, sleep, type Flags } from '../lib/util.js';

const SCRIPT = "redis.call('HSET', KEYS[1], 'v', ARGV[1]) return 1";

export async function wakeup(flags: Flags): Promise<void> {
  const seconds = flags.num('seconds', 3);
  const together = flags.num('together', 8);
  const redis = await BenchRedis.start({ appendOnly: true });
  const c = new Redis(redis.url);
  try {
    const sha = String(await c.script('LOAD', SCRIPT));
    const cpuMs = async (): Promise<number> => (await redisCounters(c, redis.runId)).cpuMs;
    // Idle CPU (the server's cron, `hz`), subtracted from each phase.
    const idle0 = await redisCounters(c, redis.runId);
    await sleep(seconds * 1000);
    const idleMsPerS = counterDelta(idle0, await redisCounters(c, redis.runId)).cpuMs / seconds;
    /** Runs `turn` until `seconds` passed; returns Redis CPU µs per call and calls per second. */
    const phase = async (turn: (n: number) => Promise<number>): Promise<{ usPerCall: number; perS: number }> => {
      const c0 = await cpuMs();
      const t0 = performance.now();
      let n = 0;
      while (performance.now() - t0 < seconds * 1000) n += await turn(n);
      const s = (performance.now() - t0) / 1000;
      return { usPerCall: (((await cpuMs()) - c0 - idleMsPerS * s) * 1000) / n, perS: n / s };
    };
    const call = (i: number): Promise<unknown> => c.evalsha(sha, 1, `k${i % 64}`, i);
    const backToBack = await phase(async (n) => (await call(n), 1));
    const pacedOne = await phase(async (n) => (await sleep(1), await call(n), 1));
    const pacedMany = await phase(async (n) => {
      await sleep(1);
      await Promise.all(Array.from({ length: together }, (_, j) => call(n + j)));
      return together;
    });
    const row = (label: string, r: { usPerCall: number; perS: number }): [string, string] => [label, `${fmt(r.usPerCall, 1)} µs (${fmt(r.perS)} calls/s; ${ratio(r.usPerCall, backToBack.usPerCall)} of back to back)`];
    await reportFigures(
      `wakeup: Redis CPU per script call (one HSET), AOF on, ${seconds} s per phase`,
      [
        row('back to back (Redis never sleeps)', backToBack),
        row('paced: 1 call per ~1 ms turn (Redis sleeps between calls)', pacedOne),
        row(`paced: ${together} calls per ~1 ms turn (one wake-up shared)`, pacedMany),
        ['Redis idle CPU (subtracted)', `${fmt(idleMsPerS * 1000)} µs/s`],
      ],
      ['A call that wakes Redis costs it the wake-up (epoll return, socket read and write, the AOF write of the event-loop turn) on top of the script; calls that arrive together share it.'],
      { key: 'wakeup', figures: { 'wakeup.backToBackUs': backToBack.usPerCall, 'wakeup.pacedOneUs': pacedOne.usPerCall, 'wakeup.pacedManyUs': pacedMany.usPerCall } },
    );
  } finally {
    c.disconnect();
    await redis.stop();
  }
}
