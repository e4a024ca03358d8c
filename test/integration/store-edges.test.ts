/**
 * Edges of names across sources (issue 19 follow-ups), on a real redis-server with real replica processes
 * (`bin/cronflock.js start`, from dist/: `npm run build` first):
 * - a stored schedule refused because a file owns its name starts, without another upsert, once the file drops
 *   the name: on the file's replica and on a replica that runs the stored schedules only (which re-checks the
 *   names it refused);
 * - a file's owner back after the hold (its last-seen entry deleted while it is paused, as if gone for longer than
 *   10 min): when nobody took the name meanwhile it has the name again (an upsert is refused NAME_OWNED, its file
 *   version goes on); when the store took it meanwhile and another replica runs the stored one, it warns, naming
 *   the stored schedule and how to settle it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectFlock, type Flock as LibFlock } from '../../runner/library/index.js';
import { Keyspace } from '../../runner/redis/keys.js';
import { Flock, sleep, until, hasLogged } from '../support/flock.js';
import type { ReplicaProcess } from '../support/replica.js';

let flock: Flock;
let lib: LibFlock;
const keys = new Keyspace();

const calls = (path: string, after = 0): number => flock.receiver.deliveries.filter((d) => d.path === path && d.receivedMs > after).length;
const live = (replica: string): Promise<boolean> => flock.isLiveMember(replica, keys);
const logged = hasLogged;

/** Pauses `r` past its membership and deletes its last-seen entry (as if gone longer than the hold), runs `during`, resumes it. */
async function awayPastHold(r: ReplicaProcess, during: () => Promise<void>): Promise<void> {
  r.signal('SIGSTOP');
  try {
    await until(async () => !(await live(r.name)), 10_000, `${r.name} out of the membership`);
    await flock.redisClient.zrem(keys.replicasSeen, r.name);
    await during();
  } finally {
    r.signal('SIGCONT');
  }
  await until(async () => (await flock.redisClient.zscore(keys.replicasSeen, r.name)) !== null, 10_000, `${r.name} seen again`);
}

beforeAll(async () => {
  flock = await Flock.start();
  lib = await connectFlock({ redis: flock.redis.url, by: 'app' });
}, 60_000);
afterAll(async () => {
  await lib?.close();
  await flock?.close();
});

describe('a stored schedule refused for its name', () => {
  it('starts once the file drops the name, without another upsert, also on a replica that runs the stored schedules only', async () => {
    const url = flock.receiver.url;
    const yaml = (withA: boolean): string =>
      `schedules:\n${withA ? `  - {name: fr-a, cron: "* * * * * *", job: {kind: http, url: "${url}/fr-a-file"}}\n` : ''}  - {name: fr-b, cron: "* * * * * *", job: {kind: http, url: "${url}/fr-b"}}\n`;
    const file = flock.writeSchedules(yaml(true), 'fr.yaml');
    const r = await flock.startReplica({ name: 'fr-r', schedules: file });
    await until(async () => (await flock.redisClient.hget(keys.definitions, 'fr-a')) !== null, 20_000, 'fr-a published');
    // A clash that got into the store (the owner's last-seen entry gone while it is paused).
    let version = 0;
    await awayPastHold(r, async () => {
      const u = await lib.schedules.upsert({ name: 'fr-a', cron: '* * * * * *', job: { kind: 'http', url: `${url}/fr-a-stored` } });
      expect(u.ok).toBe(true);
      version = u.ok ? u.version : 0;
    });
    await r.waitForLog((l) => typeof l.msg === 'string' && l.msg.includes('stored schedule "fr-a" refused on this replica'), 15_000, 'refused on the file\'s replica');
    const s = await flock.startReplica({ name: 'fr-s', schedules: '' });
    expect(logged(s, 'stored schedule "fr-a" refused on this replica: the name is owned by')).toBe(true);
    await sleep(3_000);
    expect(calls('/fr-a-stored')).toBe(0);

    // The file drops fr-a: its replica reloads and withdraws the name; both replicas start the stored one.
    flock.writeSchedules(yaml(false), 'fr.yaml');
    await flock.receiver.waitFor(() => calls('/fr-a-stored') >= 2, 30_000, 'the stored fr-a runs');
    await s.waitForLog((l) => typeof l.msg === 'string' && l.msg.includes('stored schedule "fr-a" runs on this replica now'), 15_000, 'fr-s starts fr-a');
    // fr-s runs it alone too (the file's replica gone): it started it itself, not only the file's replica.
    await r.stop();
    const after = Date.now();
    await flock.receiver.waitFor(() => calls('/fr-a-stored', after) >= 3, 20_000, 'fr-s runs the stored fr-a');
    expect(calls('/fr-a-file', after + 2_000)).toBe(0);
    expect((await lib.schedules.get('fr-a'))?.version).toBe(version); // no other upsert
    await s.stop();
  }, 120_000);
});

describe('a name\'s owner back after the hold', () => {
  it('has its name again when nobody took it meanwhile', async () => {
    const url = flock.receiver.url;
    const file = flock.writeSchedules(`schedules:\n  - {name: bk-a, cron: "* * * * * *", job: {kind: http, url: "${url}/bk-a"}}\n`, 'bk.yaml');
    const r = await flock.startReplica({ name: 'bk-r', schedules: file });
    await until(async () => (await flock.redisClient.hget(keys.definitions, 'bk-a')) !== null, 20_000, 'bk-a published');
    await awayPastHold(r, async () => sleep(200));
    const u = await lib.schedules.upsert({ name: 'bk-a', cron: '* * * * * *', job: { kind: 'http', url: `${url}/bk-a-stored` } });
    expect(!u.ok && u.error.code).toBe('NAME_OWNED');
    expect(!u.ok && u.error.message).toMatch(/bk\.yaml:2 \(run by replica bk-r\)/);
    const after = Date.now();
    await flock.receiver.waitFor(() => calls('/bk-a', after) >= 2, 20_000, 'the file\'s bk-a goes on');
    await r.stop();
  }, 60_000);

  it('warns, naming the stored schedule, when the store took the name meanwhile and another replica runs it', async () => {
    const url = flock.receiver.url;
    const file = flock.writeSchedules(`schedules:\n  - {name: tk-a, cron: "* * * * * *", job: {kind: http, url: "${url}/tk-a-file"}}\n`, 'tk.yaml');
    const r = await flock.startReplica({ name: 'tk-r', schedules: file });
    await until(async () => (await flock.redisClient.hget(keys.definitions, 'tk-a')) !== null, 20_000, 'tk-a published');
    let s: ReplicaProcess | undefined;
    let version = 0;
    await awayPastHold(r, async () => {
      const u = await lib.schedules.upsert({ name: 'tk-a', cron: '* * * * * *', job: { kind: 'http', url: `${url}/tk-a-stored` } });
      expect(u.ok).toBe(true);
      version = u.ok ? u.version : 0;
      // a replica of the stored schedules takes it legitimately (the name was free)
      s = await flock.startReplica({ name: 'tk-s', schedules: '' });
      await flock.receiver.waitFor(() => calls('/tk-a-stored') >= 1, 20_000, 'the stored tk-a runs');
    });
    const w = await r.waitForLog((l) => typeof l.msg === 'string' && l.msg.includes('schedule "tk-a" of'), 20_000, 'the warning on the owner\'s replica');
    expect(w.level).toBe(40);
    expect(w.msg).toContain(`taken by the schedule store (stored schedule "tk-a", version ${version})`);
    expect(w.msg).toContain('published by replica tk-s');
    expect(w.msg).toContain('cronflock delete tk-a');
    await s!.stop();
    await r.stop();
  }, 90_000);
});
