/**
 * The module job kind with real child processes (no mocks): loading a schedule file never runs a module's code in
 * the loading process, a module that does not load in time, ends its process or runs out of memory is refused with
 * file:line:col and a reason in bounded time, and an attempt runs in its own memory-bounded process.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { parseScheduleText } from '../runner/config/load.js';
import { moduleJob, type CompiledModuleJob } from './module.js';
import type { JobContext } from './types.js';

const FIXTURES = fileURLToPath(new URL('../test/fixtures/modules/', import.meta.url));
const SCHEDULES = join(FIXTURES, 'schedules.yaml'); // not written: names the folder relative paths resolve in

const one = (job: string): string => `schedules:\n  - name: a\n    cron: "@daily"\n    job: ${job}\n`;

async function refusal(job: string): Promise<{ text: string; ms: number }> {
  const t0 = performance.now();
  const r = await parseScheduleText(one(job), SCHEDULES);
  const ms = performance.now() - t0;
  expect(r.schedules).toEqual([]);
  expect(r.errors).toHaveLength(1);
  return { text: r.errors[0]!.format(), ms };
}

describe('module job: loading is checked in a sandbox process', () => {
  it('refuses a module whose top level never settles, at the path, within the load time limit', async () => {
    const { text, ms } = await refusal('{ kind: module, path: ./never-settles.mjs, loadTimeout: 1s }');
    expect(text).toBe(
      `${SCHEDULES}:4:32: schedules[0].job.path: module ./never-settles.mjs: did not finish loading within 1s (loadTimeout): ` +
        'its top-level code still runs, or waits for something that never settles',
    );
    expect(ms).toBeLessThan(15_000);
  });

  it('refuses a module whose top level loops forever, and this process goes on (it never ran the loop)', async () => {
    let beats = 0;
    const heart = setInterval(() => beats++, 100);
    const { text, ms } = await refusal('{ kind: module, path: ./loops.mjs, loadTimeout: 2s }');
    clearInterval(heart);
    expect(text).toContain('schedules[0].job.path: module ./loops.mjs: did not finish loading within 2s (loadTimeout)');
    expect(ms).toBeLessThan(15_000);
    expect(beats).toBeGreaterThanOrEqual(Math.floor(ms / 100) / 2); // our event loop kept turning
  });

  it('refuses a module that calls process.exit() at its top level, and this process lives on', async () => {
    const { text } = await refusal('{ kind: module, path: ./exits.mjs }');
    expect(text).toBe(
      `${SCHEDULES}:4:32: schedules[0].job.path: module ./exits.mjs: its process exited with code 5 while loading (process.exit() in its top-level code?)`,
    );
  });

  it('refuses a module whose top level throws, naming the place in the module', async () => {
    const { text } = await refusal('{ kind: module, path: ./throws.mjs }');
    expect(text).toBe(`${SCHEDULES}:4:32: schedules[0].job.path: module ./throws.mjs: failed to load: not ready: false (at ${FIXTURES}throws.mjs:3:7)`);
  });

  it('refuses a module that allocates 3 GiB of Buffers while loading: the memory limit holds outside the V8 heap', async () => {
    const rssBefore = process.memoryUsage().rss;
    const { text } = await refusal('{ kind: module, path: ./hoards-at-load.mjs, memoryLimitMb: 512 }');
    expect(text).toMatch(/schedules\[0\]\.job\.path: module \.\/hoards-at-load\.mjs: (failed to load: (Array buffer allocation failed|Failed to allocate memory) .*\(memoryLimitMb: 512 reached\)|its process ran out of memory)/);
    expect(process.memoryUsage().rss - rssBefore).toBeLessThan(256 * 1024 * 1024);
  });

  it('never runs the module in the loading process, and checks a file used by many schedules once per load', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cronflock-mark-'));
    const markFile = join(dir, 'marks');
    process.env.CRONFLOCK_TEST_MARK_FILE = markFile;
    try {
      const schedules = Array.from({ length: 20 }, (_, i) => `  - { name: s${i}, cron: "@daily", job: { kind: module, path: ./marks.mjs } }\n`).join('');
      const r = await parseScheduleText(`schedules:\n${schedules}`, SCHEDULES);
      expect(r.errors).toEqual([]);
      expect(r.schedules).toHaveLength(20);
      const pids = readFileSync(markFile, 'utf8').trim().split('\n');
      expect(pids).toHaveLength(1);
      expect(Number(pids[0])).not.toBe(process.pid);
      expect((globalThis as { __cronflockMarked?: boolean }).__cronflockMarked).toBeUndefined();
    } finally {
      delete process.env.CRONFLOCK_TEST_MARK_FILE;
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses limits out of range with the field', async () => {
    const r = await parseScheduleText(one('{ kind: module, path: ./echo.mjs, memoryLimitMb: 64, loadTimeout: 1h }'), SCHEDULES);
    expect(r.errors.map((e) => `${e.field}: ${e.reason}`)).toEqual([
      'schedules[0].job.memoryLimitMb: must be at least 256 (what Node reserves at start-up comes on top)',
      'schedules[0].job.loadTimeout: must be at most 5m',
    ]);
  });
});

describe('module job: attempts run in their own process', () => {
  const logs: { level: string; obj: unknown; msg?: string }[] = [];
  const ctx = (signal = new AbortController().signal): JobContext => ({
    occurrence: { schedule: 'a', key: 'a@2026-01-01T00:00:00.000Z', dueMs: 0, fireMs: 0, startMs: 0, attempt: 1, fencingToken: 1, manual: false },
    signal,
    replica: 'test-replica',
    log: {
      info: (obj, msg) => void logs.push({ level: 'info', obj, msg }),
      warn: (obj, msg) => void logs.push({ level: 'warn', obj, msg }),
      error: (obj, msg) => void logs.push({ level: 'error', obj, msg }),
      debug: (obj, msg) => void logs.push({ level: 'debug', obj, msg }),
    },
  });
  const compile = async (job: string): Promise<CompiledModuleJob> => {
    const r = await parseScheduleText(one(job), SCHEDULES);
    expect(r.errors).toEqual([]);
    return r.schedules[0]!.job as unknown as CompiledModuleJob;
  };
  afterAll(() => void logs.splice(0));

  it('returns what run() returns and passes its logs on', async () => {
    const job = await compile('{ kind: module, path: ./echo.mjs, params: { n: 3 } }');
    await expect(moduleJob.run(ctx(), job)).resolves.toEqual({ params: { n: 3 }, schedule: 'a', replica: 'test-replica' });
    expect(logs).toContainEqual({ level: 'info', obj: { got: { n: 3 } }, msg: 'echo running' });
  });

  it('runs in another process than this one', async () => {
    const job = await compile('{ kind: module, path: ./marks.mjs }');
    const r = (await moduleJob.run(ctx(), job)) as { pid: number };
    expect(r.pid).not.toBe(process.pid);
  });

  it('passes the run\'s signal on to the job', async () => {
    const job = await compile('{ kind: module, path: ./echo.mjs, params: { waitForAbort: true } }');
    const ac = new AbortController();
    setTimeout(() => ac.abort(new Error('claim lost')), 1500);
    await expect(moduleJob.run(ctx(ac.signal), job)).resolves.toEqual({ aborted: 'claim lost' });
  });

  it('fails an attempt that holds more Buffers than its memory limit, and this process stays small', async () => {
    const rssBefore = process.memoryUsage().rss;
    const job = await compile('{ kind: module, path: ./hoards.mjs, memoryLimitMb: 512, params: { mb: 3000 } }');
    await expect(moduleJob.run(ctx(), job)).rejects.toThrow(/memoryLimitMb: 512/);
    expect(process.memoryUsage().rss - rssBefore).toBeLessThan(256 * 1024 * 1024);
  });

  it('fails an attempt whose heap outgrows the limit, saying so', async () => {
    const job = await compile('{ kind: module, path: ./heap-hog.mjs, memoryLimitMb: 256 }');
    await expect(moduleJob.run(ctx(), job)).rejects.toThrow(/ran out of memory \(memoryLimitMb: 256\)/);
  }, 60_000);

  it('runs isolation: none in this process, after the check', async () => {
    const job = await compile('{ kind: module, path: ./marks.mjs, isolation: none }');
    const r = (await moduleJob.run(ctx(), job)) as { pid: number };
    expect(r.pid).toBe(process.pid);
  });

  it('isolation: none: once the module has loaded, a run takes it without arming a load deadline', async () => {
    const job = await compile('{ kind: module, path: ./marks.mjs, isolation: none }');
    await moduleJob.run(ctx(), job); // loads it (bounded by loadTimeout)
    vi.useFakeTimers();
    try {
      const run = moduleJob.run(ctx(), job);
      // A deadline per run (timer, abort listener, promise) was ~2 % of a busy replica's CPU: none is armed now.
      expect(vi.getTimerCount()).toBe(0);
      expect(((await run) as { pid: number }).pid).toBe(process.pid);
    } finally {
      vi.useRealTimers();
    }
  });
});
