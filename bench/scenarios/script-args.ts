/**
 * `npm run bench -- script-args [--claims 20000] [--plans 200]`: what the claim path pays for how its script
 * takes its arguments. Measures, on a private redis-server (no AOF):
 * - the claim script through `Store.claim` (distinct occurrences, each claimed once) and the plan script
 *   through `Store.plan` (offers of 500 rows, as the planner sends them): Redis CPU per call (INFO
 *   commandstats `usec_per_call` of EVALSHA) and the client's time per call with 50 calls in flight;
 * - decoding 14 arguments alone (the claim's count), three ways: positional ARGV read into locals with
 *   `tonumber`, one MessagePack map (`cmsgpack.unpack`), one JSON object (`cjson.decode`).
 * Run it on two commits to compare the scripts' argument forms end to end.
 */
import { Redis } from 'ioredis';
import { Packr } from 'msgpackr';
import { Keyspace } from '../../runner/redis/keys.js';
import { Store, type PlannedOccurrence } from '../../runner/redis/store.js';
import { occurrenceKey } from '../../runner/schedule/occurrence.js';
import { BenchRedis } from '../lib/redis.js';
import { reportFigures } from '../lib/report.js';
import type { Flags } from '../lib/util.js';

/** Server µs per EVALSHA since the last RESETSTAT. */
async function usecPerScript(redis: Redis): Promise<number> {
  const m = /cmdstat_evalsha:calls=\d+,usec=\d+,usec_per_call=([\d.]+)/.exec(await redis.info('commandstats'));
  return Number(m?.[1] ?? NaN);
}

/** Runs `n` calls of `call(i)`, `inFlight` at a time; returns the client's µs per call. */
async function timed(n: number, inFlight: number, call: (i: number) => Promise<unknown>): Promise<number> {
  const t0 = performance.now();
  for (let i = 0; i < n; i += inFlight) await Promise.all(Array.from({ length: Math.min(inFlight, n - i) }, (_, j) => call(i + j)));
  return ((performance.now() - t0) * 1000) / n;
}

export async function scriptArgs(flags: Flags): Promise<void> {
  const claims = flags.num('claims', 20_000);
  const plans = flags.num('plans', 200);
  const server = await BenchRedis.start({ appendOnly: false });
  const redis = new Redis(server.url);
  try {
    const keys = new Keyspace('bench');
    const store = new Store(redis, keys);
    const [s] = await redis.time();
    const base = Number(s) * 1000 - 60_000;

    await redis.config('RESETSTAT');
    const claimClient = await timed(claims, 50, (i) =>
      store.claim({
        replica: 'bench', schedule: `s${i}`, key: occurrenceKey(`s${i}`, base + i), dueMs: base + i, fireMs: base + i,
        origin: 'schedule', lockMs: 4000, horizonMs: 3_600_000, retentionMs: 86_400_000, startingDeadlineMs: null,
        earlyToleranceMs: 0, maxStalls: 3, concurrencyPolicy: 'Allow', maxConcurrent: null,
      }),
    );
    const claimServer = await usecPerScript(redis);

    await redis.config('RESETSTAT');
    const policy = { suspend: false, startingDeadlineMs: null, catchUp: 'latest' as const, maxCatchUpRuns: 10 };
    const planClient = await timed(plans, 4, (p) => {
      const items: PlannedOccurrence[] = [];
      for (let r = 0; r < 500; r++) {
        const dueMs = base + 1_000_000 + p * 500 + r;
        items.push({ schedule: `p${r % 50}`, key: occurrenceKey(`p${r % 50}`, dueMs), dueMs, fireMs: dueMs, keepFireMs: null, policy });
      }
      items.sort((a, b) => a.schedule.localeCompare(b.schedule) || a.dueMs - b.dueMs);
      return store.plan(items, { horizonMs: 3_600_000, retentionMs: 86_400_000, catchUpGraceMs: 1000, replica: 'bench' });
    });
    const planServer = await usecPerScript(redis);

    // Decoding alone: 14 arguments, the claim's.
    const args = {
      replica: 'host-1234-abcd', lockMs: 4000, horizonMs: 3_600_000, retentionMs: 86_400_000, schedule: 'ping-billing',
      dueMs: 1_767_232_800_000, fireMs: 1_767_232_800_123, key: 'ping-billing@2026-01-01T02:00:00.000Z', startingDeadlineMs: -1,
      earlyToleranceMs: 0, maxStalls: 3, origin: 'schedule', concurrencyPolicy: 'Allow', maxConcurrent: -1,
    };
    const positional =
      'local a1, a2, a3, a4 = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]) ' +
      'local a5, a6, a7, a8 = ARGV[5], tonumber(ARGV[6]), tonumber(ARGV[7]), ARGV[8] ' +
      'local a9, a10, a11, a12 = tonumber(ARGV[9]), tonumber(ARGV[10]), tonumber(ARGV[11]), ARGV[12] ' +
      'local a13, a14 = ARGV[13], tonumber(ARGV[14]) return a2';
    redis.defineCommand('benchPositional', { numberOfKeys: 1, lua: positional });
    redis.defineCommand('benchMsgpack', { numberOfKeys: 1, lua: 'local a = cmsgpack.unpack(ARGV[1]) return a.lockMs' });
    redis.defineCommand('benchJson', { numberOfKeys: 1, lua: 'local a = cjson.decode(ARGV[1]) return a.lockMs' });
    const packr = new Packr({ useRecords: false, encodeUndefinedAsNil: true });
    const call = redis as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>;
    const decode: Record<string, number> = {};
    for (const [name, argv] of [
      ['benchPositional', () => Object.values(args)],
      ['benchMsgpack', () => [packr.pack(args)]],
      ['benchJson', () => [JSON.stringify(args)]],
    ] as const) {
      await redis.config('RESETSTAT');
      await timed(20_000, 50, () => call[name]!('{bench}', ...argv()));
      decode[name] = await usecPerScript(redis);
    }
    const t0 = performance.now();
    for (let i = 0; i < 100_000; i++) packr.pack(args);
    const packUs = ((performance.now() - t0) * 1000) / 100_000;

    reportFigures(`script-args: the claim and plan scripts' calls, and decoding 14 arguments (${claims} claims, ${plans} plans of 500 rows)`, [
      ['claim script: Redis CPU per call (µs)', claimServer.toFixed(2)],
      ['claim through Store.claim: client time per call, 50 in flight (µs)', claimClient.toFixed(1)],
      ['plan script, 500 rows: Redis CPU per call (µs)', planServer.toFixed(1)],
      ['plan through Store.plan: client time per call, 4 in flight (µs)', planClient.toFixed(0)],
      ['decode 14 arguments, positional ARGV + tonumber: Redis CPU per call (µs)', decode.benchPositional!.toFixed(2)],
      ['decode 14 arguments, cmsgpack.unpack of one map (µs)', decode.benchMsgpack!.toFixed(2)],
      ['decode 14 arguments, cjson.decode of one object (µs)', decode.benchJson!.toFixed(2)],
      ['msgpackr pack of the 14 arguments, client (µs)', packUs.toFixed(2)],
    ]);
  } finally {
    redis.disconnect();
    await server.cleanup();
  }
}
