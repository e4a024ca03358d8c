/**
 * The loader's worker-thread pre-check (runner/config/load-pool.ts, precheck.ts), from the built package (dist/:
 * `npm run build` first; from TypeScript sources the loader stays in-process). Proves: the same compiled result
 * with and without workers (the reference cases of test/cases/, every job kind that needs no cluster, groups,
 * a module job, calendars and a refused file); errors of a worker-loaded directory carry file:line:col and hints
 * exactly as in-process; a worker that crashes or never answers refuses its file with a clear CONFIG_IO error
 * instead of hanging, and the other files still load.
 */
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { loadSchedules, type LoadResult } from '../../dist/runner/config/load.js';
import { precheckFiles, workersAvailable } from '../../dist/runner/config/load-pool.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const cases = JSON.parse(readFileSync(join(ROOT, 'test/cases/schedule-times.json'), 'utf8')) as {
  cases: { id: string; cron: string; timeZone: string }[];
  rejected: { cron: string; timeZone?: string }[];
};
const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function dirWith(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'cronflock-load-worker-'));
  dirs.push(dir);
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return dir;
}

/** The result as comparable data: compiled crons by identity of expression and zone, errors as formatted. */
function comparable(r: LoadResult): unknown {
  return {
    schedules: r.schedules.map(({ due, ...s }) => ({ ...s, due: typeof due.next })),
    errors: r.errors.map((e) => ({ ...e.toJSON(), formatted: e.format() })),
    files: r.files,
    warnings: r.warnings.map((e) => e.format()),
  };
}

const http = (i: number): string => `    job: { kind: http, url: "https://example.com/h/${i % 7}", method: POST, timeout: 10s }\n`;

