/**
 * api: the dashboard's HTTP API with many registered schedules. N schedules published (the real loader and publish
 * script), their latest results and last successes recorded for every one, then `cronflock ui` as its own process
 * and `GET /api/v1/schedules?limit=100` asked R times in a row (default sort, then `sort=attention`, then a filter),
 * latency p50 / p95 / max, after one warm-up request (which loads the schedule index).
 *
 *   --schedules 10000 --requests 300
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { HistoryKeys } from '../../runner/history/keys.js';
import { Keyspace } from '../../runner/redis/keys.js';
import { publishMany } from '../lib/many-schedules.js';
import { trackPid, untrackPid } from '../lib/procs.js';
import { BenchRedis } from '../lib/redis.js';
import { reportFigures } from '../lib/report.js';
import { BIN, Flags, fmt, pct, until } from '../lib/util.js';

export async function api(flags: Flags): Promise<void> {
  const n = flags.num('schedules', 10_000);
  const requests = flags.num('requests', 300);
  const redis = await BenchRedis.start({ appendOnly: false });
  const client = new Redis(redis.url);
  const dir = mkdtempSync(join(tmpdir(), 'cronflock-api-'));
  try {
    const t0 = performance.now();
    await publishMany(client, dir, 'cronflock', n);
    // A latest result and a last success for every schedule, as the scripts record them (some failed).
    const keys = new Keyspace('cronflock');
    const hk = new HistoryKeys(keys);
    const now = Date.now();
    for (let i = 0; i < n; i += 1000) {
      const pipe = client.pipeline();
      for (let j = i; j < Math.min(n, i + 1000); j++) {
        const name = `s-${String(j).padStart(5, '0')}`;
        const due = now - 300_000;
        pipe.hset(hk.last, name, `${due}|${JSON.stringify([new Date(due).toISOString(), j % 10 === 0 ? 'f' : 's', '', 100, 400, [[1, 'r1', 102, 'first']], '', '', '', 0, ''])}`);
        if (j % 10 !== 0) pipe.hset(keys.lastSuccess, name, String(due + 400));
        pipe.hset(hk.counts(name), `s${Math.floor(now / 3_600_000) % 26}`, `${Math.floor(now / 3_600_000)}:12`);
      }
      await pipe.exec();
    }
    const setupS = (performance.now() - t0) / 1000;
    const child = spawn(process.execPath, [BIN, 'ui', '--redis', redis.url, '--listen', '127.0.0.1:0'], { stdio: ['ignore', 'pipe', 'inherit'] });
    trackPid(child.pid!);
    let out = '';
    child.stdout!.on('data', (b: Buffer) => (out += b.toString()));
    await until(() => /"url":"http[^"]+"/.test(out), 30_000, 'cronflock ui');
    const base = /"url":"(http[^"]+)"/.exec(out)![1]!;
    const time = async (path: string): Promise<number> => {
      const s = performance.now();
      const r = await fetch(new URL(path, base));
      const body = (await r.json()) as { items: unknown[] };
      if (r.status !== 200 || body.items.length === 0) throw new Error(`${path}: ${r.status}`);
      return performance.now() - s;
    };
    const warm = await time('/api/v1/schedules?limit=100');
    const rows: [string, string][] = [
      ['schedules registered', String(n)],
      ['setup (publish + results), s', fmt(setupS, 1)],
      ['first request (loads the index), ms', fmt(warm)],
    ];
    for (const [label, path] of [
      ['GET /api/v1/schedules?limit=100', '/api/v1/schedules?limit=100'],
      ['… &sort=attention', '/api/v1/schedules?limit=100&sort=attention'],
      ['… &state=failed', '/api/v1/schedules?limit=100&state=failed'],
    ] as const) {
      const xs: number[] = [];
      for (let i = 0; i < requests; i++) xs.push(await time(path));
      rows.push([`${label}: p50 / p95 / max (ms), ${requests} requests`, `${fmt(pct(xs, 50), 1)} / ${fmt(pct(xs, 95), 1)} / ${fmt(Math.max(...xs), 1)}`]);
    }
    child.kill('SIGTERM');
    untrackPid(child.pid!);
    await reportFigures(`api: ${n} schedules, GET /api/v1/schedules?limit=100 from cronflock ui (one process), one request at a time`, rows, undefined, { key: `api ${n}` });
  } finally {
    client.disconnect();
    await redis.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
