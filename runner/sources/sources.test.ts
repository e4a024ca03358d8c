/**
 * The reload rules of schedule files, as ScheduleSources applies them (files only): a refused file keeps its
 * running version, a name now defined by a valid file is not kept twice, and nothing valid at all keeps
 * everything running. (Reloading running replicas, with the file watch and SIGHUP:
 * test/integration/reload.test.ts; files beside Schedules: combine.test.ts.)
 */
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { scheduleEntry, scheduleFile, scheduleFolder } from '../../test/support/schedules.js';
import { ScheduleSources } from './sources.js';

let folder: ReturnType<typeof scheduleFolder> | undefined;
afterEach(() => folder?.cleanup());

const log = pino({ level: 'silent' });
const names = (c: { runs: { schedule: { name: string } }[] }): string[] => c.runs.map((r) => r.schedule.name).sort();

/** Sources on `dir` that run what they find there now. */
async function running(dir: string): Promise<ScheduleSources> {
  const s = new ScheduleSources({ path: dir, log });
  s.applied(await s.compose());
  return s;
}

describe('ScheduleSources reload rules (files)', () => {
  it('keeps the running version of a refused file, and takes the new version of the others (removals too)', async () => {
    folder = scheduleFolder({
      'a.yaml': scheduleFile(scheduleEntry('a1'), scheduleEntry('removed')),
      'b.yaml': scheduleFile(scheduleEntry('b1'), scheduleEntry('b2')),
    });
    const s = await running(folder.dir);
    const before = s.running.find((r) => r.schedule.name === 'b1')!.schedule;
    folder.write('a.yaml', scheduleFile(scheduleEntry('a1', { cron: '*/7 * * * * *' }), scheduleEntry('a2')));
    folder.write('b.yaml', scheduleFile(scheduleEntry('b1', { cron: 'not a cron' })));
    const c = await s.compose();
    expect(c.refusedFiles).toEqual([`${folder.dir}/b.yaml`]);
    expect(names(c)).toEqual(['a1', 'a2', 'b1', 'b2']);
    expect(c.runs.find((r) => r.schedule.name === 'a1')!.schedule.cron).toBe('*/7 * * * * *'); // the new version
    expect(c.runs.find((r) => r.schedule.name === 'b1')!.schedule).toBe(before); // the running one
  });

  it("does not keep a refused file's schedule that a valid file now defines", async () => {
    folder = scheduleFolder({ 'a.yaml': scheduleFile(scheduleEntry('a1')), 'b.yaml': scheduleFile(scheduleEntry('moving')) });
    const s = await running(folder.dir);
    folder.write('a.yaml', scheduleFile(scheduleEntry('a1'), scheduleEntry('moving', { cron: '0 * * * * *' })));
    folder.write('b.yaml', 'schedules: [');
    const c = await s.compose();
    expect(c.runs.filter((r) => r.schedule.name === 'moving').map((r) => r.schedule.cron)).toEqual(['0 * * * * *']);
  });

  it('with every file refused, keeps what runs', async () => {
    folder = scheduleFolder({ 'a.yaml': scheduleFile(scheduleEntry('a1')) });
    const s = await running(folder.dir);
    folder.write('a.yaml', 'schedules: [');
    expect(names(await s.compose())).toEqual(['a1']);
  });
});

describe('ScheduleSources.recombine (start: the stored schedules added once Redis answers)', () => {
  it('combines the files loaded by the last compose with the stored names, without loading the files again', async () => {
    folder = scheduleFolder({ 'a.yaml': scheduleFile(scheduleEntry('a1'), scheduleEntry('a2')), 'b.yaml': scheduleFile(scheduleEntry('taken')) });
    const s = new ScheduleSources({ path: folder.dir, log });
    const first = await s.compose();
    // A second load would compile every schedule again (a second copy of 100,000 of them, and the time): the
    // recombination must hand back the very objects the first load made while the files are unchanged.
    const stored = { applied: new Map([['taken', { version: 3 }]]), ownedElsewhere: async () => new Map() };
    s.setStored(stored as unknown as Parameters<ScheduleSources['setStored']>[0]);
    const again = await s.recombine();
    expect(names(again)).toEqual(['a1', 'a2']); // b.yaml defines a stored name: refused as at a compose
    expect(again.storeClashes).toEqual(['taken']);
    for (const name of ['a1', 'a2']) {
      expect(again.runs.find((r) => r.schedule.name === name)!.schedule).toBe(first.runs.find((r) => r.schedule.name === name)!.schedule);
    }
    // The next compose (a reload) reads the files again.
    folder.write('a.yaml', scheduleFile(scheduleEntry('a1', { cron: '*/7 * * * * *' }), scheduleEntry('a2')));
    s.applied(again);
    expect((await s.compose()).runs.find((r) => r.schedule.name === 'a1')!.schedule.cron).toBe('*/7 * * * * *');
  });

  it('reads the files again when they changed since the compose began (an edit while the replica waited for Redis)', async () => {
    folder = scheduleFolder({ 'a.yaml': scheduleFile(scheduleEntry('a1')) });
    const s = new ScheduleSources({ path: folder.dir, log });
    await s.compose();
    // Before the file watch starts (it starts with the replica), nothing else would see this edit.
    folder.write('a.yaml', scheduleFile(scheduleEntry('a1'), scheduleEntry('added')));
    expect(names(await s.recombine())).toEqual(['a1', 'added']);
  });

  it('composes when nothing was composed yet', async () => {
    folder = scheduleFolder({ 'a.yaml': scheduleFile(scheduleEntry('a1')) });
    const s = new ScheduleSources({ path: folder.dir, log });
    expect(names(await s.recombine())).toEqual(['a1']);
  });
});
