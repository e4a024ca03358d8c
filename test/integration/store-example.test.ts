/**
 * examples/schedules-from-code/app.mjs (issue 19: "examples/ has a small Node application that uses the library
 * to manage per-customer schedules"), run as a user runs it against a real redis-server: its customers' reports
 * run, a bad definition is refused naming the field, a change of plan applies from the next due time, and a
 * removed customer's reports stop.
 */
import { spawn } from 'node:child_process';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { RedisServerProcess } from '../../runner/redis/server-process.js';
import { ROOT } from '../support/replica.js';

let server: RedisServerProcess;
beforeAll(async () => {
  server = await RedisServerProcess.start();
});
afterAll(async () => {
  await server.cleanup();
});

interface Line {
  at: string;
  event: string;
  customer?: string;
  format?: string;
  due?: string;
  problems?: { field: string }[];
}

it('runs per-customer schedules from code: reports, a refused definition, a change and a removal', async () => {
  const child = spawn(process.execPath, ['examples/schedules-from-code/app.mjs'], {
    cwd: ROOT,
    env: { ...process.env, REDIS_URL: server.url, RUN_S: '14', CUSTOMERS: 'acme,globex,initech' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  expect(code).toBe(0);
  const lines = out.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Line);
  const reports = lines.filter((l) => l.event === 'report');
  expect(new Set(reports.map((r) => r.customer))).toEqual(new Set(['acme', 'globex', 'initech']));
  expect(lines.find((l) => l.event === 'refused')?.problems?.map((p) => p.field)).toContain('cron');
  const changedAt = Date.parse(lines.find((l) => l.event === 'changed')!.at);
  const removedAt = Date.parse(lines.find((l) => l.event === 'removed')!.at);
  const acme = reports.filter((r) => r.customer === 'acme');
  expect(acme.filter((r) => Date.parse(r.due!) >= changedAt + 1500).every((r) => r.format === 'csv')).toBe(true);
  expect(acme.some((r) => r.format === 'csv')).toBe(true);
  expect(reports.filter((r) => r.customer === 'initech' && Date.parse(r.due!) >= removedAt + 1500)).toEqual([]);
  expect(lines.at(-1)?.event).toBe('stopped');
}, 60_000);
