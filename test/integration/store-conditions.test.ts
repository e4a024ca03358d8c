/**
 * The library's conditional writes and argument checks on a real redis-server (issue 19 follow-ups):
 * - `upsert(def, { ifVersion: 0 })` creates only (refused when it exists), `{ ifVersion: 'exists' }` changes only
 *   (refused when it does not exist), each a VersionConflictError naming the failed condition; nothing written;
 * - a value that is neither a version nor 'exists' is a LibraryArgumentError naming the option;
 * - a schedule name that is not a string (`suspend(42)`) is a LibraryArgumentError, not a ControlError.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectFlock, LibraryArgumentError, VersionConflictError, type Flock } from '../../runner/library/index.js';
import { RedisServerProcess } from '../../runner/redis/server-process.js';

let server: RedisServerProcess;
let flock: Flock;
beforeAll(async () => {
  server = await RedisServerProcess.start();
  flock = await connectFlock({ redis: server.url, namespace: 'cond', by: 'test' });
});
afterAll(async () => {
  await flock?.close();
  await server?.cleanup();
});

const def = (name: string, cron = '0 3 * * *') => ({ name, cron, job: { kind: 'http' as const, url: 'http://127.0.0.1:1/x' } });

describe('conditional upserts', () => {
  it("ifVersion: 'exists' changes only an existing schedule; ifVersion: 0 creates only; each refusal names its condition", async () => {
    const absent = await flock.schedules.upsert(def('c1'), { ifVersion: 'exists' });
    expect(absent.ok).toBe(false);
    const e1 = !absent.ok ? absent.error : undefined;
    expect(e1).toBeInstanceOf(VersionConflictError);
    expect(e1 instanceof VersionConflictError && e1.condition).toBe('exists');
    expect(e1 instanceof VersionConflictError && e1.actual).toBe(0);
    expect(e1?.message).toMatch(/"c1" does not exist, and it was to be changed only if it exists \(ifVersion: 'exists'\)/);
    expect(await flock.schedules.get('c1')).toBeUndefined();

    const created = await flock.schedules.upsert(def('c1'), { ifVersion: 0 });
    expect(created.ok).toBe(true);
    const v1 = created.ok ? created.version : -1;

    const again = await flock.schedules.upsert(def('c1', '0 4 * * *'), { ifVersion: 0 });
    const e2 = !again.ok ? again.error : undefined;
    expect(e2 instanceof VersionConflictError && [e2.condition, e2.actual]).toEqual(['absent', v1]);
    expect(e2?.message).toContain(`"c1" already exists (version ${v1}) and it was to be created only (ifVersion: 0); pass ifVersion: ${v1} to change it`);
    expect((await flock.schedules.get('c1'))?.definition.cron).toBe('0 3 * * *');

    const changed = await flock.schedules.upsert(def('c1', '0 5 * * *'), { ifVersion: 'exists' });
    expect(changed.ok && changed.changed).toBe(true);
    expect((await flock.schedules.get('c1'))?.definition.cron).toBe('0 5 * * *');

    const stale = await flock.schedules.upsert(def('c1', '0 6 * * *'), { ifVersion: v1 });
    const e3 = !stale.ok ? stale.error : undefined;
    expect(e3 instanceof VersionConflictError && e3.condition).toBe('version');
  });

  it('refuses an ifVersion that is neither a version nor "exists", naming the option', async () => {
    for (const bad of ['exist', -2, 1.5, '3']) {
      await expect(flock.schedules.upsert(def('c2'), { ifVersion: bad as never })).rejects.toThrow(LibraryArgumentError);
      await expect(flock.schedules.upsert(def('c2'), { ifVersion: bad as never })).rejects.toThrow(/upsert options\.ifVersion: .*or 'exists'/);
    }
    expect(await flock.schedules.get('c2')).toBeUndefined();
  });
});
