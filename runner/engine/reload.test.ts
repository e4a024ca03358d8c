/**
 * The reload rules on schedule files compiled by the loader: a refused file keeps its running version, a name
 * now defined by a valid file is not kept twice, and nothing valid at all keeps everything running.
 * (Reloading running replicas, with the file watch and SIGHUP: test/integration/reload.test.ts.)
 */
import { afterEach, describe, expect, it } from 'vitest';
import { loadSchedules } from '../config/load.js';
import { scheduleEntry, scheduleFile, scheduleFolder } from '../../test/support/schedules.js';
import { schedulesAfterReload } from './reload.js';

let folder: ReturnType<typeof scheduleFolder> | undefined;
afterEach(() => folder?.cleanup());

const names = (s: readonly { name: string }[]): string[] => s.map((x) => x.name).sort();

describe('schedulesAfterReload', () => {
  it('keeps the running version of a refused file, and takes the new version of the others (removals too)', async () => {
    folder = scheduleFolder({
      'a.yaml': scheduleFile(scheduleEntry('a1'), scheduleEntry('removed')),
      'b.yaml': scheduleFile(scheduleEntry('b1'), scheduleEntry('b2')),
    });
    const running = (await loadSchedules(folder.dir)).schedules;
    folder.write('a.yaml', scheduleFile(scheduleEntry('a1', { cron: '*/7 * * * * *' }), scheduleEntry('a2')));
    folder.write('b.yaml', scheduleFile(scheduleEntry('b1', { cron: 'not a cron' })));
    const next = await loadSchedules(folder.dir);
    const { schedules, refused } = schedulesAfterReload(running, next);
    expect(refused).toEqual([`${folder.dir}/b.yaml`]);
    expect(names(schedules)).toEqual(['a1', 'a2', 'b1', 'b2']);
    expect(schedules.find((s) => s.name === 'a1')!.cron).toBe('*/7 * * * * *'); // the new version
    expect(schedules.find((s) => s.name === 'b1')).toBe(running.find((s) => s.name === 'b1')); // the running one
  });

  it('does not keep a refused file\'s schedule that a valid file now defines', async () => {
    folder = scheduleFolder({ 'a.yaml': scheduleFile(scheduleEntry('a1')), 'b.yaml': scheduleFile(scheduleEntry('moving')) });
    const running = (await loadSchedules(folder.dir)).schedules;
    folder.write('a.yaml', scheduleFile(scheduleEntry('a1'), scheduleEntry('moving', { cron: '0 * * * * *' })));
    folder.write('b.yaml', 'schedules: [');
    const { schedules } = schedulesAfterReload(running, await loadSchedules(folder.dir));
    expect(schedules.filter((s) => s.name === 'moving').map((s) => s.cron)).toEqual(['0 * * * * *']);
  });

  it('with every file refused, keeps what runs', async () => {
    folder = scheduleFolder({ 'a.yaml': scheduleFile(scheduleEntry('a1')) });
    const running = (await loadSchedules(folder.dir)).schedules;
    folder.write('a.yaml', 'schedules: [');
    expect(names(schedulesAfterReload(running, await loadSchedules(folder.dir)).schedules)).toEqual(['a1']);
  });
});
