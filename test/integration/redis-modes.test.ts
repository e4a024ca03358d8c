/**
 * Replicas on every kind of Redis the README names, each a real server started here: AUTH (requirepass and an
 * ACL user), TLS with a CA and client certificates made by openssl, a 3-master Redis Cluster, and Sentinel
 * with separate master and sentinel passwords. In each, two replica processes run a `* * * * * *` http
 * schedule end to end: every occurrence of a few seconds is delivered exactly once, `cronflock runs` with the
 * same URL reads the records, and no password appears in any log line or output. Sentinel also fails over
 * under running replicas.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Cluster } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { Keyspace } from '../../runner/redis/keys.js';
import { sleep, until } from '../support/flock.js';
import { Receiver } from '../support/receiver.js';
import {
  opensslAvailable,
  startAuthRedis,
  startCluster,
  startSentinel,
  startTlsRedis,
  type RedisTopology,
} from '../support/redis-modes.js';
import { BIN, ROOT, ReplicaProcess } from '../support/replica.js';

const cli = (args: string[]) => {
  const env = { ...process.env };
  delete env.REDIS_URL;
  return spawnSync(process.execPath, [BIN, ...args], { cwd: ROOT, env, encoding: 'utf8', timeout: 30_000 });
};

/** What each test started; closed in afterEach whatever happened. */
let running: { topology?: RedisTopology; receiver?: Receiver; replicas: ReplicaProcess[]; dir?: string } = { replicas: [] };

afterEach(async () => {
  const r = running;
  running = { replicas: [] };
  for (const p of r.replicas) p.signal('SIGKILL');
  await Promise.all(r.replicas.map((p) => p.exited));
  await r.receiver?.close();
  await r.topology?.close();
  if (r.dir) rmSync(r.dir, { recursive: true, force: true });
});

/**
 * Runs a per-second http schedule on two replicas against `t` and checks exactly-once delivery over 4 s,
 * the run records through `cronflock runs`, and that no secret was printed.
 */
async function runScheduleEndToEnd(t: RedisTopology): Promise<void> {
  running.topology = t;
  const receiver = (running.receiver = await Receiver.start());
  const dir = (running.dir = mkdtempSync(join(tmpdir(), 'cronflock-modes-')));
  const file = join(dir, 'tick.yaml');
  writeFileSync(file, `schedules:\n  - name: tick\n    cron: "* * * * * *"\n    job: {kind: http, url: ${receiver.url}/hook, timeout: 5s}\n`);
  for (const name of ['m1', 'm2']) {
    running.replicas.push(await ReplicaProcess.start({ name, schedules: file, redisUrl: t.url, args: t.cliArgs }));
  }
  // Every due second in [t0, t0 + 4 s] must be delivered exactly once.
  const t0 = Math.ceil(Date.now() / 1000) * 1000 + 1000;
  const keys = Array.from({ length: 5 }, (_, i) => `tick@${new Date(t0 + i * 1000).toISOString()}`);
  await until(() => keys.every((k) => receiver.countByOccurrence().has(k)), 15_000, `deliveries of ${keys.join(', ')}`);
  await sleep(1500); // a duplicate, if any, would arrive in this time
  await Promise.all(running.replicas.map((r) => r.stop()));

  const counts = receiver.countByOccurrence();
  expect(keys.map((k) => [k, counts.get(k)])).toEqual(keys.map((k) => [k, 1]));
  expect([...counts].filter(([, n]) => n > 1)).toEqual([]);
  for (const r of running.replicas) {
    expect((await r.exited).code, r.stderr.join('')).toBe(0);
    // Nothing went wrong on the way: no error lines, nothing on stderr (BullMQ complains there).
    expect(r.lines.filter((l) => Number(l.level) >= 50)).toEqual([]);
    expect(r.stderr.join('')).toBe('');
  }

  const out = cli(['runs', '--schedule', 'tick', '--json', '--redis', t.url, ...t.cliArgs]);
  expect(out.status, out.stderr).toBe(0);
  const runs = JSON.parse(out.stdout) as { key: string; state: string; attempt: number; replica: string }[];
  const succeeded = runs.filter((r) => r.state === 'succeeded');
  expect(new Set(succeeded.map((r) => r.key))).toEqual(new Set(counts.keys()));
  expect(succeeded.every((r) => r.attempt === 1 && (r.replica === 'm1' || r.replica === 'm2'))).toBe(true);

  // Passwords stay out of every log line, error and output.
  const printed = [
    ...running.replicas.flatMap((r) => [...r.lines.map((l) => JSON.stringify(l)), ...r.stderr]),
    out.stdout,
    out.stderr,
  ].join('\n');
  expect(printed).toContain('"msg":"replica running"');
  for (const s of t.secrets) expect(printed).not.toContain(s);
  const starting = running.replicas[0]!.lines.find((l) => typeof l.redis === 'string');
  expect(starting?.redis).toMatch(/\*\*\*/);
}

