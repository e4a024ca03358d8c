/**
 * Issue 3 policies end to end, on real Redis and real replica processes: catch-up after the flock was down,
 * Forbid and Replace across replicas, suspend/resume seen by every replica, trigger and backfill with their
 * de-duplication, timeout, and retries with backoff.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Flock, sleep, until } from '../support/flock.js';
import { cronAt, readEvents } from '../support/events.js';
import { BIN, ROOT } from '../support/replica.js';

const SLOW = new URL('../fixtures/jobs/slow.mjs', import.meta.url).pathname;

function cli(flock: Flock, args: string[]): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [BIN, ...args, '--redis', flock.redis.url, '--json'], { cwd: ROOT, encoding: 'utf8', timeout: 30_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('policies across replicas', () => {
  let flock: Flock;
  afterEach(() => flock?.close());

  it('catches up after the whole flock was down, per catchUp mode, recording every missed occurrence', async () => {
    flock = await Flock.start();
    const job = `job: { kind: http, url: ${flock.receiver.url}/c }`;
    const file = flock.writeSchedules(`schedules:
  - { name: cu-none, cron: "* * * * * *", catchUp: none, ${job} }
  - { name: cu-latest, cron: "* * * * * *", catchUp: latest, ${job} }
  - { name: cu-all, cron: "* * * * * *", catchUp: all, maxCatchUpRuns: 2, ${job} }
`);
    const args = ['--lookahead', '1s', '--tick', '200ms'];
    const r1 = await flock.startReplica({ name: 'before', schedules: file, args });
    await sleep(2500);
    r1.signal('SIGKILL');
    const downAt = Date.now();
    await r1.exited;
    // Long enough that at least 4 due times are overdue when the new replica's first tick decides, however fast
    // it starts (lookahead 1 s covered the first second of the outage, grace 1 s, 2 kept by catchUp all).
    await sleep(9000);
    const upAt = Date.now();
    await flock.startReplica({ name: 'after', schedules: file, args });
    await sleep(4000);
    for (const [name, expectRuns] of [['cu-none', 0], ['cu-latest', 1], ['cu-all', 2]] as const) {
      const runs = (await flock.runs(name)).sort((a, b) => a.dueMs - b.dueMs);
      // Every due time from the kill to the restart has exactly one record.
      const dues = new Set(runs.map((r) => r.dueMs));
      for (let d = Math.ceil(downAt / 1000) * 1000; d < upAt - 1000; d += 1000) expect(dues.has(d), `${name} ${d}`).toBe(true);
      // Planned after the restart and overdue then: the policy decided, and each record says what it decided.
      const decided = runs.filter((r) => r.plannedBy === 'after' && r.reason?.startsWith('catch-up: '));
      const kept = decided.filter((r) => r.reason!.startsWith('catch-up: run late'));
      const dropped = decided.filter((r) => !kept.includes(r));
      expect(dropped.length, name).toBeGreaterThanOrEqual(4);
      expect(kept.length, name).toBe(expectRuns);
      for (const r of kept) expect(r.state).toBe('succeeded');
      for (const r of dropped) expect(r.state).toBe('missed');
      // The kept ones are the newest overdue ones.
      if (expectRuns > 0) expect(Math.min(...kept.map((r) => r.dueMs))).toBeGreaterThan(Math.max(...dropped.map((r) => r.dueMs)));
      // Every due time in the outage was either run before the kill, decided by the policy, or run on time.
      for (const r of runs.filter((x) => x.dueMs > downAt && x.dueMs < upAt)) expect(['succeeded', 'missed']).toContain(r.state);
      // The schedule is not in an error state: occurrences after the restart run.
      expect(runs.filter((r) => r.dueMs > upAt + 1500 && r.state === 'succeeded').length).toBeGreaterThanOrEqual(1);
    }
  });

  it('Forbid: an occurrence due while another replica runs the previous one is recorded skipped (overlap)', async () => {
    flock = await Flock.start();
    const events = join(flock.dir, 'events.jsonl');
    const file = flock.writeSchedules(`schedules:
  - name: fb
    cron: "*/2 * * * * *"
    concurrencyPolicy: Forbid
    job: { kind: module, path: ${SLOW}, params: { ms: 5000, events: ${events} } }
