/**
 * failover: SIGKILL the replica holding a run; time until another replica starts it (claim time on the Redis
 * clock − kill time; one host, so one clock). At the default lock and at the shortest supported ones; then the
 * same for a lease-based leader-election singleton with the Kubernetes defaults (bench/peers/lease.ts): time from
 * SIGKILLing the leader until a new leader starts the run.
 *
 *   --trials 30               per setting (each trial is a fresh flock of 3 replicas / 3 candidates)
 *   --locks default,1s,500ms  cronflock lock settings ("default" = no --lock flag: 4 s)
 *   --parallel 5              trials run at once (separate namespaces / keys on the same Redis)
 *   --systems cronflock,lease
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { Keyspace } from '../../runner/redis/keys.js';
import { forkTracked, killAndWait, ReplicaProc } from '../lib/procs.js';
import { BenchRedis } from '../lib/redis.js';
import { report } from '../lib/report.js';
import { DIST_BENCH, Flags, fmt, pct, ratio, ROOT, sleep } from '../lib/util.js';

const HOLD_JOB = join(ROOT, 'bench/hold.mjs');

interface Setting {
  label: string;
  /** Prefix of its figures in bench/current.json, e.g. `lock500ms`, `lease`. */
  figure: string;
  times: number[];
  errors: string[];
}

/** One cronflock trial in namespace `ns`: 3 replicas, a 60 s run every second; kill the claimant of one. */
async function cronflockTrial(redis: BenchRedis, probe: Redis, ns: string, lockArgs: string[], dir: string): Promise<number> {
  const file = join(dir, `${ns}.yaml`);
  writeFileSync(file, `schedules:\n  - {name: hold, cron: "* * * * * *", job: {kind: module, path: ${HOLD_JOB}, isolation: none, params: {ms: 60000}}}\n`);
  const keys = new Keyspace(ns);
  const procs: ReplicaProc[] = [];
  try {
    const started = await Promise.allSettled(
      [1, 2, 3].map((i) =>
        ReplicaProc.start({ name: `${ns}-r${i}`, schedules: file, redisUrl: redis.url, namespace: ns, args: lockArgs, probe, readyTimeoutMs: 60_000 }),
      ),
    );
    for (const s of started) if (s.status === 'fulfilled') procs.push(s.value);
    const bad = started.find((s) => s.status === 'rejected');
    if (bad) throw (bad as PromiseRejectedResult).reason;
    await sleep(1500);
    // The newest running occurrence claimed once.
    let victim: { key: string; replica: string } | undefined;
    for (let i = 0; i < 100 && !victim; i++) {
      const recent = await probe.zrevrange(keys.runs('hold'), 0, 5);
      for (const k of recent) {
        const h = await probe.hgetall(keys.occurrence(k));
        if (h.state === 'running' && h.token === '1' && h.replica) {
          victim = { key: k, replica: h.replica };
          break;
        }
      }
      if (!victim) await sleep(50);
    }
    if (!victim) throw new Error('no running occurrence');
    const proc = procs.find((p) => p.name === victim!.replica);
    if (!proc) throw new Error(`claimant ${victim.replica} is not ours`);
    const killedAt = Date.now();
    proc.signal('SIGKILL');
    for (let i = 0; i < 3000; i++) {
      await sleep(10);
      const h = await probe.hmget(keys.occurrence(victim.key), 'token', 'startMs');
      if (Number(h[0]) >= 2) return Number(h[1]) - killedAt;
    }
    throw new Error('not re-claimed within 30 s');
  } finally {
    await Promise.all(procs.map((p) => p.kill()));
    const stale = await probe.keys(`{${ns}}*`);
    for (let i = 0; i < stale.length; i += 500) await probe.del(...stale.slice(i, i + 500));
  }
}

/** One lease trial: 3 candidates on key `lease:<id>`; kill the leader once it runs; time to the next leader's run. */
async function leaseTrial(redis: BenchRedis, probe: Redis, id: string): Promise<number> {
  const key = `lease:${id}`;
  const cands = [1, 2, 3].map((i) =>
    forkTracked(join(DIST_BENCH, 'peers/lease.js'), {
      BENCH_REDIS_URL: redis.url,
      BENCH_LEASE_KEY: key,
      BENCH_IDENTITY: `${id}-c${i}`,
    }),
  );
  try {
    let first: { holder: string; startMs: number } | undefined;
    for (let i = 0; i < 1000 && !first; i++) {
      const v = await probe.get(`${key}:run`);
      if (v) first = JSON.parse(v) as { holder: string; startMs: number };
      else await sleep(20);
    }
    if (!first) throw new Error('no leader');
    await sleep(500 + Math.random() * 2000); // kill at a random point of the renew cycle
    const victim = cands[Number(first.holder.slice(first.holder.lastIndexOf('-c') + 2)) - 1]!;
    const killedAt = Date.now();
    victim.kill('SIGKILL');
    for (let i = 0; i < 6000; i++) {
      await sleep(10);
      const v = await probe.get(`${key}:run`);
      const r = v ? (JSON.parse(v) as { holder: string; startMs: number }) : undefined;
      if (r && r.holder !== first.holder) return r.startMs - killedAt;
    }
    throw new Error('no new leader within 60 s');
  } finally {
    await Promise.all(cands.map((c) => killAndWait(c)));
    await probe.del(key, `${key}:run`);
  }
}

