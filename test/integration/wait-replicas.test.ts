/**
 * `--redis-wait-replicas` on a real primary and its replica (redis-server processes started here): a claim
 * counts only once the Redis replica has it, so a failover cannot lose it and let a second replica run the
 * occurrence again. With the Redis replica stopped (SIGSTOP) no run starts: each claim is given back, said in a
 * warning and counted in `cronflock_redis_wait_shortfall_total`; runs start again once it is resumed. Without
 * the flag no WAIT is sent at all.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { Keyspace } from '../../runner/redis/keys.js';
import { sleep, until } from '../support/flock.js';
import { sumMetric } from '../support/metrics.js';
import { Receiver } from '../support/receiver.js';
import { startPrimaryWithReplica, type RedisTopology } from '../support/redis-modes.js';
import { ReplicaProcess } from '../support/replica.js';

/** What each test started; closed in afterEach whatever happened (a stopped Redis replica is resumed first). */
let running: { topology?: RedisTopology; receiver?: Receiver; replicas: ReplicaProcess[]; dir?: string; stoppedPid?: number } = { replicas: [] };

afterEach(async () => {
  const r = running;
  running = { replicas: [] };
  if (r.stoppedPid !== undefined) process.kill(r.stoppedPid, 'SIGCONT');
  for (const p of r.replicas) p.signal('SIGKILL');
  await Promise.all(r.replicas.map((p) => p.exited));
  await r.receiver?.close();
  await r.topology?.close();
  if (r.dir) rmSync(r.dir, { recursive: true, force: true });
});

/** Calls of `command` on a server since it started (INFO commandstats). */
async function calls(redis: Redis, command: string): Promise<number> {
  const m = new RegExp(`^cmdstat_${command}:calls=(\\d+)`, 'm').exec(await redis.info('commandstats'));
  return m ? Number(m[1]) : 0;
}

/** A primary with one replica, a receiver, and a per-second http schedule `tick` on one cronflock replica. */
async function start(args: string[]): Promise<{ t: RedisTopology; receiver: Receiver; replica: ReplicaProcess }> {
  const t = (running.topology = await startPrimaryWithReplica());
  const receiver = (running.receiver = await Receiver.start());
  const dir = (running.dir = mkdtempSync(join(tmpdir(), 'cronflock-wait-')));
  const file = join(dir, 'tick.yaml');
  writeFileSync(file, `schedules:\n  - name: tick\n    cron: "* * * * * *"\n    job: {kind: http, url: ${receiver.url}/hook, timeout: 5s}\n`);
  const replica = await ReplicaProcess.start({ name: 'w1', schedules: file, redisUrl: t.url, args });
  running.replicas.push(replica);
  return { t, receiver, replica };
}

describe('--redis-wait-replicas', () => {
  it('runs proceed with the claim already on the Redis replica when the run starts', async () => {
    const { t, receiver } = await start(['--redis-wait-replicas', '1']);
    const onReplica = t.client(1);
    const keys = new Keyspace('cronflock');
    // When a run's request arrives, read its record from the Redis replica: the claim (state running, its
    // fencing token) must be there already.
    const seen: Promise<{ key: string; fencingToken: number; state: string | null; token: string | null }>[] = [];
    receiver.holdFor = (body) => {
      const key = body.occurrence;
      seen.push(onReplica.hmget(keys.occurrence(key), 'state', 'token').then(([state, token]) => ({ key, fencingToken: body.fencingToken, state: state ?? null, token: token ?? null })));
      return undefined;
    };
    await until(() => seen.length >= 3, 20_000, 'three runs');
    const records = await Promise.all(seen);
    for (const r of records) {
      expect(r.key).toMatch(/^tick@/);
      expect(r.state === 'running' || r.state === 'succeeded', JSON.stringify(r)).toBe(true);
      expect(Number(r.token), JSON.stringify(r)).toBe(r.fencingToken);
    }
    // Every claim and every final state waited: WAIT was sent (at least once per run).
    expect(await calls(t.client(0), 'wait')).toBeGreaterThanOrEqual(records.length);
  }, 60_000);

  it('without the flag sends no WAIT', async () => {
    const { t, receiver } = await start([]);
    await until(() => receiver.deliveries.length >= 3, 20_000, 'three runs');
    await sleep(500); // their final states
    expect(await calls(t.client(0), 'wait')).toBe(0);
  }, 60_000);

  it('with the Redis replica stopped, no run starts (held back, warned, counted); runs start once it is resumed', async () => {
    const { t, receiver, replica } = await start(['--redis-wait-replicas', '1', '--redis-wait-timeout', '300ms']);
    // Each run takes 1.5 s: the runs started before the stop end during it, their final states unacknowledged.
    receiver.holdFor = () => 1_500;
    await until(() => receiver.deliveries.length >= 2, 20_000, 'runs before the stop');
    const redisReplicaPid = t.dataNodes[1]!.child.pid!;
    process.kill(redisReplicaPid, 'SIGSTOP');
    running.stoppedPid = redisReplicaPid;
    const stoppedAt = Date.now();
    const warning = await replica.waitForLog((l) => /acknowledged the claim within 300 ms/.test(l.msg ?? ''), 15_000, 'shortfall warning');
    expect(warning.msg).toMatch(new RegExp(`^Redis ${t.url.replace(/[.]/g, '\\.')}: 0 of 1 replica\\(s\\) acknowledged the claim within 300 ms; the run is not started`));
    expect(warning).toMatchObject({ asked: 1, acked: 0, timeoutMs: 300 });
    await sleep(3_000);
    const metrics = await (await fetch(`${replica.adminUrl}/metrics`)).text();
    expect(sumMetric([metrics], 'cronflock_redis_wait_shortfall_total', { after: 'claim' })).toBeGreaterThan(0);
    // Runs that ended during the stop: recorded all the same (nothing to undo), with a warning and a count.
    expect(sumMetric([metrics], 'cronflock_redis_wait_shortfall_total', { after: 'final' })).toBeGreaterThan(0);
    expect(replica.lines.some((l) => /: 0 of 1 replica\(s\) acknowledged the final state within 300 ms; the record may be lost if Redis fails over now$/.test(l.msg ?? ''))).toBe(true);
    const resumedAt = Date.now();
    // A run claimed (and acknowledged) just before the stop may arrive a moment after it; none later.
    const during = receiver.deliveries.filter((d) => d.receivedMs > stoppedAt + 500 && d.receivedMs < resumedAt);
    expect(during.map((d) => d.body.occurrence)).toEqual([]);

    process.kill(redisReplicaPid, 'SIGCONT');
    running.stoppedPid = undefined;
    await until(() => receiver.deliveries.some((d) => d.receivedMs > resumedAt), 20_000, 'a run after the resume');
    // The occurrences held back ran once each after the resume (concurrencyPolicy Allow, no starting deadline).
    const heldBack = `tick@${new Date(Math.ceil((stoppedAt + 1000) / 1000) * 1000).toISOString()}`;
    await until(() => receiver.countByOccurrence().has(heldBack), 20_000, `the held-back occurrence ${heldBack}`);
    await sleep(1_000);
    expect([...receiver.countByOccurrence()].filter(([, n]) => n > 1)).toEqual([]);
  }, 90_000);
});
