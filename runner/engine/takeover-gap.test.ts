/**
 * "Nothing silent" when a replica gains schedules (planner.ts, "Take-over"), on a real redis-server with two
 * planners whose ticks the test orders by hand (no timers): each replica moves its cursor of a schedule another
 * replica owns without offering it, so when it gains that schedule (the owner died and its membership lapsed) it
 * must offer the due times between the owner's last offer and its own cursor again. Found at issue 19's full
 * acceptance scale (test/integration/store-flock.test.ts): the gainer decided what it gained by comparing the
 * schedules it planned at the previous check (`plannable`) with those it plans now, and two ways of changing
 * schedules spoiled that comparison, so gained schedules were planned from the gainer's cursor on, without looking
 * back, and the due times in between had no record at all:
 * - a reload (`update`) forgot the previous check, so a take-over noticed at the same tick gained nothing;
 * - a stored change (`applyChanges`) of a schedule another replica owned marked it "fresh" (start at the change,
 *   not as a take-over), and it stayed so until the next full check, which was the take-over itself.
 * Also checked: the take-over happens at the tick that sees the change (not later, when each schedule is next due:
 * the tick's own look at due schedules is only a backstop), and never offers a changed definition's due times from
 * before its change. The membership TTL here is 5 s (lookahead 6 s), so that the steps before the lapse have room on
 * a busy machine.
 */
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { usePrivateRedis } from '../../test/support/private-redis.js';
import { parseScheduleText, type CompiledSchedule } from '../config/load.js';
import type { Logger } from '../log.js';
import { RedisClock } from '../redis/clock.js';
import { connectCommands } from '../redis/connect.js';
import { Keyspace } from '../redis/keys.js';
import { Store } from '../redis/store.js';
import { occurrenceKey } from '../schedule/occurrence.js';
import { closeLanes, openLanes, type Lanes } from './enqueue.js';
import { EngineEvents } from './events.js';
import { compileOptions } from './options.js';
import { LiveReplicas } from './ownership.js';
import { Planner } from './planner.js';

const pr = usePrivateRedis();
const NS = 'tg';
const keys = new Keyspace(NS);
const LOOKAHEAD_MS = 6_000;
/** The membership TTL these options give (planner.ts membershipTtlMs: lookahead − prefetch − tick). */
const TTL_MS = LOOKAHEAD_MS - 500 - 500;
const NAMES = Array.from({ length: 12 }, (_, i) => `g${i}`);

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, Math.max(0, ms)));

/** Schedules due every second (or on `cron`); `timeout` tells two definitions apart (same due times, another hash). */
async function schedules(timeout: string, names = NAMES, cron = '* * * * * *'): Promise<CompiledSchedule[]> {
  const text = `schedules:\n${names.map((n) => `  - {name: ${n}, cron: "${cron}", job: {kind: http, url: "http://127.0.0.1:1/", timeout: ${timeout}}}\n`).join('')}`;
  const r = await parseScheduleText(text, 'takeover-gap.yaml');
  expect(r.errors).toEqual([]);
  return r.schedules;
}

interface Harness {
  planner: Planner;
  close(): Promise<void>;
}
const open: Harness[] = [];
afterEach(async () => {
  for (const h of open.splice(0)) await h.close();
});

/** A planner of replica `name` as a replica builds it (replica.ts), started with its timer off. */
async function plannerOf(name: string, tickMs = 500): Promise<Harness> {
  const cmd = connectCommands(pr.server.url, `tg:${name}`);
  if (cmd.status !== 'ready') await new Promise((resolve) => cmd.once('ready', resolve)); // no offline queue
  const clock = new RedisClock(cmd, undefined, keys.ns);
  await clock.sync();
  const lanes: Lanes = openLanes(cmd, keys);
  const log = pino({ level: 'silent' }) as unknown as Logger;
  const planner = new Planner(new Store(cmd, keys), lanes, keys, clock, compileOptions({ replica: name, namespace: NS, lookaheadMs: LOOKAHEAD_MS, tickMs }), log, {
    events: new EngineEvents(),
    live: new LiveReplicas(),
  });
  const h = {
    planner,
    async close() {
      await closeLanes(lanes);
      cmd.disconnect();
    },
  };
  open.push(h);
  return h;
}

