/**
 * Operations: metrics values after a scenario agree with the run records, health and readiness (flipping when
 * Redis stops and recovering when it returns), and no secrets in logs.
 */
import { spawnSync } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { Flock, sleep, until } from '../support/flock.js';
import { sumMetric as sum } from '../support/metrics.js';
import { BIN, ROOT } from '../support/replica.js';

const get = async (url: string): Promise<{ status: number; text: string }> => {
  const r = await fetch(url, { signal: AbortSignal.timeout(5000) });
  return { status: r.status, text: await r.text() };
};

describe('metrics, health and logs', () => {
  let flock: Flock;
  afterEach(() => flock?.close());

  it("serves metrics that job kinds and in-process jobs register on prom-client's default registry", async () => {
    flock = await Flock.start();
    const file = flock.writeSchedules(`schedules:
  - { name: gauge, cron: "* * * * * *", job: { kind: module, path: ${ROOT}/test/fixtures/jobs/gauge.mjs, isolation: none } }
`);
    const r = await flock.startReplica({ name: 'g1', schedules: file });
    await until(async () => (await flock.runs('gauge')).some((x) => x.state === 'succeeded'), 15_000, 'a run of the gauge job');
    const { status, text } = await get(`${r.adminUrl}/metrics`);
    expect(status).toBe(200);
    expect(text).toMatch(/^user_job_last_value\{replica="g1"\} 42$/m);
    expect(text).toMatch(/^cronflock_runs_total\{/m);
  });

  it('counts runs, failures, skips and lateness as the records say; last success is flock-wide', async () => {
    flock = await Flock.start();
    flock.receiver.status.set('bad', 500);
    const file = flock.writeSchedules(`schedules:
  - { name: ok, cron: "* * * * * *", job: { kind: http, url: ${flock.receiver.url}/ok } }
  - { name: bad, cron: "* * * * * *", job: { kind: http, url: ${flock.receiver.url}/bad } }
  - { name: paused, cron: "* * * * * *", suspend: true, job: { kind: http, url: ${flock.receiver.url}/p } }
`);
    const rs = [await flock.startReplica({ name: 'm1', schedules: file }), await flock.startReplica({ name: 'm2', schedules: file })];
    await sleep(5000);
    for (const s of ['ok', 'bad']) {
      const r = spawnSync(process.execPath, [BIN, 'suspend', s, '--redis', flock.redis.url], { cwd: ROOT, encoding: 'utf8' });
      expect(r.status, r.stderr).toBe(0);
    }
    await sleep(2500); // in-flight runs end; from now on occurrences of ok/bad are skipped
    // Skips of the suspended schedules go on while we look: read records before and after the scrape.
    const before = await flock.runs();
    const texts = await Promise.all(rs.map(async (r) => (await get(`${r.adminUrl}/metrics`)).text));
    const runs = await flock.runs();
    const countIn = (list: typeof runs, schedule: string, state: string, reason?: string) =>
      list.filter((r) => r.schedule === schedule && r.state === state && (reason === undefined || r.reason === reason)).length;
    const count = (schedule: string, state: string, reason?: string) => countIn(runs, schedule, state, reason);
    const between = (metric: number, schedule: string, state: string, reason?: string) => {
      expect(metric).toBeGreaterThanOrEqual(countIn(before, schedule, state, reason));
      expect(metric).toBeLessThanOrEqual(count(schedule, state, reason));
    };
    const okSucceeded = count('ok', 'succeeded');
    expect(okSucceeded).toBeGreaterThanOrEqual(4);
    expect(sum(texts, 'cronflock_runs_total', { schedule: 'ok', state: 'succeeded' })).toBe(okSucceeded);
    expect(sum(texts, 'cronflock_runs_total', { schedule: 'bad', state: 'failed' })).toBe(count('bad', 'failed'));
    between(sum(texts, 'cronflock_occurrences_not_run_total', { schedule: 'ok', state: 'skipped', reason: 'suspended' }), 'ok', 'skipped', 'suspended');
    expect(count('ok', 'skipped', 'suspended')).toBeGreaterThanOrEqual(1);
    between(sum(texts, 'cronflock_occurrences_not_run_total', { schedule: 'paused', state: 'skipped' }), 'paused', 'skipped');
    expect(sum(texts, 'cronflock_start_lateness_seconds_count', { schedule: 'ok' })).toBe(okSucceeded);
    expect(sum(texts, 'cronflock_claims_total', { schedule: 'ok', kind: 'first' })).toBe(okSucceeded);
    const lastOk = Math.max(...runs.filter((r) => r.schedule === 'ok' && r.state === 'succeeded').map((r) => r.endMs!));
    for (const t of texts) {
      expect(sum([t], 'cronflock_last_success_timestamp_seconds', { schedule: 'ok' })).toBeCloseTo(lastOk / 1000, 2);
      expect(t).not.toMatch(/cronflock_last_success_timestamp_seconds\{[^}]*schedule="bad"/);
      expect(t).toMatch(/^cronflock_clock_skew_seconds\{replica="m[12]"\} -?\d/m);
      expect(t).toMatch(/^cronflock_active_runs\{replica="m[12]"\} 0$/m);
    }
  });

  it('reports ready only while Redis answers and planning progresses; alive throughout', async () => {
    flock = await Flock.start();
    const file = flock.writeSchedules(`schedules:
  - { name: ok, cron: "* * * * * *", job: { kind: http, url: ${flock.receiver.url}/ok } }
`);
    const r = await flock.startReplica({ name: 'h1', schedules: file });
    const base = r.adminUrl;
    await until(async () => (await get(`${base}/readyz`)).status === 200, 10_000, 'ready');
    await flock.redis.stop('SIGTERM');
    await until(async () => (await get(`${base}/readyz`)).status === 503, 10_000, 'not ready');
    const down = await get(`${base}/readyz`);
    expect(JSON.parse(down.text)).toMatchObject({ ready: false });
    expect(down.text).toMatch(/redis: /);
    expect((await get(`${base}/healthz`)).status).toBe(200);
    await flock.redis.restart();
    await until(async () => (await get(`${base}/readyz`)).status === 200, 15_000, 'ready again');
    const before = flock.receiver.of('ok').length;
    await sleep(2500);
    expect(flock.receiver.of('ok').length).toBeGreaterThan(before); // and it works again
    expect(r.child.exitCode).toBeNull(); // nothing crashed

    // A hung Redis (stopped, not gone): /metrics still answers, at once-ish, with the error counter.
    process.kill(flock.redis.pid!, 'SIGSTOP');
    try {
      const t0 = Date.now();
      const m = await get(`${base}/metrics`);
      expect(m.status).toBe(200);
      expect(m.text).toMatch(/^cronflock_redis_errors_total\{replica="h1"\} \d/m);
      expect(Date.now() - t0).toBeLessThan(4_000);
    } finally {
      process.kill(flock.redis.pid!, 'SIGCONT');
    }
  });

  it('keeps credentials out of logs and records: URL user info and headers', async () => {
    flock = await Flock.start();
    const port = new URL(flock.receiver.url).port;
    const file = flock.writeSchedules(`schedules:
  - name: sec
    cron: "* * * * * *"
    job: { kind: http, url: "http://user:s3cr3t-pw@127.0.0.1:${port}/sec", headers: { X-Api-Key: s3cr3t-key } }
  - name: sec-down
    cron: "* * * * * *"
    job: { kind: http, url: "http://user:s3cr3t-pw@127.0.0.1:1/x" }
`);
    const r = await flock.startReplica({ name: 's1', schedules: file, args: ['--redis', flock.redis.url.replace('redis://', 'redis://default:s3cr3t-redis@')] });
    await until(() => flock.receiver.of('sec').length >= 2, 10_000, 'calls');
    await sleep(1000);
    const logs = r.lines.map((l) => JSON.stringify(l)).join('\n') + r.stderr.join('');
    expect(logs).not.toMatch(/s3cr3t/);
    const records = JSON.stringify(await flock.runs());
    expect(records).not.toMatch(/s3cr3t/);
    expect(records).toMatch(/request failed/); // sec-down failed, and its error says so without the password
  });
});