describe('replicas on Redis with AUTH, TLS, Cluster and Sentinel', () => {
  it('AUTH: an ACL user with a password; a wrong password is refused with the URL redacted', async () => {
    const t = await startAuthRedis();
    await runScheduleEndToEnd(t);
    const wrong = t.url.replace(/:[^:@/]+@/, ':not-the-password@');
    const r = cli(['runs', '--redis', wrong]);
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/cannot read runs from redis:\/\/cronflock:\*\*\*@127\.0\.0\.1:\d+\/0: .*WRONGPASS/);
    expect(r.stderr).not.toContain('not-the-password');
  });

  it.skipIf(!opensslAvailable())('TLS: rediss:// with a CA file and a client certificate; without the CA it is refused', async () => {
    const t = await startTlsRedis();
    await runScheduleEndToEnd(t);
    const noCa = cli(['runs', '--redis', t.url, '--redis-tls-cert', t.certs.clientCert, '--redis-tls-key', t.certs.clientKey]);
    expect(noCa.status).toBe(2);
    expect(noCa.stderr).toMatch(/cannot read runs from rediss:\/\/:\*\*\*@127\.0\.0\.1:\d+: .*certificate/i);
    const plain = cli(['runs', '--redis', t.url.replace('rediss:', 'redis:'), '--redis-tls-ca', t.certs.ca]);
    expect(plain.status).toBe(2);
    expect(plain.stderr).toMatch(/not a TLS URL: use rediss:\/\//);
  });

  it('Cluster: 3 masters; every key, script and TIME sample goes to the node owning {cronflock}', async () => {
    const t = await startCluster();
    await runScheduleEndToEnd(t);
    // Which node owns the flock's slot?
    const ks = new Keyspace();
    const c0 = t.client(0);
    const slot = (await c0.call('CLUSTER', 'KEYSLOT', ks.ns)) as number;
    const ranges = (await c0.call('CLUSTER', 'SLOTS')) as [number, number, [string, number, string]][];
    const owner = ranges.find(([a, b]) => slot >= a && slot <= b)![2][1];
    expect(t.dataNodes.map((n) => n.port)).toContain(owner);
    for (let i = 0; i < t.dataNodes.length; i++) {
      const c = i === 0 ? c0 : t.client(i);
      const stats = (await c.info('commandstats')) as string;
      const dbsize = await c.dbsize();
      if (t.dataNodes[i]!.port === owner) {
        expect(dbsize).toBeGreaterThan(0);
        expect(stats).toMatch(/cmdstat_eval:calls=\d+/); // each script's first call there (EVALSHA answered NOSCRIPT)
        expect(stats).toMatch(/cmdstat_evalsha:calls=\d+/); // our scripts and BullMQ's
      } else {
        expect(dbsize).toBe(0);
        expect(stats).not.toMatch(/cmdstat_(eval|evalsha|time|hgetall|zadd):/);
      }
    }
    // A wrong password is refused at once, with the node's reason.
    const wrong = cli(['runs', '--redis', t.url.replace(/:[^:@/]+@/, ':not-the-password@')]);
    expect(wrong.status).toBe(2);
    expect(wrong.stderr).toMatch(/cannot read runs from redis\+cluster:\/\/:\*\*\*@127.*WRONGPASS/);
    // And a Cluster client of our own sees the same set.
    const cl = new Cluster([{ host: '127.0.0.1', port: owner }], { redisOptions: { password: t.secrets[0]! } });
    try {
      expect(await cl.smembers(ks.schedules)).toEqual(['tick']);
    } finally {
      cl.disconnect();
    }
  });

  it.skipIf(!opensslAvailable())('Cluster over TLS: rediss+cluster:// with client certificates, TLS on the cluster bus too', async () => {
    await runScheduleEndToEnd(await startCluster({ tls: true }));
  });

  it('Sentinel: master and sentinel passwords are different things, both given in the URL', async () => {
    const t = await startSentinel();
    await runScheduleEndToEnd(t);
    // The master's password alone does not get past the sentinel: `runs` says so at once.
    const r = cli(['runs', '--redis', t.url.replace(/\?.*$/, '')]);
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/cannot read runs from redis\+sentinel:\/\/:\*\*\*@127\.0\.0\.1:\d+\/flockmaster: .*NOAUTH/);
    for (const s of t.secrets) expect(r.stderr).not.toContain(s);
  });

  it.skipIf(!opensslAvailable())('Sentinel over TLS: rediss+sentinel:// (sentinel and master both TLS-only)', async () => {
    await runScheduleEndToEnd(await startSentinel({ tls: true }));
  });

  it('Sentinel failover: replicas follow the promoted replica and go on running every occurrence once', async () => {
    const t = await startSentinel({ withReplica: true });
    running.topology = t;
    const receiver = (running.receiver = await Receiver.start());
    const dir = (running.dir = mkdtempSync(join(tmpdir(), 'cronflock-modes-')));
    const file = join(dir, 'tick.yaml');
    writeFileSync(file, `schedules:\n  - name: tick\n    cron: "* * * * * *"\n    job: {kind: http, url: ${receiver.url}/hook, timeout: 5s}\n`);
    for (const name of ['f1', 'f2']) {
      running.replicas.push(await ReplicaProcess.start({ name, schedules: file, redisUrl: t.url }));
    }
    await until(() => receiver.deliveries.length >= 2, 10_000, 'runs before the failover');
    const sentinel = t.sentinelClient();
    try {
      expect(await sentinel.call('SENTINEL', 'FAILOVER', t.masterName)).toBe('OK');
      const promoted = String(t.dataNodes[1]!.port);
      await until(
        async () => ((await sentinel.call('SENTINEL', 'get-master-addr-by-name', t.masterName)) as string[])[1] === promoted,
        15_000,
        'the sentinel to announce the promoted replica',
      );
    } finally {
      sentinel.disconnect();
    }
    // Writes the old master took in the switch-over are lost (README: a duplicate or an unrecorded occurrence
    // is possible then); from 3 s after it, every occurrence runs exactly once on the new master.
    const t0 = Math.ceil(Date.now() / 1000) * 1000 + 3000;
    const keys = Array.from({ length: 4 }, (_, i) => `tick@${new Date(t0 + i * 1000).toISOString()}`);
    await until(() => keys.every((k) => receiver.countByOccurrence().has(k)), 20_000, `deliveries of ${keys.join(', ')}`);
    await sleep(1500);
    await Promise.all(running.replicas.map((r) => r.stop()));
    const counts = receiver.countByOccurrence();
    expect(keys.map((k) => [k, counts.get(k)])).toEqual(keys.map((k) => [k, 1]));
    for (const r of running.replicas) {
      expect((await r.exited).code, r.stderr.join('')).toBe(0);
      expect(r.lines.filter((l) => Number(l.level) >= 50)).toEqual([]);
    }
    const out = cli(['runs', '--schedule', 'tick', '--json', '--redis', t.url]);
    expect(out.status, out.stderr).toBe(0);
    const byKey = new Map((JSON.parse(out.stdout) as { key: string; state: string }[]).map((x) => [x.key, x.state]));
    expect(keys.map((k) => byKey.get(k))).toEqual(keys.map(() => 'succeeded'));
    // The records come from the promoted node: the old master is its replica now.
    expect(await t.client(1).call('ROLE').then((r) => (r as string[])[0])).toBe('master');
  });
});