/** Due times (every second in [fromMs, toMs]) of `names` that have no run record. */
async function silent(names: readonly string[], fromMs: number, toMs: number, s?: readonly CompiledSchedule[]): Promise<string[]> {
  const out: string[] = [];
  const byName = new Map(s?.map((x) => [x.name, x]));
  for (const n of names) {
    for (let d = Math.ceil(fromMs / 1000) * 1000; d <= toMs; d += 1000) {
      const def = byName.get(n);
      if (def && def.due.next(d - 1) !== d) continue; // not a due time of this schedule
      const key = occurrenceKey(n, d);
      if ((await pr.redis.exists(keys.occurrence(key))) === 0) out.push(key);
    }
  }
  return out;
}

async function redisNow(): Promise<number> {
  return pr.redisNow();
}

/**
 * Two replicas divide the schedules; then r1 is "SIGKILLed" (it never ticks again and does not leave). r2 ticks
 * on while r1 is still a member (its cursors of r1's share pass r1's lookahead, unoffered), `between` runs,
 * r1's membership lapses, and r2 ticks: every due time from r1's death to r2's last lookahead needs a record.
 */
async function killAndTakeOver(
  r1: Planner,
  r2: Planner,
  between: () => void,
  defs?: readonly CompiledSchedule[],
): Promise<{ killedAt: number; missing: string[]; missingAtTakeOver: string[] }> {
  const names = defs?.map((d) => d.name) ?? NAMES;
  const lastHeartbeat = performance.now();
  await r1.tick(); // r1's last tick: it planned its share up to its lookahead, then it died
  const killedAt = await redisNow();
  // r2 ticks while r1 is still a member: r2 passes r1's share without offering it.
  for (let i = 0; i < 4; i++) {
    await sleep(500);
    await r2.tick();
  }
  expect(performance.now() - lastHeartbeat, 'the ticks before the lapse took longer than the membership TTL (busy machine): no gap to test').toBeLessThan(TTL_MS - 200);
  between();
  await sleep(lastHeartbeat + TTL_MS + 500 - performance.now()); // r1's membership lapses
  await r2.tick(); // r2 sees r1 gone: its share is gained
  // At once, not when each schedule is next due: everything up to this tick's lookahead has a record now.
  const missingAtTakeOver = await silent(names, killedAt, (await redisNow()) + LOOKAHEAD_MS - 1_000, defs);
  for (let i = 0; i < 2; i++) {
    await sleep(500);
    await r2.tick();
  }
  const until = (await redisNow()) + 2_000; // r2 planned up to ~6 s ahead
  return { killedAt, missing: await silent(names, killedAt, until, defs), missingAtTakeOver };
}

/** Both replicas join, start (timers off) and tick three rounds: the schedules are divided between them. */
async function divided(s: CompiledSchedule[], o: { planned?: boolean; tickMs?: number } = {}): Promise<{ r1: Planner; r2: Planner }> {
  const [h1, h2] = [await plannerOf('r1', o.tickMs), await plannerOf('r2', o.tickMs)];
  await h1.planner.join(s);
  await h2.planner.join(s);
  await h1.planner.start(s, { ticking: false });
  await h2.planner.start(s, { ticking: false });
  for (let i = 0; i < 3; i++) {
    await h1.planner.tick();
    await h2.planner.tick();
    await sleep(500);
  }
  if (o.planned !== false) expect(Object.keys(await pr.redis.hgetall(keys.watermarks)).sort()).toEqual(s.map((x) => x.name).sort());
  return { r1: h1.planner, r2: h2.planner };
}

