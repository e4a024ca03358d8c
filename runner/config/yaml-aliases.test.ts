/**
 * Anchors in schedule files (yaml-aliases.ts): a file may expand an anchor 10 times per schedule it lists (at least
 * 100), so 150 schedules sharing `<<: *base` load (the yaml library's default of 100 refused them whole with "Excessive
 * alias count indicates a resource exhaustion attack", found by a user), while a doubling chain of aliases is
 * still refused, with a reason and a hint in the loader's words.
 */
import { describe, expect, it } from 'vitest';
import { parseScheduleText } from './load.js';

const shared = (n: number): string =>
  [
    'schedules:',
    '  - &base',
    '    name: base-0',
    '    cron: "0 3 * * *"',
    '    job: {kind: http, url: "http://127.0.0.1:9/x"}',
    ...Array.from({ length: n - 1 }, (_, i) => `  - <<: *base\n    name: base-${i + 1}`),
  ].join('\n') + '\n';

describe('anchors and aliases in a schedule file', () => {
  it('loads 150 schedules that share one anchor through a merge key, each with the shared fields', async () => {
    const r = await parseScheduleText(shared(150), 'shared.yaml');
    expect(r.errors).toEqual([]);
    expect(r.schedules).toHaveLength(150);
    expect(r.schedules[149]).toMatchObject({ name: 'base-149', cron: '0 3 * * *', job: { kind: 'http' } });
  });

  it('loads 1,500 schedules that share two anchors (a job and a cron), well past the library default of 100 uses', async () => {
    const text =
      'schedules:\n' +
      Array.from({ length: 1_500 }, (_, i) =>
        i === 0 ? '  - {name: s-0, cron: &c "0 4 * * *", job: &j {kind: http, url: "http://127.0.0.1:9/y"}}' : `  - {name: s-${i}, cron: *c, job: *j}`,
      ).join('\n') +
      '\n';
    const r = await parseScheduleText(text, 'two.yaml');
    expect(r.errors).toEqual([]);
    expect(r.schedules).toHaveLength(1_500);
  });

  it('refuses a doubling chain of aliases (a "billion laughs") with a reason and a hint, nothing loaded', async () => {
    const chain = ['l0: &l0 [x, x]', ...Array.from({ length: 30 }, (_, i) => `l${i + 1}: &l${i + 1} [*l${i}, *l${i}]`)].map((l) => `        ${l}`).join('\n');
    const text = `schedules:\n  - name: bomb\n    cron: "0 5 * * *"\n    job:\n      kind: http\n      url: "http://127.0.0.1:9/z"\n      headers:\n${chain}\n`;
    const r = await parseScheduleText(text, 'bomb.yaml');
    expect(r.schedules).toEqual([]);
    expect(r.errors).toHaveLength(1);
    expect(r.errors[0]!.reason).toMatch(/^expands one anchor more than 100 times .*"billion laughs"/);
    expect(r.errors[0]!.hint).toMatch(/10 times per schedule it lists \(at least 100\)/);
    expect(r.errors[0]!.format()).not.toMatch(/resource exhaustion attack/);
  });
});