`);
    // r1 has one slot: once it runs the long job, the next occurrences must be delivered to r2.
    const r1 = await flock.startReplica({ name: 'r1', schedules: file, args: ['--concurrency', '1'] });
    await until(() => readEvents(events).some((e) => e.event === 'start'), 10_000, 'first run');
    await flock.startReplica({ name: 'r2', schedules: file });
    const first = readEvents(events).find((e) => e.event === 'start')!;
    expect(first.replica).toBe(r1.name);
    await until(async () => (await flock.runs('fb')).some((r) => r.state === 'skipped' && r.replica === 'r2'), 10_000, 'skip by r2');
    const skipped = (await flock.runs('fb')).find((r) => r.state === 'skipped' && r.replica === 'r2')!;
    expect(skipped.reason).toBe(`overlap: ${first.key} still running (concurrencyPolicy Forbid)`);
    expect(skipped.dueMs).toBeGreaterThan(Date.parse(first.key.split('@')[1]!));
    // No two runs overlapped in time.
    await sleep(6000);
    const ev = readEvents(events);
    const spans = ev.filter((e) => e.event === 'start').map((s) => [s.at, ev.find((e) => e.event === 'end' && e.key === s.key)?.at ?? Infinity] as const);
    spans.sort((a, b) => a[0] - b[0]);
    for (let i = 1; i < spans.length; i++) expect(spans[i]![0]).toBeGreaterThanOrEqual(spans[i - 1]![1]);
  });

  it('Replace: a newer occurrence aborts the run on another replica, which records it replaced, then starts', async () => {
    flock = await Flock.start();
    const events = join(flock.dir, 'events.jsonl');
    let dueMs = Math.ceil(Date.now() / 1000) * 1000 + 5000;
    // Both due times must fall in the same minute (one cron line: "S1,S2 M H * * *").
    if (new Date(dueMs).getUTCSeconds() > 54) dueMs += (60 - new Date(dueMs).getUTCSeconds()) * 1000;
    const file = flock.writeSchedules(`schedules:
  - name: rp
    cron: "${new Date(dueMs).getUTCSeconds()},${new Date(dueMs).getUTCSeconds() + 4} ${new Date(dueMs).getUTCMinutes()} ${new Date(dueMs).getUTCHours()} * * *"
    concurrencyPolicy: Replace
    job: { kind: module, path: ${SLOW}, params: { ms: 30000, events: ${events} } }
`);
    await flock.startReplica({ name: 'r1', schedules: file, args: ['--concurrency', '1'] });
    await until(() => readEvents(events).some((e) => e.event === 'start'), 15_000, 'first run');
    await flock.startReplica({ name: 'r2', schedules: file });
    await until(() => readEvents(events).filter((e) => e.event === 'start').length >= 2, 20_000, 'second run');
    const ev = readEvents(events);
    const [a, b] = ev.filter((e) => e.event === 'start');
    expect(a!.replica).toBe('r1');
    expect(b!.replica).toBe('r2');
    const abort = ev.find((e) => e.event === 'abort' && e.key === a!.key)!;
    expect(abort).toBeDefined();
    expect(b!.at).toBeGreaterThanOrEqual(abort.at);
    const old = (await flock.runs('rp')).find((r) => r.key === a!.key)!;
    expect(old).toMatchObject({ state: 'failed', reason: 'replaced' });
    expect(old.error).toBe(`replaced by ${b!.key} (concurrencyPolicy Replace)`);
  });

  it('suspend and resume are obeyed by every replica; onResume latest runs the latest missed occurrence once', async () => {
    flock = await Flock.start();
    const file = flock.writeSchedules(`schedules:
  - { name: sr, cron: "* * * * * *", job: { kind: http, url: ${flock.receiver.url}/s } }
