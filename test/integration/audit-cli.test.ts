/**
 * `cronflock audit --schedule X` (the real CLI from dist/: `npm run build` first) on a real redis-server whose audit
 * log has X's entries behind 2,500 newer entries of other schedules (more than one page of 1,000): it follows the log page by page until it has
 * `--limit` entries of X (it printed an empty table when X's entries were older than the newest `--limit` entries),
 * and, bounded by `--scan`, says on stderr when it stopped before the log's end.
 */
import { spawnSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recordAudit } from '../../runner/history/audit.js';
import { Keyspace } from '../../runner/redis/keys.js';
import { RedisServerProcess } from '../../runner/redis/server-process.js';
import { Redis } from 'ioredis';
import { BIN, ROOT } from '../support/replica.js';

let srv: RedisServerProcess;
let redis: Redis;

function audit(...args: string[]): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [BIN, 'audit', ...args, '--redis', srv.url], { cwd: ROOT, encoding: 'utf8', timeout: 60_000, env: { ...process.env, CRONFLOCK_LOG_LEVEL: 'warn' } });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

beforeAll(async () => {
  srv = await RedisServerProcess.start();
  redis = new Redis(srv.url);
  const keys = new Keyspace();
  for (let i = 0; i < 3; i++) await recordAudit(redis, keys, { who: 'alice', via: 'cli', action: 'suspend', schedule: 'old-one', reason: `r${i}`, outcome: 'suspended' });
  for (let i = 0; i < 2_500; i++) await recordAudit(redis, keys, { who: 'bob', via: 'cli', action: 'trigger', schedule: `busy-${i % 7}`, outcome: 'triggered' });
}, 60_000);
afterAll(async () => {
  redis?.disconnect();
  await srv?.cleanup();
});

describe('cronflock audit --schedule', () => {
  it('finds a schedule\'s entries older than the newest --limit entries (follows the log), newest first', () => {
    const r = audit('--schedule', 'old-one', '--limit', '50', '--json');
    expect(r.status, r.stderr).toBe(0);
    const items = JSON.parse(r.stdout) as { schedule: string; reason: string }[];
    expect(items.map((e) => e.reason)).toEqual(['r2', 'r1', 'r0']);
    expect(r.stderr).toBe('');
    const t = audit('--schedule', 'old-one', '--limit', '2');
    expect(t.status, t.stderr).toBe(0);
    expect(t.stdout.split('\n').filter((l) => l.includes('old-one'))).toHaveLength(2);
  });

  it('stops at --scan entries and says so', () => {
    const r = audit('--schedule', 'old-one', '--limit', '50', '--scan', '100');
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).not.toContain('old-one');
    expect(r.stderr).toMatch(/scanned the newest 100 entries/);
    expect(r.stderr).toContain('--scan');
  });
});
