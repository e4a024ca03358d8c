/**
 * Redis turns (`--redis-turn`, engine/options.ts redisTurnMs; issue 16's Redis CPU per occurrence): two replica
 * processes send their on-time claims and their finishes at multiples of the turn on the Redis clock, so the
 * calls of a turn reach Redis together (a call that wakes an idle Redis costs it ~40 µs more: bench `wakeup`).
 *
 * Checked on the run records, whose `startMs` (claim) is Redis's `TIME` inside the claim script, and on the finish
 * calls as Redis's MONITOR saw them arrive (a record's `endMs` is when the run ended on its replica, which a finish
 * sent at the next turn carries):
 * - every run started at or after its fire time and ran once (the turn never starts a run early);
 * - the claims and the finishes reached Redis just after a turn: the median of (Redis time mod turn) is small.
 *   Without turns the calls come at the occurrences' own milliseconds (jitter spreads them), so the median is
 *   about half a turn (25 ms of 50, the longest turn allowed; measured 21 with 168 runs): a bound of 15 ms fails
 *   then, and holds on a loaded machine (a late timer moves a call past its turn: with a 20 ms turn and a bound of
 *   8 ms, CI once measured 8).
 */
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { loadScript } from '../../runner/redis/script-loader.js';
import { afterEach, expect, it } from 'vitest';
import { Flock, sleep, until } from '../support/flock.js';

const SLOW = new URL('../fixtures/jobs/slow.mjs', import.meta.url).pathname;
const TURN_MS = 50;

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

let flock: Flock | undefined;
let monitor: Redis | undefined;
afterEach(async () => {
  monitor?.disconnect();
  monitor = undefined;
  await flock?.close();
});

it(`--redis-turn ${TURN_MS}ms: claims and finishes of two replicas reach Redis at the turns, each run once and not before its fire time`, async () => {
  flock = await Flock.start();
  const events = join(flock.dir, 'events.jsonl');
  let y = 'schedules:\n';
  // 20 schedules every second, spread over the second by a 999 ms jitter window; schedule i's job takes i ms, so
  // without turns the finishes would reach Redis at every phase of a turn, claims aligned or not.
  for (let i = 0; i < 20; i++) y += `  - name: t${i}\n    cron: "* * * * * *"\n    jitter: 999ms\n    job: { kind: module, isolation: none, path: ${SLOW}, params: { ms: ${i}, events: ${events} } }\n`;
  const file = flock.writeSchedules(y);
  // When each finish call reached Redis (MONITOR's time is the server clock, the one TIME reads), known by the
  // finish script's SHA1 (its arguments are MessagePack).
  const finishSha = createHash('sha1').update(loadScript('finish').lua).digest('hex');
  const finishArrivals: number[] = [];
  monitor = await new Redis(flock.redis.url).monitor();
  monitor.on('monitor', (time: string, args: string[]) => {
    if (String(args[0]).toLowerCase() === 'evalsha' && args[1] === finishSha) finishArrivals.push(Math.floor(Number(time) * 1000));
  });
  for (const name of ['r1', 'r2']) await flock.startReplica({ name, schedules: file, args: ['--redis-turn', `${TURN_MS}ms`] });
  await sleep(7_000);
  await until(async () => (await flock!.runs()).filter((r) => r.state === 'succeeded').length >= 100, 30_000, '100 runs succeeded');
  const done = (await flock.runs()).filter((r) => r.state === 'succeeded');
  for (const r of done) expect(r.startMs!, r.key).toBeGreaterThanOrEqual(r.fireMs);
  expect(new Set(done.map((r) => r.key)).size).toBe(done.length);
  expect(done.every((r) => r.attempt === 1), 'one attempt each').toBe(true);
  const startPhase = median(done.map((r) => r.startMs! % TURN_MS));
  expect(finishArrivals.length, 'finish calls seen by MONITOR').toBeGreaterThanOrEqual(20);
  const endPhase = median(finishArrivals.map((ms) => ms % TURN_MS));
  expect(startPhase, `claims: median ms after a turn (${done.length} runs)`).toBeLessThan(15);
  expect(endPhase, `finishes: median ms after a turn (${finishArrivals.length} finish calls)`).toBeLessThan(15);
}, 90_000);
