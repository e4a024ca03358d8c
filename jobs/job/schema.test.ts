import { describe, expect, it } from 'vitest';
import { parseScheduleText } from '../../runner/config/load.js';
import { jobsBeyondHistory } from './history.js';
import { jobManifest } from './run.js';
import { jobJobSchema } from './schema.js';
import type { BatchJob } from './state.js';

const file = (job: string, extra = ''): string => `schedules:
  - name: nightly
    cron: "0 2 * * *"
${extra}    job:
      kind: job
${job}`;
const TEMPLATE = `      jobTemplate:
        spec:
          template:
            spec:
              restartPolicy: Never
              containers: [{name: main, image: busybox}]
`;

describe('kind: job at load', () => {
  it('accepts a CronJob jobTemplate with the CronJob defaults for the history limits', async () => {
    const r = await parseScheduleText(file(TEMPLATE), 'test.yaml');
    expect(r.errors.map((e) => e.format())).toEqual([]);
    expect(r.schedules[0]!.job).toMatchObject({ kind: 'job', successfulJobsHistoryLimit: 3, failedJobsHistoryLimit: 1 });
  });

  it('refuses what would only fail at run time, with file:line:col, the field and the fix', async () => {
    const bad = `      jobTemplate:
        metadata: {name: fixed}
        spec:
          template:
            spec:
              restartPolicy: Always
              containers: []
`;
    const r = await parseScheduleText(file(bad), 'test.yaml');
    const lines = r.errors.map((e) => e.format().split('\n')[0]);
    expect(lines).toEqual([
      'test.yaml:7:20: schedules[0].job.jobTemplate.metadata.name: unknown key "name"',
      "test.yaml:11:30: schedules[0].job.jobTemplate.spec.template.spec.restartPolicy: must be Never or OnFailure (a Job's pods may not restart Always; the API server refuses it)",
      'test.yaml:12:27: schedules[0].job.jobTemplate.spec.template.spec.containers: must list at least one container',
    ]);
    expect(r.schedules).toEqual([]);
    const label = await parseScheduleText(file(TEMPLATE.replace('        spec:\n', '        metadata: {labels: {cronflock.io/schedule: x}}\n        spec:\n')), 'test.yaml');
    expect(label.errors.map((e) => e.format())).toEqual([
      'test.yaml:7:52: schedules[0].job.jobTemplate.metadata.labels.cronflock.io/schedule: is set by cronflock (the schedule name): remove it',
    ]);
  });

  it('refuses schedule retries (one Job per occurrence) and says to use backoffLimit', async () => {
    const r = await parseScheduleText(file(TEMPLATE, '    retries: 2\n'), 'test.yaml');
    expect(r.errors.map((e) => e.format())).toEqual([expect.stringMatching(/^test\.yaml:4:14: schedules\[0\]\.retries: kind: job does not retry .*backoffLimit/)]);
  });
});

describe('jobManifest', () => {
  const params = jobJobSchema.parse({
    kind: 'job',
    jobTemplate: { spec: { activeDeadlineSeconds: 30, template: { spec: { restartPolicy: 'Never', containers: [{ name: 'm', image: 'x' }] } } } },
  });
  const occurrence = { schedule: 's', key: 's@2026-01-01T00:00:00.000Z', dueMs: Date.UTC(2026, 0, 1), fireMs: 0, startMs: 0, attempt: 1, fencingToken: 4, manual: false };
  it("keeps the template's deadline when shorter than the schedule's timeout, takes the timeout otherwise", () => {
    expect(jobManifest({ occurrence, schedule: { concurrencyPolicy: 'Allow', timeoutMs: 60_000 } }, params, 'n').spec?.activeDeadlineSeconds).toBe(30);
    expect(jobManifest({ occurrence, schedule: { concurrencyPolicy: 'Allow', timeoutMs: 10_001 } }, params, 'n').spec?.activeDeadlineSeconds).toBe(11);
    expect(jobManifest({ occurrence }, params, 'n').spec?.activeDeadlineSeconds).toBe(30);
    // The template itself is not changed (every occurrence starts from it).
    expect(params.jobTemplate.spec.template.metadata).toBeUndefined();
  });
});

describe('jobsBeyondHistory', () => {
  const j = (name: string, due: number, state?: 'Complete' | 'Failed', deleting = false): BatchJob => ({
    metadata: { name, annotations: { 'cronflock.io/scheduled-time': new Date(due * 1000).toISOString() }, ...(deleting ? { deletionTimestamp: new Date() } : {}) },
    status: state ? { conditions: [{ type: state, status: 'True' }] } : {},
  });
  it('deletes the oldest finished beyond each limit; running and terminating Jobs are neither counted nor deleted', () => {
    const jobs = [j('a', 1, 'Complete'), j('b', 2, 'Failed'), j('c', 3, 'Complete'), j('d', 4, 'Complete'), j('e', 5, 'Failed'), j('f', 6), j('g', 7, 'Complete', true)];
    expect(jobsBeyondHistory(jobs, { successful: 1, failed: 1 }).map((x) => x.metadata!.name)).toEqual(['a', 'b', 'c']);
    expect(jobsBeyondHistory(jobs, { successful: 0, failed: 0 }).map((x) => x.metadata!.name)).toEqual(['a', 'b', 'c', 'd', 'e']);
    expect(jobsBeyondHistory(jobs, { successful: 3, failed: 2 })).toEqual([]);
  });
});