describe('a replica that gains schedules offers the due times its cursor passed while another owned them', () => {
  it('when a reload (update) comes in the same tick as the take-over', async () => {
    const s = await schedules('5s');
    const { r1, r2 } = await divided(s);
    const reloaded = [...s, ...(await schedules('5s', ['extra']))];
    const { missing, missingAtTakeOver } = await killAndTakeOver(r1, r2, () => {
      r2.update(reloaded); // a file reload (SIGHUP, a changed file or Schedule resource) before r2 notices r1 gone
    });
    expect(missingAtTakeOver).toEqual([]);
    expect(missing).toEqual([]);
  }, 30_000);

  it('when the gained schedules were changed (applyChanges) while the dead replica owned them', async () => {
    const s = await schedules('5s');
    const { r1, r2 } = await divided(s);
    const changed = await schedules('6s');
    r1.applyChanges(changed, []);
    r2.applyChanges(changed, []);
    // Both run the changed definitions: they divide as before (r2 ticks after r1, so its view never changes).
    for (let i = 0; i < 3; i++) {
      await r1.tick();
      await r2.tick();
      await sleep(500);
    }
    const { missing, missingAtTakeOver } = await killAndTakeOver(r1, r2, () => undefined);
    expect(missingAtTakeOver).toEqual([]);
    expect(missing).toEqual([]);
  }, 30_000);

  it('at the take-over tick, also for schedules not due again within its lookahead', async () => {
    // Every 5 s, one family per second: a due time in the gap whose next one lies beyond the take-over tick's
    // lookahead is offered by the take-over (the membership changed) or not at all at that tick.
    const names = Array.from({ length: 40 }, (_, i) => `f${i}`);
    const s: CompiledSchedule[] = [];
    for (let k = 0; k < 5; k++) s.push(...(await schedules('5s', names.filter((_, i) => i % 5 === k), `${k}/5 * * * * *`)));
    const { r1, r2 } = await divided(s);
    const { missing, missingAtTakeOver } = await killAndTakeOver(r1, r2, () => undefined, s);
    expect(missingAtTakeOver).toEqual([]);
    expect(missing).toEqual([]);
  }, 30_000);

  it('but not the due times before a changed definition started', async () => {
    // Never due in the test (no watermark before the change). With 2 s ticks the TTL is 4 s and the take-over's
    // guess (now − TTL − 2 ticks) lies 3–4 s before the change: without the change as its bound, the take-over
    // would offer the new definition's due times from before it existed.
    const s = await schedules('5s', NAMES, '0 0 1 1 *');
    const { r1, r2 } = await divided(s, { planned: false, tickMs: 2_000 });
    const ttlMs = 4_000;
    const changed = await schedules('5s', NAMES, '* * * * * *');
    const changedAt = await redisNow();
    r2.applyChanges(changed, []);
    r1.applyChanges(changed, []);
    const lastHeartbeat = performance.now();
    await r1.tick(); // r1's last tick (it plans its share of the changed definitions), then it dies
    for (let i = 0; i < 3; i++) {
      await sleep(500);
      await r2.tick(); // r1's share of the changed schedules: passive on r2
    }
    expect(performance.now() - lastHeartbeat, 'busy machine: r1 lapsed before the take-over under test').toBeLessThan(ttlMs - 200);
    await sleep(lastHeartbeat + ttlMs + 500 - performance.now());
    await r2.tick(); // takes over r1's share of the changed schedules
    const before: string[] = [];
    for (const n of NAMES) {
      for (const key of await pr.redis.zrange(keys.runs(n), 0, -1)) if (Date.parse(key.slice(n.length + 1)) <= changedAt) before.push(key);
    }
    expect(before).toEqual([]);
    // And the take-over happened: every due time from the change on has a record.
    expect(await silent(NAMES, changedAt + 1_000, (await redisNow()) + 2_000)).toEqual([]);
  }, 30_000);
});
