/**
 * Messages of the CLI (the built package) against a real redis-server: what a mistyped name gets.
 */
import { spawnSync } from 'node:child_process';
import { createServer, type AddressInfo } from 'node:net';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Keyspace } from '../../runner/redis/keys.js';
import { RedisServerProcess } from '../../runner/redis/server-process.js';
import { BIN, ROOT } from '../support/replica.js';

let srv: RedisServerProcess;
let redis: Redis;
const keys = new Keyspace('msgs');
const cli = (...args: string[]) =>
  spawnSync(process.execPath, [BIN, ...args, '--redis', srv.url, '--namespace', 'msgs'], { cwd: ROOT, encoding: 'utf8', timeout: 60_000 });

beforeAll(async () => {
  srv = await RedisServerProcess.start();
  redis = new Redis(srv.url, { maxRetriesPerRequest: 3 });
  // Published definitions are what `trigger` and `runs` know the schedules by (the value is not read here).
  await redis.hset(keys.definitions, 'slow', '{}', 'nightly', '{}');
});
afterAll(async () => {
  redis?.disconnect();
  await srv?.stop();
});

describe('runs --schedule with a name no replica runs', () => {
  it('says so with the name probably meant and the known ones (exit 2), as trigger does', () => {
    const r = cli('runs', '--schedule', 'slo');
    expect(r.status, r.stdout).toBe(2);
    expect(r.stderr).toBe(
      'cronflock: --schedule: no run records of "slo" and no replica runs a schedule of that name in namespace "msgs"; did you mean "slow"? known schedules: nightly, slow\n',
    );
  });

  it('a known schedule without records is not an error', () => {
    const r = cli('runs', '--schedule', 'slow');
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toBe('no run records of slow in namespace "msgs"\n');
  });
});

describe('ui with a bad --listen or --api-token-file', () => {
  it('says the port is in use and how to pick another (not listen EADDRINUSE)', async () => {
    const busy = createServer();
    await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', resolve));
    const port = (busy.address() as AddressInfo).port;
    try {
      const r = cli('ui', '--listen', `127.0.0.1:${port}`);
      expect(r.status).toBe(2);
      expect(r.stderr).toBe(
        `cronflock: --listen 127.0.0.1:${port}: port ${port} is already in use (another process listens on it); pick another with --listen 127.0.0.1:<port> (port 0: any free port)\n`,
      );
    } finally {
      busy.close();
    }
  });

  it("says a port is out of range, with the dashboard's address as the example", () => {
    const r = cli('ui', '--listen', '127.0.0.1:99999');
    expect(r.status).toBe(2);
    expect(r.stderr).toBe('cronflock: --listen "127.0.0.1:99999": port 99999 is out of range; a port is 0–65535 (0: any free port), e.g. 127.0.0.1:8080\n');
    expect(cli('ui', '--listen', 'nonsense').stderr).toBe('cronflock: --listen "nonsense" must be host:port, e.g. 127.0.0.1:8080\n');
  });

  it('names the token file that does not exist and the flag', () => {
    const r = cli('ui', '--api-token-file', 'nonexist');
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/^cronflock: --api-token-file nonexist: no such file; give the path of an existing token file/);
    expect(r.stderr).not.toContain('ENOENT');
  });
});

describe('next -n', () => {
  it('refuses more than the cap with a usage error (exit 2) saying the cap and how to see further', () => {
    const r = spawnSync(process.execPath, [BIN, 'next', 'examples/schedules.yaml', '-n', '99999999'], { cwd: ROOT, encoding: 'utf8', timeout: 60_000 });
    expect(r.status).toBe(2);
    expect(r.stderr).toContain("option '-n, --count <n>' argument '99999999' is invalid. must be at most 10,000, got 99999999; to see further, run next again with --from");
    expect(r.stderr).not.toContain('calendar and blackouts');
  });

  it('prints the cap over several schedules as one table (Math.max(...rows) overflowed the stack)', () => {
    const r = spawnSync(process.execPath, [BIN, 'next', 'examples/schedules.yaml', '-n', '10000', '--from', '2026-01-01T00:00:00Z'], { cwd: ROOT, encoding: 'utf8', timeout: 120_000, maxBuffer: 1 << 30 });
    expect(r.status, r.stderr.slice(0, 500)).toBe(0);
    expect(r.stdout.split('\n').length).toBeGreaterThan(20_000);
  });
});

describe('trigger --wait', () => {
  it('refuses a wait above 60s instead of shortening it silently', () => {
    const r = spawnSync(process.execPath, [BIN, 'trigger', 'slow', '--wait', '10m'], { cwd: ROOT, encoding: 'utf8', timeout: 60_000 });
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('must be at most 60s (got 10m)');
  });
});
