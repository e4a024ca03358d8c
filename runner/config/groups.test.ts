/**
 * Loading concurrency groups and rate limits: what is refused (with file:line:col and a did-you-mean) and what
 * the engine gets.
 */
import { describe, expect, it } from 'vitest';
import { parseScheduleText } from './load.js';
import type { CompiledSchedule } from './load.js';

const JOB = 'job: {kind: http, url: "http://127.0.0.1:1/"}';
const where = (e: { file: string; line: number; col: number; code: string; field: string }): string =>
  `${e.file.split('/').pop()}:${e.line}:${e.col} ${e.code} ${e.field}`;

describe('groups in schedule files', () => {
  it('refuses an unknown group name with file:line:col and the closest known group', async () => {
    const res = await parseScheduleText(
      `groups:
  cluster-prod: {maxConcurrent: 2}
  cluster-dev: {maxConcurrent: 4}
schedules:
  - name: a
    cron: "0 9 * * *"
    group: cluster-prd
    ${JOB}
`,
      'f.yaml',
    );
    expect(res.schedules).toEqual([]);
    expect(res.errors.map(where)).toEqual(['f.yaml:7:12 GROUP_UNKNOWN schedules[0].group']);
    expect(res.errors[0]!.format()).toContain('no group named "cluster-prd"');
    expect(res.errors[0]!.hint).toBe('did you mean "cluster-prod"? groups of this file: cluster-prod, cluster-dev');
  });

  it('refuses a group without a limit, and a group named where the file defines no groups', async () => {
    const res = await parseScheduleText(
      `groups:
  empty: {}
schedules:
  - name: a
    cron: "0 9 * * *"
    group: empty
    ${JOB}
`,
      'f.yaml',
    );
    expect(res.errors.map(where)).toEqual(['f.yaml:2:10 SCHEMA_INVALID groups.empty']);
    expect(res.errors[0]!.format()).toContain('a group needs a limit: maxConcurrent, rateLimit or both');
    const none = await parseScheduleText(`schedules:\n  - name: a\n    cron: "0 9 * * *"\n    group: g\n    ${JOB}\n`, 'g.yaml');
    expect(none.errors.map(where)).toEqual(['g.yaml:4:12 GROUP_UNKNOWN schedules[0].group']);
    expect(none.errors[0]!.hint).toContain('groups: {g: {maxConcurrent: 2}}');
  });

  it('refuses a rate limit without max or with a bad window', async () => {
    const res = await parseScheduleText(
      `schedules:
  - name: a
    cron: "0 9 * * *"
    rateLimit: {max: 0, per: 0s}
    ${JOB}
`,
      'f.yaml',
    );
    expect(res.errors.map(where)).toEqual(['f.yaml:4:22 SCHEMA_INVALID schedules[0].rateLimit.max', 'f.yaml:4:30 SCHEMA_INVALID schedules[0].rateLimit.per']);
  });

  it("gives each schedule its group's limits and its own rate limit (per in ms)", async () => {
    const res = await parseScheduleText(
      `groups:
  cluster-prod: {maxConcurrent: 2, rateLimit: {max: 10, per: 1s}}
schedules:
  - name: a
    cron: "0 9 * * *"
    group: cluster-prod
    rateLimit: {max: 1, per: 10s}
    ${JOB}
  - name: b
    cron: "0 9 * * *"
    ${JOB}
`,
      'f.yaml',
    );
    expect(res.errors).toEqual([]);
    const [a, b] = res.schedules as CompiledSchedule[];
    expect(a!.groupLimits).toEqual({ name: 'cluster-prod', maxConcurrent: 2, rateLimit: { max: 10, perMs: 1000 } });
    expect(a!.rateLimit).toEqual({ max: 1, perMs: 10_000 });
    expect(b!.groupLimits).toBeUndefined();
    expect(b!.rateLimit).toBeUndefined();
  });
});
