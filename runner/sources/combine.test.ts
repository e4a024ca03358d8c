import { describe, expect, it } from 'vitest';
import { parseScheduleText, type CompiledSchedule, type LoadResult } from '../config/load.js';
import { loadScheduleObject, type LoadedSchedule } from '../kubernetes/validate.js';
import { combineSources, type SourcedSchedule } from './combine.js';

async function file(name: string, yaml: string, ok = true): Promise<LoadResult> {
  const r = await parseScheduleText(yaml, name);
  if (ok) expect(r.errors).toEqual([]);
  return { schedules: r.schedules, errors: r.errors, warnings: r.warnings ?? [], files: [{ file: name, ok: r.errors.length === 0, scheduleCount: r.schedules.length }] };
}

const http = { kind: 'http', url: 'http://127.0.0.1:1/x' };

async function cluster(namespace: string, name: string, spec: Record<string, unknown>, generation = 1, uid = `uid-${namespace}-${name}`): Promise<LoadedSchedule> {
  return loadScheduleObject({ apiVersion: 'cronflock.io/v1alpha1', kind: 'Schedule', metadata: { namespace, name, uid, generation }, spec });
}

const names = (runs: SourcedSchedule[]): string[] => runs.map((r) => r.schedule.name).sort();

describe('combineSources', () => {
  it('runs files and Schedules side by side', async () => {
    const f = await file('a.yaml', 'schedules:\n  - {name: from-file, cron: "* * * * *", job: {kind: http, url: "http://127.0.0.1:1/x"}}\n');
    const c = combineSources({ files: f, cluster: [await cluster('ns', 'from-cluster', { cron: '* * * * *', job: http })], running: [] });
    expect(names(c.runs)).toEqual(['from-cluster', 'from-file']);
    expect(c.runs.find((r) => r.schedule.name === 'from-cluster')!.origin).toEqual({ ref: { namespace: 'ns', name: 'from-cluster', uid: 'uid-ns-from-cluster' }, generation: 1 });
    expect(c.cluster.map((v) => v.state)).toEqual(['runs']);
    expect(c.fileErrors).toEqual([]);
  });

  it('refuses a name defined in a file and by a Schedule in both places, naming the other', async () => {
    const f = await file('a.yaml', 'schedules:\n  - {name: nightly, cron: "0 3 * * *", job: {kind: http, url: "http://127.0.0.1:1/x"}}\n  - {name: other, cron: "0 4 * * *", job: {kind: http, url: "http://127.0.0.1:1/x"}}\n');
    const c = combineSources({ files: f, cluster: [await cluster('team', 'nightly', { cron: '0 3 * * *', job: http })], running: [] });
    expect(c.runs).toEqual([]); // the file is refused whole, as for two files
    expect(c.refusedFiles).toEqual(['a.yaml']);
    expect(c.fileErrors.map((e) => e.format())).toEqual([expect.stringMatching(/^a\.yaml:2:5: name: name "nightly" is also defined by Schedule team\/nightly; both are refused/)]);
    expect(c.cluster[0]).toMatchObject({ state: 'refused', reason: 'NameConflict', messages: [expect.stringMatching(/^metadata\.name: name "nightly" is also defined in a\.yaml:2:5; both are refused/)] });
  });

  it('refuses a name used by Schedules in two namespaces in both', async () => {
    const c = combineSources({ cluster: [await cluster('a', 'same', { cron: '* * * * *', job: http }), await cluster('b', 'same', { cron: '* * * * *', job: http })], running: [] });
    expect(c.runs).toEqual([]);
    expect(c.cluster.map((v) => [v.state, v.messages[0]])).toEqual([
      ['refused', expect.stringContaining('also defined in Schedule b/same')],
      ['refused', expect.stringContaining('also defined in Schedule a/same')],
    ]);
  });

  it('keeps the running generation of a Schedule whose new generation the loader refuses', async () => {
    const v1 = await cluster('ns', 's', { cron: '* * * * *', job: http }, 1);
    const running = combineSources({ cluster: [v1], running: [] }).runs;
    const v2 = await cluster('ns', 's', { cron: '* * * * *', jitter: '2m', job: http }, 2); // jitter reaches the next due time
    expect(v2.errors).toEqual([expect.stringMatching(/^spec\.jitter: jitter 2m reaches the next due time/)]);
    const c = combineSources({ cluster: [v2], running });
    expect(c.runs).toHaveLength(1);
    expect(c.runs[0]!.origin!.generation).toBe(1);
    expect(c.cluster[0]).toMatchObject({ state: 'kept', reason: 'SpecInvalid', runningGeneration: 1 });
  });

  it('keeps a running Schedule when a newcomer takes its name, and never starts the newcomer', async () => {
    const mine = await cluster('a', 'job', { cron: '* * * * *', job: http });
    const running = combineSources({ cluster: [mine], running: [] }).runs;
    const f = await file('new.yaml', 'schedules:\n  - {name: job, cron: "0 0 * * *", job: {kind: http, url: "http://127.0.0.1:1/y"}}\n');
    const c = combineSources({ files: f, cluster: [mine], running });
    expect(c.runs.map((r) => r.origin?.ref.namespace)).toEqual(['a']);
    expect(c.cluster[0]!.state).toBe('kept');
    expect(c.refusedFiles).toEqual(['new.yaml']);
  });

  it('stops a deleted Schedule, and does not keep a running one for a re-created object (new uid) that is refused', async () => {
    const s = await cluster('ns', 's', { cron: '* * * * *', job: http });
    const running = combineSources({ cluster: [s], running: [] }).runs;
    expect(combineSources({ cluster: [], running }).runs).toEqual([]);
    const recreated = await cluster('ns', 's', { cron: '* * * * *', timeZone: 'Mars/Olympus', job: http }, 1, 'uid-new');
    const c = combineSources({ cluster: [recreated], running });
    expect(c.runs).toEqual([]);
    expect(c.cluster[0]).toMatchObject({ state: 'refused', reason: 'SpecInvalid', messages: [expect.stringMatching(/^spec\.timeZone: time zone "Mars\/Olympus" is not a known IANA time zone/)] });
  });

  it('keeps a refused file\'s running schedules, as reloads always did', async () => {
    const good = await file('a.yaml', 'schedules:\n  - {name: a, cron: "* * * * *", job: {kind: http, url: "http://127.0.0.1:1/x"}}\n');
    const running = combineSources({ files: good, cluster: [], running: [] }).runs;
    const bad = await file('a.yaml', 'schedules:\n  - {name: a, cron: "* * *", job: {kind: http, url: "http://127.0.0.1:1/x"}}\n', false);
    const c = combineSources({ files: bad, cluster: [], running });
    expect(c.runs.map((r) => r.schedule)).toEqual(running.map((r) => r.schedule));
    expect(c.fileErrors).toHaveLength(1);
  });
});

describe('loadScheduleObject', () => {
  it('names the fields the Kubernetes way and compiles a valid Schedule as the loader compiles a file\'s', async () => {
    const bad = await cluster('ns', 'x', { cron: '61 * * * *', job: { kind: 'http', url: 'ftp://x' } });
    expect(bad.schedule).toBeUndefined();
    expect(bad.errors).toEqual([expect.stringMatching(/^spec\.cron: /), expect.stringMatching(/^spec\.job\.url: must be an http/)]);
    const good = await cluster('ns', 'x', { cron: '0 3 * * *', timeZone: 'Europe/Berlin', job: http });
    const viaFile = await parseScheduleText('schedules:\n  - {name: x, cron: "0 3 * * *", timeZone: Europe/Berlin, job: {kind: http, url: "http://127.0.0.1:1/x"}}\n', 'f.yaml');
    const s: CompiledSchedule = good.schedule!;
    expect(s.definitionHash).toBe(viaFile.schedules[0]!.definitionHash);
    expect(s.source).toEqual({ file: 'Schedule ns/x', line: 0, col: 0 });
  });
});