`);
    for (const n of ['r1', 'r2', 'r3']) await flock.startReplica({ name: n, schedules: file });
    await sleep(2000);
    expect(cli(flock, ['suspend', 'sr']).status).toBe(0);
    const suspendedAt = Date.now();
    await sleep(5000);
    const resumeAskedAt = Date.now(); // the CLI takes a while to start; the suspension ends inside it
    const res = cli(flock, ['resume', 'sr']);
    expect(res.status, res.stderr).toBe(0);
    const resumedAt = Date.now();
    const ran = (JSON.parse(res.stdout) as { ran?: string }).ran!;
    expect(ran).toMatch(/^sr@.*~resume$/);
    await sleep(3000);
    const runs = await flock.runs('sr');
    const during = runs.filter((r) => r.fireMs > suspendedAt + 1000 && r.fireMs < resumeAskedAt && r.manual === false);
    expect(during.length).toBeGreaterThanOrEqual(3);
    for (const r of during) expect(r).toMatchObject({ state: 'skipped', reason: 'suspended' });
    const delivered = flock.receiver.of('sr').map((d) => d.body.occurrence);
    for (const r of during) expect(delivered).not.toContain(r.key);
    expect(delivered.filter((k) => k === ran)).toHaveLength(1);
    const skipped = runs.filter((r) => r.state === 'skipped' && r.reason === 'suspended' && !r.manual);
    expect(ran.replace('~resume', '')).toBe(skipped.sort((a, b) => b.dueMs - a.dueMs)[0]!.key);
    expect(runs.filter((r) => r.fireMs > resumedAt + 1000 && r.state === 'succeeded').length).toBeGreaterThanOrEqual(1);
  });

  it('trigger runs a manual occurrence; backfill runs a past range oldest first, skipping what already ran', async () => {
    flock = await Flock.start();
    const file = flock.writeSchedules(`schedules:
  - name: hourly
    cron: "0 * * * *"
    concurrencyPolicy: Forbid
    job: { kind: http, url: ${flock.receiver.url}/h }
`);
    for (const n of ['r1', 'r2']) await flock.startReplica({ name: n, schedules: file });
    const t = cli(flock, ['trigger', 'hourly']);
    expect(t.status, t.stderr).toBe(0);
    const key = (JSON.parse(t.stdout) as { occurrence: string }).occurrence;
    await until(() => flock.receiver.of('hourly').some((d) => d.body.occurrence === key), 10_000, 'manual run');
    const manual = flock.receiver.of('hourly').find((d) => d.body.occurrence === key)!.body;
    expect(manual.manual).toBe(true);
    // A manual due time is a whole millisecond, like every due time (a backup names its archive after it).
    expect(Number.isInteger(Date.parse(manual.dueAt)) && key.endsWith(`${manual.dueAt}~manual`)).toBe(true);
    const [rec] = (await flock.runs('hourly')).filter((r) => r.key === key);
    expect(Number.isInteger(rec!.dueMs), `dueMs ${rec!.dueMs}`).toBe(true);
    const unknown = cli(flock, ['trigger', 'nope']);
    expect(unknown.status).toBe(2);
    expect(unknown.stderr).toContain('no replica runs a schedule named "nope"; known schedules: hourly');

    const hour = 3_600_000;
    const base = Math.floor(Date.now() / hour) * hour - 5 * hour;
    const from = new Date(base).toISOString();
    const first = cli(flock, ['backfill', 'hourly', '--from', from, '--to', new Date(base + hour).toISOString()]);
    expect(first.status, first.stderr).toBe(0);
    expect((JSON.parse(first.stdout) as { enqueued: string[] }).enqueued).toHaveLength(2);
    await until(() => flock.receiver.of('hourly').length >= 3, 10_000, 'first backfill');
    const second = cli(flock, ['backfill', 'hourly', '--from', from, '--to', new Date(base + 3 * hour).toISOString()]);
    const r = JSON.parse(second.stdout) as { enqueued: string[]; existing: string[] };
    expect(r.existing).toHaveLength(2);
    expect(r.enqueued).toHaveLength(2);
    await until(() => flock.receiver.of('hourly').length >= 5, 15_000, 'second backfill');
    await sleep(500);
    const dues = flock.receiver.of('hourly').filter((d) => !d.body.manual || !d.body.occurrence.includes('~')).map((d) => Date.parse(d.body.dueAt));
    const backfilled = dues.filter((d) => d < Date.now() - hour);
    expect(backfilled).toEqual([base, base + hour, base + 2 * hour, base + 3 * hour]); // each once, oldest first
  });

  it('trigger says how its occurrence starts: running, or skipped under Forbid while a run is in progress (exit 1)', async () => {
    flock = await Flock.start();
    flock.receiver.holdMs.set('/slow', 8000);
    const file = flock.writeSchedules(`schedules:
  - name: slow
    cron: "0 0 1 1 *"
    concurrencyPolicy: Forbid
    job: { kind: http, url: ${flock.receiver.url}/slow, timeout: 30s }
