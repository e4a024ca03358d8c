/**
 * Messages of the CLI (the built package) against a real redis-server: what a mistyped name gets.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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

  it('in a flock of 2,000 schedules: at most 5 close matches and the count, not every name', async () => {
    const many = new Keyspace('many');
    const names = Array.from({ length: 2_000 }, (_, i) => `report-${String(i).padStart(4, '0')}`);
    await redis.hset(many.definitions, Object.fromEntries(names.map((n) => [n, '{}'])));
    const r = spawnSync(process.execPath, [BIN, 'runs', '--schedule', 'report-01234', '--redis', srv.url, '--namespace', 'many'], { cwd: ROOT, encoding: 'utf8', timeout: 60_000 });
    expect(r.status, r.stdout).toBe(2);
    expect(r.stderr.length, r.stderr.slice(0, 400)).toBeLessThan(400);
    expect(r.stderr).toContain('did you mean "report-0123"'); // the closest first
    expect((r.stderr.split("did you mean")[1]!.match(/"report-\d+"/g) ?? []).length).toBe(5);
    expect(r.stderr).toContain('2,000 known schedules');
  });

  it('a known schedule without records is not an error', () => {
    const r = cli('runs', '--schedule', 'slow');
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toBe('no run records of slow in namespace "msgs"\n');
  });
});

describe('trigger and the other control commands on a name no replica runs', () => {
  it('say the name is unknown with at most 5 close names and the count in a flock of 2,000, not every name (exit 2)', async () => {
    const ns = new Keyspace('many-control');
    const names = Array.from({ length: 2_000 }, (_, i) => `report-${String(i).padStart(4, '0')}`);
    await redis.hset(ns.definitions, Object.fromEntries(names.map((n) => [n, '{}'])));
    for (const args of [['trigger', 'report-01234'], ['suspend', 'report-01234'], ['resume', 'report-01234'], ['backfill', 'report-01234', '--from', '2026-01-01T00:00:00Z', '--to', '2026-01-01T01:00:00Z']]) {
      const r = spawnSync(process.execPath, [BIN, ...args, '--redis', srv.url, '--namespace', 'many-control'], { cwd: ROOT, encoding: 'utf8', timeout: 60_000 });
      expect(r.status, `${args[0]}: ${r.stdout}${r.stderr}`).toBe(2);
      expect(r.stderr.length, `${args[0]}: ${r.stderr.slice(0, 400)}`).toBeLessThan(400);
      expect(r.stderr, args[0]).toContain('no replica runs a schedule named "report-01234"; did you mean "report-0123"'); // the closest first
      expect((r.stderr.split('did you mean')[1]!.match(/"report-\d+"/g) ?? []).length, args[0]).toBe(5);
      expect(r.stderr, args[0]).toContain('2,000 known schedules');
    }
  });

  it('in a small flock: the close name and every known one', () => {
    const r = cli('trigger', 'slo');
    expect(r.status, r.stdout).toBe(2);
    expect(r.stderr).toContain('no replica runs a schedule named "slo"; did you mean "slow"? known schedules: nightly, slow');
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

describe('tenants set-limit none / default with a default (*) limit', () => {
  it("none exempts the tenant from the '*' limit (an explicit no limit); default puts it back under '*'", () => {
    expect(cli('tenants', 'set-limit', '*', '1').status).toBe(0);
    const none = cli('tenants', 'set-limit', 'exempt', 'none');
    expect(none.status, none.stderr).toBe(0);
    expect(none.stdout).toBe("tenant exempt: no limit (even if '*' has one)\n");
    let list = cli('tenants', 'list');
    expect(list.stdout).toMatch(/^exempt\s+0\s+none$/m);
    const back = cli('tenants', 'set-limit', 'exempt', 'default');
    expect(back.status, back.stderr).toBe(0);
    expect(back.stdout).toBe("tenant exempt: the default ('*') limit\n");
    list = cli('tenants', 'list');
    expect(list.stdout).not.toMatch(/^exempt/m); // no schedules and no limit of its own
    const bad = cli('tenants', 'set-limit', '*', 'default');
    expect(bad.status).toBe(2);
    expect(bad.stderr).toContain("'*' is the default limit itself");
    expect(cli('tenants', 'set-limit', '*', 'none').status).toBe(0);
  });
});

describe('messages a user breaking cronflock found', () => {
  it('--retention too short reads in plain words (not "a --replica that lagged behind")', () => {
    const r = cli('start', '--retention', '1h', 'examples');
    expect(r.status).toBe(2);
    expect(r.stderr).toBe(
      'cronflock: --retention (3600000 ms) must exceed --horizon + --lookahead (3603000 ms): run records must outlive every occurrence that may still be planned (up to --horizon back and --lookahead ahead), or a planner that fell behind would plan one again after its record expired\n',
    );
  });

  it('--lookahead is bounded, with the reason and the default, before anything is planned', () => {
    const r = cli('start', '--lookahead', '2h', 'examples');
    expect(r.status).toBe(2);
    expect(r.stderr).toBe(
      'cronflock: --lookahead must be at most 5 minutes (got 7200000 ms): every occurrence due within it is planned and kept in Redis at once; a few seconds is enough (default 3000 ms)\n',
    );
  });

  it('--listen with an address that is not one names the flag and the expected form (not getaddrinfo ENOTFOUND)', () => {
    const r = cli('ui', '--listen', '999.1.1.1:80');
    expect(r.status).toBe(2);
    expect(r.stderr).toBe('cronflock: --listen "999.1.1.1:80": 999.1.1.1 is not an IPv4 address (four numbers 0–255); give host:port with an address of this machine, e.g. 127.0.0.1:8080\n');
    const s = cli('start', '--ui', '--listen', '999.1.1.1:80', 'examples');
    expect(s.status).toBe(2);
    expect(s.stderr).toContain('--listen "999.1.1.1:80": 999.1.1.1 is not an IPv4 address');
  });

  it('--listen with a host name that does not resolve says so, with the expected form', () => {
    const r = cli('ui', '--listen', 'no-such-host.invalid:8080');
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/^cronflock: --listen no-such-host\.invalid:8080: the host no-such-host\.invalid does not resolve; --listen takes host:port .*e\.g\. --listen 127\.0\.0\.1:8080/);
    expect(r.stderr).not.toMatch(/getaddrinfo/);
  });

  it('a token file without tokens says what the file must contain, with an example', () => {
    const dir = mkdtempSync(join(tmpdir(), 'cronflock-tokens-'));
    const f = join(dir, 'tokens.yaml');
    writeFileSync(f, 'reads: token\n');
    const r = cli('ui', '--api-token-file', f);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain(`--api-token-file ${f}:1:1: tokens: missing: the file must list its tokens\n`);
    expect(r.stderr).toContain('    - {name: alice, role: operator, sha256:');
    expect(r.stderr).not.toMatch(/Invalid input|received undefined/);
  });
});

describe('cronflock apply -f: a schedule the loader takes but the store refuses', () => {
  it('is refused at file:line:col of the field, as the loader says its own errors: Infinity, NaN, a relative module path; nothing stored', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cronflock-apply-'));
    mkdirSync(join(dir, 'sub'));
    const f = join(dir, 'sub', 'big.yaml');
    const echo = join(ROOT, 'test/fixtures/modules/echo.mjs');
    writeFileSync(
      f,
      `schedules:\n  - name: fine\n    cron: "0 3 * * *"\n    job: {kind: module, path: ${echo}}\n` +
        `  - name: huge\n    cron: "0 3 * * *"\n    job:\n      kind: module\n      path: ${echo}\n      params:\n        limit: 1e400\n        "a.b": [1, -1e400]\n        n: .nan\n`,
    );
    // A relative module path is a store-only refusal: its own file (the loader refuses the values above first).
    const g = join(dir, 'sub', 'rel.yaml');
    writeFileSync(g, `schedules:\n  - name: fine\n    cron: "0 3 * * *"\n    job: {kind: module, path: ${echo}}\n  - name: rel\n    cron: "0 3 * * *"\n    job: {kind: module, path: ../echo.mjs}\n`);
    writeFileSync(join(dir, 'echo.mjs'), 'export default { async run() {} };\n'); // the loader finds it beside the folder
    const r = cli('apply', '-f', f);
    expect(r.status, r.stdout).toBe(2);
    expect(r.stderr).toContain(`${f}:11:16: schedules[1].job.params.limit: is Infinity, which JSON cannot store\n  hint: use a finite number, or null`);
    expect(r.stderr).toContain(`${f}:12:20: schedules[1].job.params.a.b[1]: is -Infinity, which JSON cannot store\n`);
    expect(r.stderr).toContain(`${f}:13:12: schedules[1].job.params.n: is NaN, which JSON cannot store\n`);
    expect(r.stderr).toContain('nothing was stored');
    const rel = cli('apply', '-f', g);
    expect(rel.status, rel.stdout).toBe(2);
    expect(rel.stderr).toMatch(new RegExp(`${g.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:7:31: schedules\\[1\\]\\.job\\.path: "\\.\\./echo\\.mjs" is a relative path`));
    expect(rel.stderr).toContain(`cronflock: ${g}: refused as stored schedules (see the errors above); nothing was stored\n`);
    // every refusal is located: no line without a column (file:line: alone)
    expect(`${r.stderr}${rel.stderr}`).not.toMatch(/\.yaml:\d+: /);
    expect(await redis.exists(keys.definitions)).toBe(1); // only what beforeAll wrote
    expect(await redis.keys('msgs:store*')).toEqual([]);
  });

  it('names a key YAML reads as a number as the file writes it (0x10, not 16), in file order', () => {
    const dir = mkdtempSync(join(tmpdir(), 'cronflock-apply-'));
    const f = join(dir, 'keys.yaml');
    writeFileSync(f, `schedules:\n  - name: hk\n    cron: "0 3 * * *"\n    job: {kind: module, path: ${join(ROOT, 'test/fixtures/modules/echo.mjs')}, params: {0x10: 1e400, 1.0: [.nan]}}\n`);
    const r = cli('apply', '-f', f);
    expect(r.status).toBe(2);
    const lines = r.stderr.split('\n').filter((l) => l.startsWith(f));
    expect(lines.map((l) => l.slice(f.length).replace(/^(:\d+:\d+: [^:]+):.*/, '$1'))).toEqual([
      `:4:${lines[0]!.split(':')[2]}: schedules[0].job.params.0x10`,
      `:4:${lines[1]!.split(':')[2]}: schedules[0].job.params.1.0[0]`,
    ]);
    expect(Number(lines[0]!.split(':')[2])).toBeLessThan(Number(lines[1]!.split(':')[2]));
  });
});
