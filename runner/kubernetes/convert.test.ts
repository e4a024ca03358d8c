import { describe, expect, it } from 'vitest';
import { convertCronJobs } from './convert.js';

const template = { spec: { template: { spec: { restartPolicy: 'Never', containers: [{ name: 'x', image: 'busybox:1.36' }] } } } };
const cronJob = (spec: Record<string, unknown>, metadata: Record<string, unknown> = { name: 'c', namespace: 'ns' }): unknown => ({
  apiVersion: 'batch/v1',
  kind: 'CronJob',
  metadata,
  spec: { jobTemplate: template, ...spec },
});
const one = (spec: Record<string, unknown>, metadata?: Record<string, unknown>) => convertCronJobs([{ source: 'f.yaml', object: cronJob(spec, metadata) }]);

describe('convertCronJobs', () => {
  it('maps a CronJob to a Schedule with kind: job, keeping name, namespace, labels and the job template', () => {
    const r = one(
      { schedule: '*/5 * * * *', startingDeadlineSeconds: 200, concurrencyPolicy: 'Forbid', suspend: true, successfulJobsHistoryLimit: 5, failedJobsHistoryLimit: 2 },
      { name: 'tidy', namespace: 'ops', labels: { team: 'a' }, annotations: { 'kubectl.kubernetes.io/last-applied-configuration': '{}', note: 'keep' }, uid: 'u', resourceVersion: '9' },
    );
    expect(r.notes).toEqual([]);
    expect(r.schedules[0]!.schedule).toEqual({
      apiVersion: 'cronflock.io/v1alpha1',
      kind: 'Schedule',
      metadata: { name: 'tidy', namespace: 'ops', labels: { team: 'a' }, annotations: { note: 'keep' } },
      spec: {
        cron: '*/5 * * * *',
        startingDeadline: '3m20s',
        concurrencyPolicy: 'Forbid',
        suspend: true,
        job: { kind: 'job', jobTemplate: template, successfulJobsHistoryLimit: 5, failedJobsHistoryLimit: 2 },
      },
    });
  });

  it('reads the zone from spec.timeZone or a CRON_TZ= / TZ= prefix, and refuses both at once', () => {
    expect(one({ schedule: 'CRON_TZ=Europe/Berlin 30 2 * * *' }).schedules[0]!.schedule.spec).toMatchObject({ cron: '30 2 * * *', timeZone: 'Europe/Berlin' });
    expect(one({ schedule: 'TZ=Asia/Tokyo 0 9 * * 1-5' }).schedules[0]!.schedule.spec).toMatchObject({ cron: '0 9 * * 1-5', timeZone: 'Asia/Tokyo' });
    expect(one({ schedule: '0 3 * * *', timeZone: 'America/New_York' }).schedules[0]!.schedule.spec).toMatchObject({ cron: '0 3 * * *', timeZone: 'America/New_York' });
    const both = one({ schedule: 'TZ=UTC 0 * * * *', timeZone: 'Europe/Paris' });
    expect(both.schedules).toEqual([]);
    expect(both.notes).toEqual([expect.objectContaining({ level: 'error', subject: 'CronJob ns/c', message: expect.stringContaining('spec.timeZone is set too') })]);
  });

  it('says what has no equivalent: @every is refused, @midnight becomes @daily, dotted names and owner references are noted', () => {
    expect(one({ schedule: '@every 1h' }).notes).toEqual([expect.objectContaining({ level: 'error', message: expect.stringMatching(/^spec\.schedule "@every 1h" has no equivalent/) })]);
    expect(one({ schedule: '@midnight' }).schedules[0]!.schedule.spec.cron).toBe('@daily');
    const dotted = one({ schedule: '@hourly' }, { name: 'a.b', ownerReferences: [{ kind: 'X' }] });
    expect(dotted.schedules[0]!.schedule.metadata.name).toBe('a-b');
    expect(dotted.schedules[0]!.warnings).toEqual([expect.stringContaining('"a.b" has dots'), expect.stringContaining('ownerReferences dropped')]);
    expect(one({ schedule: '@hourly', timeZoneX: 1 }).notes).toEqual([expect.objectContaining({ level: 'warning', message: 'spec.timeZoneX has no equivalent: dropped' })]);
  });

  it('looks into Lists, skips other kinds with a warning, ignores empty documents', () => {
    const r = convertCronJobs([
      { source: 'l.yaml', object: { apiVersion: 'v1', kind: 'List', items: [cronJob({ schedule: '@daily' }, { name: 'a' }), { apiVersion: 'v1', kind: 'ConfigMap' }] } },
      { source: 'e.yaml', object: null },
    ]);
    expect(r.schedules.map((s) => [s.source, s.schedule.metadata.name])).toEqual([['l.yaml items[0]', 'a']]);
    expect(r.notes).toEqual([{ source: 'l.yaml items[1]', level: 'warning', message: 'v1 ConfigMap is not a CronJob: skipped' }]);
  });

  it('keeps the template\'s labels and annotations, drops what cronflock sets and kubectl\'s null timestamps', () => {
    const r = one({
      schedule: '@daily',
      jobTemplate: { metadata: { name: 'fixed', labels: { a: 'b' }, creationTimestamp: null }, spec: { template: { metadata: { creationTimestamp: null }, spec: {} } } },
    });
    expect(r.schedules[0]!.schedule.spec.job).toEqual({ kind: 'job', jobTemplate: { metadata: { labels: { a: 'b' } }, spec: { template: { metadata: {}, spec: {} } } } });
    expect(r.schedules[0]!.warnings).toEqual([expect.stringContaining('spec.jobTemplate.metadata.name dropped')]);
  });
});