`);
    await flock.startReplica({ name: 'r1', schedules: file });
    const first = cli(flock, ['trigger', 'slow']);
    expect(first.status, first.stderr).toBe(0);
    expect(JSON.parse(first.stdout)).toMatchObject({ state: 'running' });
    const second = spawnSync(process.execPath, [BIN, 'trigger', 'slow', '--redis', flock.redis.url], { cwd: ROOT, encoding: 'utf8', timeout: 30_000 });
    expect(second.status, second.stderr).toBe(1); // it printed "triggered" and exited 0 while the run was skipped
    expect(second.stdout).toMatch(/^slow@\S+~manual was queued but not run: skipped \(.+\); follow it with: cronflock runs --schedule slow\n$/);
    expect(second.stdout).not.toMatch(/^triggered/);
  });

  it('times a run out (its signal fires, recorded failed: timeout) and retries failures with backoff', async () => {
    flock = await Flock.start();
    flock.receiver.holdMs.set('to', 5000);
    flock.receiver.failFirst.set('rt', 2);
    const dueMs = Math.ceil(Date.now() / 1000) * 1000 + 4000;
    const file = flock.writeSchedules(`schedules:
  - name: to
    cron: "${cronAt(dueMs)}"
    timeout: 700ms
    job: { kind: http, url: ${flock.receiver.url}/to, timeout: 30s }
  - name: rt
    cron: "${cronAt(dueMs)}"
    retries: 3
    retryBackoff: 400ms
    job: { kind: http, url: ${flock.receiver.url}/rt }
`);
    for (const n of ['r1', 'r2']) await flock.startReplica({ name: n, schedules: file });
    await until(async () => (await flock.runs('rt'))[0]?.state === 'succeeded', 20_000, 'retried success');
    await until(async () => (await flock.runs('to'))[0]?.state === 'failed', 10_000, 'timeout');
    const [to] = await flock.runs('to');
    expect(to).toMatchObject({ state: 'failed', reason: 'timeout', error: 'timed out after 700 ms', attempt: 1 });
    expect(flock.receiver.of('to')[0]!.abortedMs).toBeDefined();
    const [rt] = await flock.runs('rt');
    expect(rt).toMatchObject({ state: 'succeeded', attempt: 3 });
    const calls = flock.receiver.of('rt').map((d) => d.receivedMs);
    expect(calls).toHaveLength(3);
    expect(calls[1]! - calls[0]!).toBeGreaterThanOrEqual(200 - 50); // 400 ms × jitter in [0.5, 1)
    expect(calls[2]! - calls[1]!).toBeGreaterThanOrEqual(400 - 50); // doubled
  });
});