describe('loader processes (the pre-check of large loads)', () => {
  it('the built worker script is there', () => {
    expect(workersAvailable()).toBe(true);
  });

  it('gives the same compiled result as in-process, for the reference cases and every file shape', async () => {
    const caseFile = ['schedules:\n'];
    for (const [i, c] of cases.cases.entries()) {
      caseFile.push(`  - name: case-${i}\n    cron: ${JSON.stringify(c.cron)}\n    timeZone: ${c.timeZone}\n${http(i)}`);
    }
    const big = ['groups:\n  nightly: { maxConcurrent: 2, rateLimit: { max: 5, per: 1m } }\nschedules:\n'];
    for (let i = 0; i < 500; i++) {
      big.push(
        `  - name: big-${i}\n    cron: "${i % 60} ${i % 24} * * *"\n    timeZone: Europe/Paris\n    jitter: 30s\n    catchUp: all\n    maxCatchUpRuns: 3\n` +
          `    labels: { team: t${i % 3} }\n${i % 5 === 0 ? '    group: nightly\n' : ''}${http(i)}`,
      );
    }
    const dir = dirWith({
      'a-cases.yaml': caseFile.join(''),
      'b-big.yaml': big.join(''),
      'c-module.yaml': `schedules:\n  - name: mod\n    cron: "*/5 * * * *"\n    job: { kind: module, path: job-ok.ts }\n`,
      'd-calendar.yaml':
        'calendars:\n  - name: workdays\n    weekdays: [MON-FRI]\nschedules:\n  - name: cal\n    cron: "0 9 * * *"\n    calendar: { include: [workdays] }\n' +
        http(1),
      'f-uses-calendar.yaml': `schedules:\n  - name: uses-cal\n    cron: "0 10 * * *"\n    calendar: { include: [workdays] }\n${http(3)}`,
      'e-bad.yaml': `schedules:\n  - name: bad\n    cron: "61 * * * *"\n${http(2)}`,
    });
    cpSync(join(ROOT, 'test/fixtures/config/modules/job-ok.ts'), join(dir, 'job-ok.ts'));
    // The worker path is taken for clean files; calendars and refused files go in-process.
    const pre = await Promise.all(precheckFiles(['a-cases.yaml', 'b-big.yaml', 'c-module.yaml', 'd-calendar.yaml', 'e-bad.yaml', 'f-uses-calendar.yaml'].map((f) => join(dir, f)), { workers: 2 }));
    expect(pre.map((p) => ('clean' in p && p.clean ? p.schedules.length : 'clean' in p ? 'in-process' : p.failed))).toEqual([cases.cases.length, 500, 1, 'in-process', 'in-process', 'in-process']);
    const inProcess = await loadSchedules(dir, { workers: 0 });
    const withWorkers = await loadSchedules(dir, { workers: 2 });
    expect(inProcess.errors.map((e) => e.format())).toEqual([expect.stringMatching(/e-bad\.yaml:3:11: schedules\[0\]\.cron: /)]);
    expect(inProcess.schedules.length).toBe(cases.cases.length + 500 + 3);
    expect(comparable(withWorkers)).toEqual(comparable(inProcess));
    // Equal job blocks share one compiled job on the worker path (7 distinct urls among the 500 big-* schedules).
    expect(new Set(withWorkers.schedules.filter((s) => s.name.startsWith('big-')).map((s) => s.job)).size).toBe(7);
    // The compiled cron gives the same due times.
    const t = Date.UTC(2026, 0, 1);
    expect(withWorkers.schedules.map((s) => s.due.next(t))).toEqual(inProcess.schedules.map((s) => s.due.next(t)));
  }, 120_000);

  it('errors of a worker-loaded directory carry file:line:col and hints as in-process (rejected reference cases)', async () => {
    const files: Record<string, string> = { 'a-good.yaml': `schedules:\n  - name: good\n    cron: "* * * * *"\n${http(0)}` };
    for (const [i, c] of cases.rejected.entries()) {
      files[`r-${String(i).padStart(3, '0')}.yaml`] =
        `schedules:\n  - name: rej-${i}\n    cron: ${JSON.stringify(c.cron)}\n${c.timeZone ? `    timeZone: ${c.timeZone}\n` : ''}${http(i)}`;
    }
    files['s-dup.yaml'] = `schedules:\n  - name: good\n    cron: "* * * * *"\n${http(0)}`;
    files['t-yaml.yaml'] = 'schedules:\n  - name: x\n   cron: [\n';
    const dir = dirWith(files);
    const withWorkers = await loadSchedules(dir, { workers: 2 });
    expect(comparable(withWorkers)).toEqual(comparable(await loadSchedules(dir, { workers: 0 })));
    for (const [i, c] of cases.rejected.entries()) {
      const e = withWorkers.errors.find((x) => x.file === join(dir, `r-${String(i).padStart(3, '0')}.yaml`));
      const want = c.timeZone ? { line: 4, col: 15, field: 'schedules[0].timeZone' } : { line: 3, col: 11, field: 'schedules[0].cron' };
      expect(e, JSON.stringify(c)).toMatchObject(want);
    }
    const dup = withWorkers.errors.find((e) => e.code === 'NAME_DUPLICATE' && e.file.endsWith('s-dup.yaml'));
    expect(dup).toMatchObject({ line: 2, col: 11, field: 'schedules[0].name' });
    expect(dup!.hint).toContain('unique');
    expect(withWorkers.files.find((f) => f.file.endsWith('a-good.yaml'))).toMatchObject({ ok: false });
  }, 120_000);

  it('refuses a value JSON cannot carry (1e400) in a file loaded through the loader processes, at its position, as in-process', async () => {
    const entry = (name: string, value: string): string => `  - name: ${name}\n    cron: "0 3 * * *"\n    job:\n      kind: http\n      url: "http://127.0.0.1:9/x"\n      params:\n        v: ${value}\n`;
    const filler = Array.from({ length: 9_000 }, (_, i) => entry(`f-${i}`, `"${'x'.repeat(40)}"`)).join('');
    const dir = dirWith({ 'big.yaml': `schedules:\n${filler}${entry('late', '1e400')}` });
    const viaWorkers = await loadSchedules(dir, { workers: 1 });
    const inProcess = await loadSchedules(dir, { workers: 0 });
    for (const r of [viaWorkers, inProcess]) {
      expect(r.schedules).toEqual([]);
      expect(r.errors.map((e) => [e.code, e.field, e.line])).toEqual([['NOT_JSON', 'schedules[9000].job.params.v', 9_000 * 7 + 8]]);
    }
  }, 120_000);

  it('pre-checks in another process, not a thread of this one (V8 keeps a terminated worker\'s heap pages resident)', async () => {
    const dir = dirWith({ 'a.yaml': `schedules:\n  - name: a\n    cron: "* * * * *"\n${http(0)}` });
    const workerUrl = new URL('../fixtures/load-worker/pid.mjs', import.meta.url);
    const r = await loadSchedules(dir, { workers: 1, workerUrl });
    expect(r.errors).toHaveLength(1);
    const pid = /the loader worker failed: pid (\d+)/.exec(r.errors[0]!.format())?.[1];
    expect(pid, r.errors[0]!.format()).toBeDefined();
    expect(Number(pid)).not.toBe(process.pid);
  }, 60_000);

  for (const [fault, script] of [
    ['crashes', 'crash.mjs'],
    ['never answers', 'silent.mjs'],
  ] as const) {
    it(`a worker that ${fault} refuses its file with a clear load error, not a hang`, async () => {
      const dir = dirWith({
        'a.yaml': `schedules:\n  - name: a\n    cron: "* * * * *"\n${http(0)}`,
        'b.yaml': `schedules:\n  - name: b\n    cron: "* * * * *"\n${http(1)}`,
      });
      const workerUrl = new URL(`../fixtures/load-worker/${script}`, import.meta.url);
      const started = Date.now();
      const r = await loadSchedules(dir, { workers: 1, workerTimeoutMs: 1500, workerUrl });
      expect(Date.now() - started).toBeLessThan(30_000);
      expect(r.schedules).toEqual([]);
      expect(r.files.map((f) => f.ok)).toEqual([false, false]);
      expect(r.errors).toHaveLength(2);
      for (const e of r.errors) {
        expect(e.code).toBe('CONFIG_IO');
        expect(e.format()).toMatch(fault === 'crashes' ? /could not be checked: the loader worker exited \(code 3\)/ : /could not be checked: the loader worker did not answer within 1500 ms/);
        expect(e.hint).toContain('CRONFLOCK_LOAD_WORKERS=0');
      }
    }, 60_000);
  }
});
