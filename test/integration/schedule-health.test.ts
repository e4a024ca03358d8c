/**
 * The per-schedule health metrics (runner/admin/schedule-health.ts) as replicas serve them, checked against what
 * the run records and the cron say: next fire time, last success, overdue (the rule of records/health.ts with a
 * per-schedule `overdueGrace`), last result, consecutive failures, suspension; the flock-wide totals, Redis
 * reachability and queue gauges; and `--schedule-metrics` on / top:N / off.
 */
import { spawnSync } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { compileCron } from '../../runner/schedule/cron.js';
import { Flock, sleep, until } from '../support/flock.js';
import { samplesOf } from '../support/metrics.js';
import { BIN, ROOT } from '../support/replica.js';

const get = async (url: string): Promise<string> => (await fetch(url, { signal: AbortSignal.timeout(5000) })).text();
const one = (text: string, name: string, labels: Record<string, string>): number | undefined => {
  const s = samplesOf(text, name, labels);
  if (s.length > 1) throw new Error(`${s.length} series of ${name} ${JSON.stringify(labels)}`);
  return s[0]?.value;
};

describe('per-schedule health metrics', () => {
  let flock: Flock;
  afterEach(() => flock?.close());

  it('agree with the run records and the cron; --schedule-metrics chooses which schedules get series', async () => {
    flock = await Flock.start();
    flock.receiver.status.set('bad', 500);
    const file = flock.writeSchedules(`schedules:
  - { name: ok, cron: "* * * * * *", job: { kind: http, url: ${flock.receiver.url}/ok } }
  - { name: bad, cron: "* * * * * *", overdueGrace: 2s, job: { kind: http, url: ${flock.receiver.url}/bad } }
  - { name: paused, cron: "* * * * * *", suspend: true, job: { kind: http, url: ${flock.receiver.url}/p } }
  - { name: rare, cron: "0 3 * * *", job: { kind: http, url: ${flock.receiver.url}/rare } }
`);
    const all = await flock.startReplica({ name: 'all', schedules: file });
    const top = await flock.startReplica({ name: 'top', schedules: file, args: ['--schedule-metrics', 'top:1'] });
    const off = await flock.startReplica({ name: 'off', schedules: file, args: ['--schedule-metrics', 'off'] });
    const overdue = (t: string, s: string) => one(t, 'cronflock_schedule_overdue_seconds', { schedule: s });
    // bad is owed its first fire time after it was loaded; 2 s of grace later it is overdue, and stays so.
    await until(async () => (overdue(await get(`${all.adminUrl}/metrics`), 'bad') ?? 0) > 1, 20_000, 'bad overdue');
    const t0 = Date.now();
    const text = await get(`${all.adminUrl}/metrics`);
    const runs = await flock.runs();
    const endsOf = (s: string, state: string) => new Set(runs.filter((r) => r.schedule === s && r.state === state).map((r) => r.endMs));

    // ok: succeeding every second: not overdue, no failures, its last success one of its records' ends.
    expect(overdue(text, 'ok')).toBe(0);
    expect(one(text, 'cronflock_schedule_consecutive_failures', { schedule: 'ok' })).toBe(0);
    expect(one(text, 'cronflock_schedule_last_result', { schedule: 'ok', state: 'succeeded' })).toBe(1);
    expect(samplesOf(text, 'cronflock_schedule_last_result', { schedule: 'ok' })).toHaveLength(1);
    const okLast = one(text, 'cronflock_schedule_last_success_timestamp_seconds', { schedule: 'ok' })!;
    expect(endsOf('ok', 'succeeded').has(Math.round(okLast * 1000))).toBe(true);
    const okNext = one(text, 'cronflock_schedule_next_fire_timestamp_seconds', { schedule: 'ok' })!;
    expect(Number.isInteger(okNext)).toBe(true); // no jitter: a whole second
    expect(Math.abs(okNext * 1000 - t0)).toBeLessThan(6_000); // values are a pass (seconds) old
    // bad: failing every second, overdue since its first owed fire time + 2 s.
    expect(one(text, 'cronflock_schedule_last_result', { schedule: 'bad', state: 'failed' })).toBe(1);
    expect(one(text, 'cronflock_schedule_consecutive_failures', { schedule: 'bad' })).toBeGreaterThanOrEqual(1);
    expect(one(text, 'cronflock_schedule_last_success_timestamp_seconds', { schedule: 'bad' })).toBeUndefined();
    const firstBadFire = Math.min(...runs.filter((r) => r.schedule === 'bad').map((r) => r.fireMs));
    expect(overdue(text, 'bad')!).toBeLessThanOrEqual((t0 - (firstBadFire + 2000)) / 1000 + 0.001);
    // paused: suspended in its file, never overdue, its occurrences skipped.
    expect(one(text, 'cronflock_schedule_suspended', { schedule: 'paused' })).toBe(1);
    expect(one(text, 'cronflock_schedule_suspended', { schedule: 'ok' })).toBe(0);
    expect(overdue(text, 'paused')).toBe(0);
    expect(one(text, 'cronflock_schedule_last_result', { schedule: 'paused', state: 'skipped' })).toBe(1);
    // rare: the cron's next due time, exactly; nothing ran yet.
    const rareNext = compileCron('0 3 * * *', 'UTC').next(t0)!;
    expect(one(text, 'cronflock_schedule_next_fire_timestamp_seconds', { schedule: 'rare' })).toBe(rareNext / 1000);
    expect(samplesOf(text, 'cronflock_schedule_last_result', { schedule: 'rare' })).toEqual([]);
    expect(overdue(text, 'rare')).toBe(0);
    // Flock-wide totals and gauges.
    expect(one(text, 'cronflock_schedules', { health: 'total' })).toBe(4);
    expect(one(text, 'cronflock_schedules', { health: 'overdue' })).toBe(1);
    expect(one(text, 'cronflock_schedules', { health: 'failing' })).toBe(1);
    expect(one(text, 'cronflock_schedules', { health: 'suspended' })).toBe(1);
    expect(one(text, 'cronflock_redis_up', {})).toBe(1);
    expect(samplesOf(text, 'cronflock_queue_jobs', { lane: 'live', state: 'waiting' })).toHaveLength(1);

    // top:1 serves the most overdue schedule only; off serves none, and the totals still.
    await until(async () => overdue(await get(`${top.adminUrl}/metrics`), 'bad') !== undefined, 10_000, 'top:1 serving bad');
    const topText = await get(`${top.adminUrl}/metrics`);
    expect(new Set(samplesOf(topText, 'cronflock_schedule_overdue_seconds').map((s) => s.labels.schedule))).toEqual(new Set(['bad']));
    expect(samplesOf(topText, 'cronflock_schedule_next_fire_timestamp_seconds').map((s) => s.labels.schedule)).toEqual(['bad']);
    const offText = await get(`${off.adminUrl}/metrics`);
    expect(offText).not.toMatch(/^cronflock_schedule_/m);
    expect(one(offText, 'cronflock_schedules', { health: 'overdue' })).toBe(1);

    // Suspending bad ends the run of failures where it is: its occurrences are skipped, the count stays at
    // exactly the failed records, and a suspended schedule is not overdue.
    const r = spawnSync(process.execPath, [BIN, 'suspend', 'bad', '--redis', flock.redis.url], { cwd: ROOT, encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    await until(
      async () => one(await get(`${all.adminUrl}/metrics`), 'cronflock_schedule_last_result', { schedule: 'bad', state: 'skipped' }) === 1,
      15_000,
      'bad skipped',
    );
    await sleep(2500); // in-flight failures end, and another pass reads them
    const after = await get(`${all.adminUrl}/metrics`);
    const failed = (await flock.runs('bad')).filter((x) => x.state === 'failed').length;
    expect(one(after, 'cronflock_schedule_consecutive_failures', { schedule: 'bad' })).toBe(failed);
    expect(one(after, 'cronflock_schedule_suspended', { schedule: 'bad' })).toBe(1);
    expect(overdue(after, 'bad')).toBe(0);
  });

  it('refuses a bad --schedule-metrics value before starting', () => {
    const r = spawnSync(process.execPath, [BIN, 'start', 'x.yaml', '--schedule-metrics', 'top:0'], { cwd: ROOT, encoding: 'utf8' });
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/--schedule-metrics "top:0" must be on, off or top:N/);
  });
});
