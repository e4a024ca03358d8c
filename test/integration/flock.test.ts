/**
 * Acceptance: three replica processes, one Redis, 20 second-level schedules with jitter, 30 s and more:
 * every occurrence in the interval runs exactly once, inside its jitter window plus a small bound, and the run
 * records agree with what the HTTP receiver saw.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Keyspace } from '../../runner/redis/keys.js';
import { Flock, sleep } from '../support/flock.js';

/** Generous on a shared 2-core machine; the benchmark measures the real figure. */
const START_BOUND_MS = 1_500;
const PERIODS_S = [1, 2, 3, 5];

describe('a flock of three replicas', () => {
  let flock: Flock;
  const schedules: { name: string; periodS: number; jitterMs: number }[] = [];

  beforeAll(async () => {
    flock = await Flock.start();
    for (let i = 0; i < 20; i++) {
      const periodS = PERIODS_S[i % PERIODS_S.length]!;
      schedules.push({ name: `s${String(i).padStart(2, '0')}`, periodS, jitterMs: Math.floor(periodS * 1000 * 0.8) });
    }
    const yaml = `schedules:\n${schedules
      .map(
        (s) => `  - name: ${s.name}
    cron: "*/${s.periodS} * * * * *"
    jitter: ${s.jitterMs}ms
    job: { kind: http, url: ${flock.receiver.url}/hook, timeout: 5s }
`,
      )
      .join('')}`;
    const file = flock.writeSchedules(yaml);
    for (const n of ['r1', 'r2', 'r3']) await flock.startReplica({ name: n, schedules: file });
  });
  afterAll(() => flock?.close());

  it('runs every occurrence of a 30 s interval exactly once, inside its window, and records agree', async () => {
    const t0 = Math.ceil(Date.now() / 1000) * 1000 + 2000;
    const t1 = t0 + 30_000;
    // Wait for the interval plus the widest window plus slack, then look.
    await sleep(t1 + 5000 + 3000 - Date.now());

    const expected: { schedule: string; dueMs: number; jitterMs: number }[] = [];
    for (const s of schedules) {
      const step = s.periodS * 1000;
      for (let d = Math.ceil(t0 / step) * step; d <= t1; d += step) expected.push({ schedule: s.name, dueMs: d, jitterMs: s.jitterMs });
    }
    expect(expected.length).toBeGreaterThan(300);

    const counts = flock.receiver.countByOccurrence();
    const duplicates = [...counts].filter(([, n]) => n > 1);
    expect(duplicates).toEqual([]);

    const byKey = new Map(flock.receiver.deliveries.map((d) => [d.body.occurrence, d.body]));
    const runs = new Map((await flock.runs()).map((r) => [r.key, r]));
    const missing: string[] = [];
    const late: string[] = [];
    for (const e of expected) {
      const key = `${e.schedule}@${new Date(e.dueMs).toISOString()}`;
      const body = byKey.get(key);
      if (!body) {
        missing.push(key);
        continue;
      }
      const fire = Date.parse(body.fireAt);
      const start = Date.parse(body.startedAt);
      expect(Date.parse(body.dueAt)).toBe(e.dueMs);
      expect(fire).toBeGreaterThanOrEqual(e.dueMs);
      expect(fire).toBeLessThan(e.dueMs + e.jitterMs);
      if (start < fire || start > fire + START_BOUND_MS) late.push(`${key} started ${start - fire} ms after fire`);
      const rec = runs.get(key);
      expect(rec, key).toBeDefined();
      expect(rec!.state).toBe('succeeded');
      expect(rec!.replica).toBe(body.replica);
      expect(rec!.fencingToken).toBe(body.fencingToken);
      expect(rec!.attempt).toBe(1);
      expect(rec!.fireMs).toBe(fire);
    }
    expect(missing).toEqual([]);
    expect(late).toEqual([]);
    // No leader: the work is shared.
    const replicas = new Set(expected.map((e) => byKey.get(`${e.schedule}@${new Date(e.dueMs).toISOString()}`)!.replica));
    expect(replicas.size).toBeGreaterThanOrEqual(2);

    // Planning is divided, not repeated: with a stable membership each schedule's occurrences are recorded by
    // one replica (its owner), and the schedules are spread over the replicas.
    const late10 = expected.filter((e) => e.dueMs >= t0 + 10_000);
    const plannedBy = await Promise.all(
      late10.map((e) => flock.redisClient.hget(new Keyspace().occurrence(`${e.schedule}@${new Date(e.dueMs).toISOString()}`), 'plannedBy')),
    );
    const owners = new Map<string, Set<string>>();
    late10.forEach((e, i) => owners.set(e.schedule, (owners.get(e.schedule) ?? new Set()).add(plannedBy[i] ?? '?')));
    const shared = [...owners].filter(([, by]) => by.size !== 1).map(([name, by]) => `${name}: ${[...by].join(',')}`);
    expect(shared).toEqual([]);
    expect(new Set([...owners.values()].map((by) => [...by][0])).size).toBeGreaterThanOrEqual(2);
  });

  it('takes over the planning of a SIGKILLed replica: every later occurrence still runs exactly once', async () => {
    const victim = flock.replicas[2]!;
    const keys = new Keyspace();
    // Schedules the victim plans now (their latest records name it).
    const latest = await Promise.all(
      schedules.map(async (s) => {
        const [key] = await flock.redisClient.zrevrange(keys.runs(s.name), 0, 0);
        return key ? flock.redisClient.hget(keys.occurrence(key), 'plannedBy') : null;
      }),
    );
    const victims = schedules.filter((_, i) => latest[i] === victim.name);
    expect(victims.length).toBeGreaterThan(0);
    victim.signal('SIGKILL');
    const t0 = Math.ceil(Date.now() / 1000) * 1000;
    const t1 = t0 + 15_000;
    await sleep(t1 + 5000 + 8000 - Date.now());
    const counts = flock.receiver.countByOccurrence();
    const missing: string[] = [];
    for (const s of victims) {
      const step = s.periodS * 1000;
      for (let d = Math.ceil(t0 / step) * step; d <= t1; d += step) {
        const key = `${s.name}@${new Date(d).toISOString()}`;
        if (counts.get(key) !== 1) missing.push(`${key}: ${counts.get(key) ?? 0} deliveries`);
      }
    }
    expect(missing).toEqual([]);
  });
});
