/**
 * Values a schedule file can write that JSON cannot carry (found by a user): `1e400` reached an http job as null,
 * `!!set {a, b}` and `!!omap` as {}, `!!binary` as a Buffer's JSON — while `cronflock apply -f` of the same entry
 * refused them. The loader refuses them too, each at its file:line:col, with what to write instead (through the loader
 * processes of a large file alike: test/integration/load-worker.test.ts).
 */
import { describe, expect, it } from 'vitest';
import { parseScheduleText } from './load.js';

const entry = (name: string, params: string): string => `  - name: ${name}\n    cron: "0 3 * * *"\n    job:\n      kind: http\n      url: "http://127.0.0.1:9/x"\n      params:\n${params}\n`;

describe('values JSON cannot carry in a schedule file', () => {
  it('refuses each at its line:col (of the value, after its tag) and field, with what to write instead; nothing of the file loads', async () => {
    const text = 'schedules:\n' + entry('ok', '        a: 1') + entry('bad', '        big: 1e400\n        s: !!set {a, b}\n        o: !!omap [a: 1]\n        bin: !!binary aGVsbG8=');
    const r = await parseScheduleText(text, 'p.yaml');
    expect(r.schedules).toEqual([]);
    const got = r.errors.map((e) => [e.code, `${e.line}:${e.col}`, e.field]);
    expect(got).toEqual([
      ['NOT_JSON', '15:14', 'schedules[1].job.params.big'],
      ['NOT_JSON', '16:18', 'schedules[1].job.params.s'],
      ['NOT_JSON', '17:19', 'schedules[1].job.params.o'],
      ['NOT_JSON', '18:23', 'schedules[1].job.params.bin'],
    ]);
    expect(r.errors[0]!.reason).toBe('is Infinity, which JSON cannot store');
    expect(r.errors[0]!.hint).toMatch(/^use a finite number, or null/);
    expect(r.errors[1]!.hint).toMatch(/!!set/);
  });
});