async function runTrials(n: number, parallel: number, trial: (i: number) => Promise<number>, s: Setting): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(parallel, n) }, async () => {
      while (next < n) {
        const i = next++;
        try {
          const t = await trial(i);
          s.times.push(t);
          process.stdout.write(`  ${s.label} trial ${i + 1}: ${t} ms\n`);
        } catch (err) {
          s.errors.push((err as Error).message);
          process.stdout.write(`  ${s.label} trial ${i + 1} failed: ${(err as Error).message}\n`);
        }
      }
    }),
  );
}

export async function failover(f: Flags): Promise<void> {
  const trials = f.num('trials', 30);
  const locks = f.list('locks', ['default', '1s', '500ms']);
  const parallel = f.num('parallel', 5);
  const systems = f.list('systems', ['cronflock', 'lease']);
  const redis = await BenchRedis.start();
  const probe = new Redis(redis.url, { maxRetriesPerRequest: 3 });
  const dir = mkdtempSync(join(tmpdir(), 'cronflock-failover-'));
  const settings: Setting[] = [];
  const t0 = Date.now();
  try {
    if (systems.includes('cronflock')) {
      for (const lock of locks) {
        const s: Setting = { label: lock === 'default' ? 'cronflock, default lock (4s)' : `cronflock, --lock ${lock}`, figure: `lock${lock}`, times: [], errors: [] };
        settings.push(s);
        const args = lock === 'default' ? [] : ['--lock', lock];
        await runTrials(trials, parallel, (i) => cronflockTrial(redis, probe, `fo-${lock}-${i}`.replace(/[^A-Za-z0-9._-]/g, ''), args, dir), s);
      }
    }
    let lease: Setting | undefined;
    if (systems.includes('lease')) {
      lease = { label: 'lease singleton (15 s / 10 s / 2 s)', figure: 'lease', times: [], errors: [] };
      settings.push(lease);
      await runTrials(trials, parallel, (i) => leaseTrial(redis, probe, `l${i}`), lease);
    }
    const leaseP99 = lease ? pct(lease.times, 99) : undefined;
    const leaseP50 = lease ? pct(lease.times, 50) : undefined;
    await report({
      title: `failover: SIGKILL the holder of a run, time until another replica starts it; ${trials} trials per setting, ${parallel} at a time`,
      header: ['setting', 'trials ok', 'p50 (ms)', 'p99 (ms)', 'max (ms)', 'p50 / lease p50', 'p99 / lease p99'],
      rows: settings.map((s) => [
        s.label,
        `${s.times.length}${s.errors.length ? ` (+${s.errors.length} failed)` : ''}`,
        fmt(pct(s.times, 50)),
        fmt(pct(s.times, 99)),
        fmt(s.times.length ? Math.max(...s.times) : NaN),
        ratio(pct(s.times, 50), leaseP50),
        ratio(pct(s.times, 99), leaseP99),
      ]),
      notes: [
        'cronflock: 3 replicas, a 60 s job every second; the newest run claimed once is the one whose claimant is killed; time = its second claim (Redis clock) − the kill.',
        'lease: 3 candidates, SET NX PX lease 15 s, renew every 2 s (deadline 10 s), acquire retry 2 s × (1 + U(0, 1.2)); the leader is killed 0.5–2.5 s after it started; time = the new leader starting the run − the kill. Expiry counts from the last renewal on the Redis clock (client-go counts from when followers observed it: slightly longer).',
        `All trials (ms): ${settings.map((s) => `${s.label}: ${[...s.times].sort((a, b) => a - b).join(', ')}`).join(' · ')}`,
        ...settings.flatMap((s) => (s.errors.length ? [`${s.label} errors: ${[...new Set(s.errors)].join('; ')}`] : [])),
        `Wall time ${((Date.now() - t0) / 1000).toFixed(0)} s.`,
      ],
    }, {
      key: `failover ${[...(systems.includes('cronflock') ? locks : []), ...(lease ? ['lease'] : [])].join(',')}`,
      // lock<setting>.p99Ms per cronflock lock setting (e.g. lock500ms.p99Ms), lease.p99Ms.
      figures: Object.fromEntries(settings.map((s) => [`${s.figure}.p99Ms`, pct(s.times, 99)])),
    });
  } finally {
    probe.disconnect();
    await redis.cleanup();
    rmSync(dir, { recursive: true, force: true });
  }
}
