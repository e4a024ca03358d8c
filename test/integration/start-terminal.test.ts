/**
 * `cronflock start` on a terminal (a pseudo-terminal from util-linux `script`): a schedule file's errors are
 * printed once, as `file:line:col` text, not again as a JSON log line. With the log piped they are logged too.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BIN, ROOT } from '../support/replica.js';

const hasScript = spawnSync('script', ['--version'], { encoding: 'utf8' }).status === 0;

describe('start with a refused schedule file', () => {
  const dir = mkdtempSync(join(tmpdir(), 'cronflock-tty-'));
  const file = join(dir, 'bad.yaml');
  writeFileSync(file, 'schedules:\n  - name: a\n    cron: "61 * * * *"\n    job: {kind: http, url: "http://127.0.0.1:1/"}\n');

  it.skipIf(!hasScript)('prints each error once on a terminal', () => {
    const cmd = `${JSON.stringify(process.execPath)} ${JSON.stringify(BIN)} start ${JSON.stringify(file)}`;
    const r = spawnSync('script', ['-qec', cmd, '/dev/null'], { cwd: ROOT, encoding: 'utf8', timeout: 60_000 });
    expect(r.status, r.stdout).toBe(2);
    expect(r.stdout).toMatch(/bad\.yaml:3:\d+: /);
    expect(r.stdout).not.toMatch(/"level":50/);
    expect(r.stdout).toMatch(/no valid schedules/);
  });

  it('logs them as JSON too when the log is not a terminal', () => {
    const r = spawnSync(process.execPath, [BIN, 'start', file], { cwd: ROOT, encoding: 'utf8', timeout: 60_000 });
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/bad\.yaml:3:\d+: /);
    expect(r.stdout).toMatch(/"level":50.*"file":".*bad\.yaml","line":3/);
  });
});

describe('start with no schedule path outside a pod', () => {
  it('says the cluster is not watched because of the mode in force, not as if it were on', () => {
    const env = { ...process.env };
    delete env.KUBERNETES_SERVICE_HOST;
    delete env.CRONFLOCK_WATCH_SCHEDULES;
    const r = spawnSync(process.execPath, [BIN, 'start'], { cwd: ROOT, env, encoding: 'utf8', timeout: 60_000 });
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('Schedules from the cluster are not watched (--watch-schedules is auto, which watches only in a Kubernetes pod)');
    expect(r.stderr).toContain('give a schedule file or directory, the --redis (or REDIS_URL) of a flock whose stored schedules to run, or use --watch-schedules on');
    const off = spawnSync(process.execPath, [BIN, 'start', '--watch-schedules', 'off'], { cwd: ROOT, env, encoding: 'utf8', timeout: 60_000 });
    expect(off.stderr).toContain('(--watch-schedules is off)');
  });
});
