/**
 * Operations: metrics values after a scenario agree with the run records, health and readiness (flipping when
 * Redis stops and recovering when it returns, answering before Redis is ever reachable), Redis error replies
 * counted, /metrics under a scrape storm with 50,000 schedules (bounded Redis cost, claims on time), and no
 * secrets in logs.
 */
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { get as httpGet } from 'node:http';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { Keyspace } from '../../runner/redis/keys.js';
import { freePort, RedisServerProcess } from '../../runner/redis/server-process.js';
import { Flock, sleep, until } from '../support/flock.js';
import { sumMetric as sum } from '../support/metrics.js';
import { BIN, ReplicaProcess, ROOT } from '../support/replica.js';
import { monitorCommands } from '../support/monitor.js';

/** Calls per command since the server started (INFO commandstats). */
async function commandCalls(redis: Redis): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (const m of (await redis.info('commandstats')).matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) out.set(m[1]!, Number(m[2]));
  return out;
}

/** A GET as Prometheus sends it (gzip accepted); the body is counted and dropped unless `keep`. */
function scrape(url: string, keep = false): Promise<{ status: number; bytes: number; ms: number; text?: string }> {
  const t0 = Date.now();
  return new Promise((resolve, reject) => {
    const req = httpGet(url, { headers: { 'accept-encoding': 'gzip' } }, (res) => {
      let bytes = 0;
      const chunks: Buffer[] = [];
      res.on('data', (b: Buffer) => {
        bytes += b.length;
        if (keep) chunks.push(b);
      });
      res.on('end', () => {
        const raw = Buffer.concat(chunks);
        const text = keep ? (res.headers['content-encoding'] === 'gzip' ? gunzipSync(raw) : raw).toString() : undefined;
        resolve({ status: res.statusCode ?? 0, bytes, ms: Date.now() - t0, ...(text !== undefined ? { text } : {}) });
      });
    });
    req.on('error', reject);
    req.setTimeout(60_000, () => req.destroy(new Error('scrape timed out')));
  });
}

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
    // Each occurrence's first attempt is a first claim with a lateness, once: as many as records that started
    // (a first claim lost under load and re-claimed shows as attempt 2, still one first start).
    const okStarted = runs.filter((r) => r.schedule === 'ok' && r.firstStartMs !== undefined).length;
    expect(okStarted).toBeGreaterThanOrEqual(okSucceeded);
    expect(sum(texts, 'cronflock_start_lateness_seconds_count', { schedule: 'ok' })).toBe(okStarted);
    expect(sum(texts, 'cronflock_claims_total', { schedule: 'ok', kind: 'first' })).toBe(okStarted);
    const lastOk = Math.max(...runs.filter((r) => r.schedule === 'ok' && r.state === 'succeeded').map((r) => r.endMs!));
    // The flock-wide last success comes from the admin server's cache, refreshed every couple of seconds.
    await until(
      async () => {
        const now = await Promise.all(rs.map(async (r) => (await get(`${r.adminUrl}/metrics`)).text));
        return now.every((t) => Math.abs(sum([t], 'cronflock_schedule_last_success_timestamp_seconds', { schedule: 'ok' }) - lastOk / 1000) < 0.005);
      },
      10_000,
      "both replicas serving ok's latest success",
    );
    for (const t of texts) {
      expect(t).not.toMatch(/cronflock_schedule_last_success_timestamp_seconds\{[^}]*schedule="bad"/);
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
      expect(m.text).toMatch(/^cronflock_redis_errors_total\{kind="connection",replica="h1"\} \d/m);
      expect(Date.now() - t0).toBeLessThan(4_000);
    } finally {
      process.kill(flock.redis.pid!, 'SIGCONT');
    }
  });

  it('answers /healthz from start-up, before Redis is reachable; /readyz says why it is not ready, then ready', async () => {
    flock = await Flock.start();
    const file = flock.writeSchedules(`schedules:
  - { name: ok, cron: "* * * * * *", job: { kind: http, url: ${flock.receiver.url}/ok } }
`);
    // A Redis that is not there yet (the replica starts first, as in docker compose or Kubernetes).
    const port = await freePort();
    const r = await ReplicaProcess.start({ name: 'early', schedules: file, redisUrl: `redis://127.0.0.1:${port}`, waitFor: 'admin' });
    flock.replicas.push(r);
    const health = await get(`${r.adminUrl}/healthz`);
    expect(health.status).toBe(200);
    const ready = await get(`${r.adminUrl}/readyz`);
    expect(ready.status).toBe(503);
    expect(JSON.parse(ready.text)).toMatchObject({ ready: false, problems: expect.arrayContaining(['starting: waiting for Redis']) });
    await until(async () => (await get(`${r.adminUrl}/readyz`)).text.includes('redis: nothing accepts connections there (connection refused)'), 10_000, 'readyz saying why');
    expect((await get(`${r.adminUrl}/readyz`)).text).not.toMatch(/enableOfflineQueue|maxRetriesPerRequest|isn't writeable/);
    expect((await get(`${r.adminUrl}/metrics`)).status).toBe(200);
    expect(r.lines.some((l) => l.msg === 'replica running')).toBe(false);
    // While it waits, it says why, in words (not the client's internals).
    const waiting = await r.waitForLog((l) => String(l.msg).startsWith('cannot reach Redis yet'), 15_000, 'waiting for Redis');
    expect(waiting.msg).toMatch(/connection refused/);
    expect(waiting.hint).toMatch(/is Redis running/);
    expect(JSON.stringify(r.lines)).not.toMatch(/maxRetriesPerRequest|enableOfflineQueue/);
    expect((await get(`${r.adminUrl}/healthz`)).status).toBe(200);
    const late = await RedisServerProcess.start({ port });
    try {
      await r.waitForLog((l) => l.msg === 'replica running', 30_000, 'start once Redis is there');
      await until(async () => (await get(`${r.adminUrl}/readyz`)).status === 200, 15_000, 'ready');
    } finally {
      await r.stop();
      await late.cleanup();
    }
  });

  it('counts Redis error replies such as OOM in cronflock_redis_errors_total{kind="command"}', async () => {
    flock = await Flock.start();
    const file = flock.writeSchedules(`schedules:
  - { name: ok, cron: "* * * * * *", job: { kind: http, url: ${flock.receiver.url}/ok } }
`);
    const r = await flock.startReplica({ name: 'oom', schedules: file });
    const errors = async (kind: string): Promise<number> =>
      sum([(await get(`${r.adminUrl}/metrics`)).text], 'cronflock_redis_errors_total', { kind, replica: 'oom' });
    await until(() => flock.receiver.of('ok').length >= 1, 10_000, 'a run');
    expect(await errors('command')).toBe(0);
    await flock.redisClient.config('SET', 'maxmemory', '1'); // noeviction: every write is refused with OOM
    try {
      await sleep(3000);
    } finally {
      await flock.redisClient.config('SET', 'maxmemory', '0');
    }
    // The admin server renders /metrics at most once a second: the count shows within a couple of seconds.
    await until(async () => (await errors('command')) > 0, 5_000, 'error replies counted');
    const logs = r.lines.map((l) => JSON.stringify(l)).join('\n');
    // They were real OOM replies, logged in words (runner/redis/outage.ts → explainRedisError), not ioredis's own
    expect(logs).toMatch(/Redis is out of memory/);
    await until(() => flock.receiver.of('ok').filter((d) => d.receivedMs > Date.now() - 1500).length > 0, 10_000, 'runs again');
  });

  it('serves /metrics with 50,000 schedules to 100 concurrent scrapes at a bounded Redis cost, while a schedule runs on time', async () => {
    flock = await Flock.start();
    const N = 50_000;
    const bulk = Array.from({ length: N }, (_, i) => `  - { name: bulk-${i}, cron: "0 3 * * *", job: { kind: http, url: "${flock.receiver.url}/bulk" } }`);
    // The schedule that must keep running: a job in the replica, so that only the replica's timing counts (the
    // test process, busy scraping, would answer an http job late).
    const noop = join(flock.dir, 'noop.mjs');
    writeFileSync(noop, 'export default { run() { return { ok: true }; } };\n');
    const file = flock.writeSchedules(`schedules:
  - { name: tick, cron: "* * * * * *", job: { kind: module, path: ${noop}, isolation: none } }
${bulk.join('\n')}
`);
    // 50,000 flock-wide last successes, as a long-running flock has them.
    const keys = new Keyspace();
    const redis = flock.redisClient;
    for (let i = 0; i < N; i += 5000) {
      const fields: string[] = [];
      for (let j = i; j < i + 5000; j++) fields.push(`bulk-${j}`, String(Date.now() - j * 1000));
      await redis.hset(keys.lastSuccess, ...fields);
    }
    const r = await flock.startReplica({ name: 'big', schedules: file, startTimeoutMs: 180_000 });
    const metricsUrl = `${r.adminUrl}/metrics`;
    // The first complete last-success pass (every 10 s; 101 pages of 500).
    await until(async () => (await get(metricsUrl)).text.includes('schedule="bulk-49999"'), 30_000, 'all last successes served');
    await until(async () => (await flock.runs('tick')).filter((x) => x.state === 'succeeded').length >= 3, 15_000, 'tick runs');

    // Every command that names the last-success hash, except the finish script's (a run's success).
    const onLastOk = new Map<string, number>();
    const monitor = await monitorCommands(flock.redis.url, ({ args, source }) => {
      const cmd = args[0]!.toLowerCase();
      if (source !== 'lua' && cmd !== 'evalsha' && cmd !== 'eval' && args.includes(keys.lastSuccess)) onLastOk.set(cmd, (onLastOk.get(cmd) ?? 0) + 1);
    });
    const before = await commandCalls(redis);
    const stormStart = Date.now();
    const results: { status: number; bytes: number; ms: number }[] = [];
    const readiness: number[] = [];
    const probe = setInterval(() => void get(`${r.adminUrl}/readyz`).then((x) => readiness.push(x.status), () => readiness.push(0)), 1000);
    try {
      while (Date.now() - stormStart < 12_000) {
        results.push(...(await Promise.all(Array.from({ length: 100 }, () => scrape(metricsUrl)))));
      }
    } finally {
      clearInterval(probe);
    }
    const stormEnd = Date.now();
    const after = await commandCalls(redis);
    monitor.close();
    const delta = (cmd: string): number => (after.get(cmd) ?? 0) - (before.get(cmd) ?? 0);
    const ok = results.filter((x) => x.status === 200);
    console.log(
      `storm: ${results.length} scrapes in ${stormEnd - stormStart} ms, ${ok.length} answered 200 (slowest ${Math.max(...ok.map((x) => x.ms))} ms, ` +
        `${Math.round(ok[0]!.bytes / 1e3)} kB gzipped each); on the last-success hash: ${JSON.stringify(Object.fromEntries(onLastOk))}; ` +
        `Redis calls: hgetall ${delta('hgetall')}, ping ${delta('ping')}; readiness ${readiness.join(',')}`,
    );

    // Every scrape answered: a body, or 503 at once beyond the concurrency limit; never a wait of seconds each.
    expect(results.length).toBeGreaterThanOrEqual(200);
    expect(results.every((x) => x.status === 200 || x.status === 503)).toBe(true);
    expect(ok.length).toBeGreaterThanOrEqual(results.length / 10);
    const one = await scrape(metricsUrl, true);
    expect(one.text).toContain('cronflock_schedule_last_success_timestamp_seconds{schedule="bulk-49999",replica="big"}');
    expect(one.text!.length).toBeGreaterThan(N * 50); // the 50,000 series, each time
    // Redis saw the refresh loop only (a PING a second, a 101-page HSCAN pass every few seconds), no read per
    // scrape or per rendering; and the replica stayed ready throughout.
    const passes = Math.ceil((stormEnd - stormStart) / 2_000) + 1;
    expect(onLastOk.get('hscan') ?? 0, 'the monitor saw the passes').toBeGreaterThan(0);
    expect([...onLastOk.keys()].filter((c) => c !== 'hscan')).toEqual([]);
    expect(onLastOk.get('hscan') ?? 0).toBeLessThanOrEqual(passes * (N / 500 + 1));
    expect(delta('ping')).toBeLessThanOrEqual(Math.ceil((stormEnd - stormStart) / 1000) + 3);
    expect(readiness.length).toBeGreaterThanOrEqual(5);
    expect(readiness.every((x) => x === 200)).toBe(true);
    // …and the schedule kept running on time: every due second of the storm ran, started within 2 s of its fire.
    const runs = (await flock.runs('tick')).filter((x) => x.dueMs >= stormStart + 1000 && x.dueMs <= stormEnd - 2000);
    expect(runs.length).toBeGreaterThanOrEqual(Math.floor((stormEnd - stormStart - 3000) / 1000) - 1);
    for (const x of runs) {
      expect(x.state, x.key).toBe('succeeded');
      expect(x.startMs! - x.fireMs, x.key).toBeLessThan(2000);
    }
  }, 420_000); // a replica with 50,000 schedules takes about half a minute to start, more on a loaded machine

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
