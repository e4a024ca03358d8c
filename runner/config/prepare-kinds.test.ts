/**
 * A job kind's `prepare` (jobs/types.ts) is started by the loader beside a file's parse when the file names the
 * kind (issue 16, set-up until running): the module kind's measure of a bare Node's reservation then no longer
 * holds the first module check up by a Node start-up. Not timings: which kinds are prepared, and before what.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { moduleJob } from '../../jobs/module.js';
import type { JobKind } from '../../jobs/types.js';
import { prepareJobKinds } from './compile.js';
import { loadSchedules } from './load.js';

const dir = mkdtempSync(join(tmpdir(), 'cronflock-prepare-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('job kinds prepared beside the parse', () => {
  it('tells from the text which kinds a file may use: block, flow and quoted (JSON) forms; not a longer word', () => {
    const kind = moduleJob as Required<JobKind<{ kind: 'module' }, unknown>>;
    const spy = vi.spyOn(kind, 'prepare').mockImplementation(() => undefined);
    try {
      for (const text of ['job:\n  kind: module\n', 'job: {kind: module, path: x}', '{"job": {"kind": "module"}}', "job: { kind: 'module' }"]) {
        spy.mockClear();
        prepareJobKinds(text);
        expect(spy, text).toHaveBeenCalledTimes(1);
      }
      for (const text of ['job: { kind: http, url: "https://example.com/module" }', 'job: { kind: modules }', '# a module job follows later\n']) {
        spy.mockClear();
        prepareJobKinds(text);
        expect(spy, text).not.toHaveBeenCalled();
      }
    } finally {
      spy.mockRestore();
    }
  });

  it('loadSchedules prepares the module kind before its first check when a file holds module jobs, and not for a file of http jobs', async () => {
    const job = join(dir, 'job.mjs');
    writeFileSync(job, 'export default { run() {} };\n');
    const http = join(dir, 'http.yaml');
    writeFileSync(http, 'schedules:\n  - name: h\n    cron: "0 3 * * *"\n    job: { kind: http, url: "http://127.0.0.1:9/x" }\n');
    const mod = join(dir, 'module.yaml');
    writeFileSync(mod, `schedules:\n  - name: m\n    cron: "0 3 * * *"\n    job:\n      kind: module\n      path: ${job}\n`);
    const kind = moduleJob as Required<JobKind<{ kind: 'module' }, unknown>>;
    const prepare = vi.spyOn(kind, 'prepare'); // calls through: the real measure starts
    const compile = vi.spyOn(kind, 'compile');
    try {
      const a = await loadSchedules(http);
      expect(a.errors).toEqual([]);
      expect(prepare).not.toHaveBeenCalled();
      const b = await loadSchedules(mod);
      expect(b.errors.map((e) => e.format())).toEqual([]);
      expect(b.schedules.map((s) => s.name)).toEqual(['m']);
      expect(prepare).toHaveBeenCalledTimes(1);
      expect(compile).toHaveBeenCalledTimes(1);
      expect(prepare.mock.invocationCallOrder[0]!).toBeLessThan(compile.mock.invocationCallOrder[0]!);
    } finally {
      prepare.mockRestore();
      compile.mockRestore();
    }
  }, 60_000);
});
