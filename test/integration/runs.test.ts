/**
 * Run outcomes end to end: an http job's non-2xx answer and timeout are failures (recorded, never blocking the
 * next occurrence); an occurrence that can no longer start within its starting deadline is recorded missed and
 * not run; suspended schedules record skipped occurrences.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Flock, sleep, until } from '../support/flock.js';

describe('run outcomes', () => {
  let flock: Flock;
  beforeAll(async () => {
    flock = await Flock.start();
  });
  afterAll(() => flock?.close());

  it('records failures of http jobs with the reason, and later occurrences still run', async () => {
    flock.receiver.status.set('err500', 500);
    flock.receiver.holdMs.set('slow', 3000);
    const file = flock.writeSchedules(`schedules:
  - name: err500
    cron: "* * * * * *"
    job: { kind: http, url: ${flock.receiver.url}/x }
  - name: slow
    cron: "*/2 * * * * *"
    job: { kind: http, url: ${flock.receiver.url}/y, timeout: 500ms }
`, 'fail.yaml');
    const r = await flock.startReplica({ name: 'f1', schedules: file, namespace: 'cronflock' });
    await until(async () => (await flock.runs('slow')).filter((x) => x.state === 'failed').length >= 2, 20_000, 'two slow failures');
    await r.stop();
    const err = (await flock.runs('err500')).filter((x) => x.state !== 'scheduled');
    expect(err.length).toBeGreaterThanOrEqual(3);
    for (const x of err) expect(x).toMatchObject({ state: 'failed', error: 'answered 500: ok' });
    const slow = (await flock.runs('slow')).filter((x) => x.state === 'failed');
    for (const x of slow) {
      expect(x.error).toBe('timed out after 500 ms');
      expect(x.endMs! - x.startMs!).toBeLessThan(2500);
    }
    // The receiver saw the timed-out calls go away before it answered.
    expect(flock.receiver.of('slow').filter((d) => d.abortedMs !== undefined).length).toBeGreaterThanOrEqual(2);
  });

  it('at log level warn a final failure is still logged as an error, and a run writes no info lines', async () => {
    // The executor builds a run's two info lines only when info is logged (their ISO times cost CPU per run).
    flock.receiver.status.set('warn500', 500);
    const file = flock.writeSchedules(`schedules:
  - name: warn500
    cron: "* * * * * *"
    job: { kind: http, url: ${flock.receiver.url}/w }
`, 'warn.yaml');
    const r = await flock.startReplica({ name: 'w1', schedules: file, namespace: 'cronwarn', env: { CRONFLOCK_LOG_LEVEL: 'warn' }, waitFor: 'nothing' });
    const line = await r.waitForLog((l) => l.msg === 'run finished', 20_000, 'a final failure at warn');
    await r.stop();
    expect(line).toMatchObject({ level: 50, state: 'failed', error: 'answered 500: ok' });
    expect(r.lines.filter((l) => l.msg === 'run started' || (l.msg === 'run finished' && l.state !== 'failed'))).toEqual([]);
  });

  it('records missed, and does not run, occurrences that could not start within their starting deadline', async () => {
    const file = flock.writeSchedules(`schedules:
  - name: tight
    cron: "* * * * * *"
    startingDeadline: 500ms
    job: { kind: http, url: ${flock.receiver.url}/t }
  - name: paused
    cron: "* * * * * *"
    suspend: true
    job: { kind: http, url: ${flock.receiver.url}/p }
`, 'tight.yaml');
    const a = await flock.startReplica({ name: 't1', schedules: file });
    const b = await flock.startReplica({ name: 't2', schedules: file });
    await sleep(2000);
    // The whole flock freezes: occurrences planned ahead fire while nobody can start them.
    a.signal('SIGSTOP');
    b.signal('SIGSTOP');
    const frozenAt = Date.now();
    await sleep(3000);
    a.signal('SIGCONT');
    b.signal('SIGCONT');
    const thawedAt = Date.now();
    await sleep(3000);
    const runs = await flock.runs('tight');
    const delivered = new Set(flock.receiver.of('tight').map((d) => d.body.occurrence));
    const frozen = runs.filter((x) => x.fireMs > frozenAt + 200 && x.fireMs + 500 < thawedAt - 200);
    expect(frozen.length).toBeGreaterThanOrEqual(1);
    for (const x of frozen) {
      expect(x).toMatchObject({ state: 'missed', reason: 'starting deadline exceeded' });
      expect(delivered.has(x.key)).toBe(false);
    }
    const after = runs.filter((x) => x.fireMs > thawedAt + 1000 && x.fireMs < Date.now() - 1000);
    expect(after.length).toBeGreaterThanOrEqual(1);
    for (const x of after) expect(x.state).toBe('succeeded');
    const paused = await flock.runs('paused');
    expect(paused.length).toBeGreaterThanOrEqual(3);
    for (const x of paused) expect(x).toMatchObject({ state: 'skipped', reason: 'suspended' });
    expect(flock.receiver.of('paused')).toEqual([]);
  });

  it('isolates a module job that crashes (timer throw, process.exit, unhandled rejection): only its attempt fails', async () => {
    const crash = new URL('../fixtures/jobs/crash.mjs', import.meta.url).pathname;
    const file = flock.writeSchedules(`schedules:
  - { name: c-throw, cron: "* * * * * *", job: { kind: module, path: ${crash}, params: { mode: timer-throw } } }
  - { name: c-exit, cron: "* * * * * *", job: { kind: module, path: ${crash}, params: { mode: exit } } }
  - { name: c-reject, cron: "* * * * * *", job: { kind: module, path: ${crash}, params: { mode: reject } } }
  - { name: healthy, cron: "* * * * * *", job: { kind: http, url: ${flock.receiver.url}/healthy } }
`, 'crash.yaml');
    const r = await flock.startReplica({ name: 'c1', schedules: file });
    for (const [name, why] of [['c-throw', /job crashed: async boom/], ['c-exit', /exited with code 3/], ['c-reject', /job crashed: .*unhandled boom/]] as const) {
      await until(async () => (await flock.runs(name)).filter((x) => x.state === 'failed').length >= 2, 20_000, `${name} failures`);
      const runs = await flock.runs(name);
      for (const x of runs.filter((y) => y.state === 'failed')) expect(x.error, name).toMatch(why);
      expect(runs.filter((y) => y.state === 'succeeded'), name).toEqual([]);
    }
    expect(r.child.exitCode).toBeNull(); // the replica is alive
    await until(() => flock.receiver.of('healthy').length >= 3, 10_000, 'the healthy schedule runs on');
  });
});
