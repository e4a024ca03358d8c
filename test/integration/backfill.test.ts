/**
 * Work asked for after the fact — backfill, triggers, catch-up runs after downtime — never delays live
 * occurrences (issue 12, part 8), on real Redis and real replica processes: a live schedule with a short
 * starting deadline misses nothing beside a backfill of 400 occurrences, 10 long triggered runs or 100 catch-up
 * runs; backfill is paced flock-wide; `suspend` pauses a schedule's backfill and `resume` continues it;
 * `backfill --cancel` drops what has not started; `--dry-run` and a refused large range write nothing.
 */
import { spawn, spawnSync } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import type { Delivery } from '../support/receiver.js';
import { Flock, sleep, until } from '../support/flock.js';
import { sumMetric } from '../support/metrics.js';
import { BIN, ROOT, type ReplicaProcess } from '../support/replica.js';
import type { RunRecord } from '../../runner/records/runs.js';

const SECOND = 1000;

function cli(flock: Flock, args: string[]): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [BIN, ...args, '--redis', flock.redis.url, '--json'], { cwd: ROOT, encoding: 'utf8', timeout: 60_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** {@link cli}, without waiting: several commands at once. */
function cliAsync(flock: Flock, args: string[]): Promise<{ status: number | null; stderr: string }> {
  const child = spawn(process.execPath, [BIN, ...args, '--redis', flock.redis.url, '--json'], { cwd: ROOT, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
  return new Promise((resolve) => child.once('exit', (status) => resolve({ status, stderr })));
}

const iso = (ms: number): string => new Date(ms).toISOString();

/** A backfill delivery: manual, and not a trigger or resume run (their keys carry `~manual`/`~resume`). */
const isBackfill = (d: Delivery): boolean => d.body.manual && !d.body.occurrence.includes('~');

/** The run records of a schedule's backfill occurrences. */
async function backfillRuns(flock: Flock, schedule: string): Promise<RunRecord[]> {
  return (await flock.runs(schedule)).filter((r) => r.origin === 'backfill');
}

/** Most deliveries whose calls were open at the same instant (from arrival to answer at the receiver). */
function maxOverlap(ds: readonly Delivery[]): number {
  const edges = ds.flatMap((d) => [
    [d.receivedMs, 1],
    [d.answeredMs ?? Infinity, -1],
  ] as const);
  edges.sort((a, b) => a[0] - b[0] || a[1] - b[1]); // an answer before an arrival at the same ms
  let open = 0;
  let most = 0;
  for (const [, step] of edges) most = Math.max(most, (open += step));
  return most;
}

/**
 * Checks that every due time of the per-second schedule `name` in [fromMs, toMs] (host clock, which is the
 * Redis server's here) has a record, succeeded, and started less than `maxLateMs` after its fire time.
 * @returns the largest lateness seen (ms).
 */
async function expectLiveOnTime(flock: Flock, name: string, fromMs: number, toMs: number, maxLateMs: number): Promise<number> {
  const runs = (await flock.runs(name)).filter((r) => r.origin === 'schedule' && r.dueMs >= fromMs && r.dueMs <= toMs);
  const byDue = new Map(runs.map((r) => [r.dueMs, r]));
  let worst = 0;
  for (let d = Math.ceil(fromMs / SECOND) * SECOND; d <= toMs; d += SECOND) {
    const r = byDue.get(d);
    expect(r, `${name}@${iso(d)} has a record`).toBeDefined();
    expect(r!.state, `${r!.key}: ${r!.reason ?? ''}`).toBe('succeeded');
    expect(r!.latenessMs, r!.key).toBeLessThan(maxLateMs);
    worst = Math.max(worst, r!.latenessMs!);
  }
  return worst;
}

/** The value of `cronflock_backfill_occurrences` for a schedule and state on a replica (0 when absent). */
async function backfillGauge(r: ReplicaProcess, schedule: string, state: string): Promise<number> {
  const text = await (await fetch(`${r.adminUrl}/metrics`)).text();
  return sumMetric([text], 'cronflock_backfill_occurrences', { schedule, state });
}

describe('backfill beside live schedules', () => {
  let flock: Flock;
  afterEach(() => flock?.close());

  it('a backfill of 400 occurrences on 2 replicas: the live schedule misses nothing and starts on time; each backfill occurrence runs once, oldest first, one at a time', async () => {
    flock = await Flock.start();
    const file = flock.writeSchedules(`schedules:
  - { name: live, cron: "* * * * * *", startingDeadline: 2s, job: { kind: http, url: ${flock.receiver.url}/live } }
  - { name: bf, cron: "* * * * * *", concurrencyPolicy: Forbid, job: { kind: http, url: ${flock.receiver.url}/bf } }
`);
    // 2 × 50 worker slots for live occurrences: the 400 backfill occurrences outnumber them 4 to 1.
    for (const n of ['r1', 'r2']) await flock.startReplica({ name: n, schedules: file, args: ['--concurrency', '50'] });
    await sleep(1500);
    const to = Math.floor(Date.now() / SECOND) * SECOND - 20 * SECOND;
    const from = to - 399 * SECOND;
    const b = cli(flock, ['backfill', 'bf', '--from', iso(from), '--to', iso(to), '--yes']);
    expect(b.status, b.stderr).toBe(0);
    expect(JSON.parse(b.stdout)).toMatchObject({ dryRun: false, count: 400, firstDueAt: iso(from), lastDueAt: iso(to) });
    const t0 = Date.now();
    await sleep(12_000);
    const worst = await expectLiveOnTime(flock, 'live', t0, t0 + 10_000, 1500);
    // The backfill went on meanwhile (it is paced, not stopped), and completes.
    expect(flock.receiver.of('bf').filter(isBackfill).length).toBeGreaterThan(10);
    await until(async () => (await backfillRuns(flock, 'bf')).every((r) => r.state === 'succeeded'), 180_000, 'the whole backfill');
    expect(await backfillRuns(flock, 'bf')).toHaveLength(400);
    const delivered = flock.receiver.of('bf').filter(isBackfill);
    const dues = delivered.map((d) => Date.parse(d.body.dueAt));
    expect(new Set(dues).size).toBe(400);
    expect(dues).toHaveLength(400); // each once
    expect(dues).toEqual([...dues].sort((x, y) => x - y)); // oldest first
    expect(maxOverlap(delivered)).toBe(1); // Forbid: one at a time
    const spanMs = delivered.at(-1)!.receivedMs - delivered[0]!.receivedMs;
    console.log(`live lateness during a 400-occurrence backfill on 2 replicas: at most ${worst} ms; the backfill (Forbid) took ${spanMs} ms`);
  });

  it('backfill runs at most --backfill-concurrency at once across the flock (Allow)', async () => {
    flock = await Flock.start();
    flock.receiver.holdFor = (body) => (body.manual ? 400 : undefined);
    const file = flock.writeSchedules(`schedules:
  - { name: al, cron: "* * * * * *", job: { kind: http, url: ${flock.receiver.url}/al } }
`);
    for (const n of ['r1', 'r2']) await flock.startReplica({ name: n, schedules: file, args: ['--backfill-concurrency', '3'] });
    const to = Math.floor(Date.now() / SECOND) * SECOND - 10 * SECOND;
    const b = cli(flock, ['backfill', 'al', '--from', iso(to - 29 * SECOND), '--to', iso(to)]);
    expect(b.status, b.stderr).toBe(0);
    await until(() => flock.receiver.of('al').filter((d) => isBackfill(d) && d.answeredMs !== undefined).length === 30, 60_000, 'the backfill');
    const delivered = flock.receiver.of('al').filter(isBackfill);
    expect(maxOverlap(delivered)).toBeLessThanOrEqual(3);
    expect(maxOverlap(delivered)).toBeGreaterThanOrEqual(2); // Allow: side by side, up to the cap
    expect(new Set(delivered.map((d) => d.body.replica)).size).toBe(2); // any replica runs them
  });

  it('suspend pauses a backfill (nothing of it starts), resume continues it, --cancel drops what has not started', async () => {
    flock = await Flock.start();
    flock.receiver.holdFor = (body) => (body.manual ? 150 : undefined);
    const file = flock.writeSchedules(`schedules:
  - { name: sp, cron: "* * * * * *", concurrencyPolicy: Forbid, job: { kind: http, url: ${flock.receiver.url}/sp } }
`);
    const [r1] = [await flock.startReplica({ name: 'r1', schedules: file }), await flock.startReplica({ name: 'r2', schedules: file })];
    const to = Math.floor(Date.now() / SECOND) * SECOND - 21 * SECOND;
    const b = cli(flock, ['backfill', 'sp', '--from', iso(to - 59 * SECOND), '--to', iso(to)]);
    expect(b.status, b.stderr).toBe(0);
    await until(() => flock.receiver.of('sp').filter(isBackfill).length >= 5, 30_000, 'the backfill to start');

    const s = cli(flock, ['suspend', 'sp']);
    const suspendedAt = Date.now();
    expect(s.status, s.stderr).toBe(0);
    expect((JSON.parse(s.stdout) as { backfillWaiting: number }).backfillWaiting).toBeGreaterThan(0);
    await sleep(3000);
    let runs = await backfillRuns(flock, 'sp');
    expect(runs.filter((r) => r.firstStartMs !== undefined && r.firstStartMs > suspendedAt).map((r) => r.key)).toEqual([]);
    const waiting = runs.filter((r) => r.state === 'scheduled').length;
    expect(waiting).toBeGreaterThan(0);
    expect(await backfillGauge(r1!, 'sp', 'waiting')).toBe(waiting);
    const ready = await fetch(`${r1!.adminUrl}/readyz`);
    expect(ready.status).toBe(200); // a backlog is information, not unreadiness
    expect(((await ready.json()) as { backfill: { waiting: number } }).backfill.waiting).toBe(waiting);

    const deliveredBefore = flock.receiver.of('sp').filter(isBackfill).length;
    const res = cli(flock, ['resume', 'sp']);
    expect(res.status, res.stderr).toBe(0);
    expect((JSON.parse(res.stdout) as { backfillWaiting: number }).backfillWaiting).toBe(waiting);
    await until(() => flock.receiver.of('sp').filter(isBackfill).length >= deliveredBefore + 5, 30_000, 'the backfill to go on');

    const c = cli(flock, ['backfill', 'sp', '--cancel']);
    const cancelledAt = Date.now();
    expect(c.status, c.stderr).toBe(0);
    const cancelled = (JSON.parse(c.stdout) as { cancelled: number }).cancelled;
    expect(cancelled).toBeGreaterThan(0);
    await sleep(2000);
    runs = await backfillRuns(flock, 'sp');
    expect(runs).toHaveLength(60);
    expect(runs.filter((r) => r.firstStartMs !== undefined && r.firstStartMs > cancelledAt).map((r) => r.key)).toEqual([]);
    const skipped = runs.filter((r) => r.state === 'skipped');
    expect(skipped).toHaveLength(cancelled);
    for (const r of skipped) expect(r).toMatchObject({ reason: 'backfill cancelled', attempt: 0 });
    for (const r of runs.filter((x) => x.state !== 'skipped')) expect(r.state).toBe('succeeded');
    const delivered = flock.receiver.countByOccurrence();
    for (const r of runs) expect(delivered.get(r.key) ?? 0, r.key).toBe(r.state === 'succeeded' ? 1 : 0);
    expect(await backfillGauge(r1!, 'sp', 'waiting')).toBe(0);
  });

  it('--dry-run writes nothing; a range over 100 is refused without --yes or a large enough --max, and writes nothing', async () => {
    flock = await Flock.start();
    const file = flock.writeSchedules(`schedules:
  - { name: big, cron: "* * * * * *", job: { kind: http, url: ${flock.receiver.url}/big } }
`);
    await flock.startReplica({ name: 'r1', schedules: file });
    const to = Math.floor(Date.now() / SECOND) * SECOND - 60 * SECOND;
    const from = to - 149 * SECOND;
    const range = ['backfill', 'big', '--from', iso(from), '--to', iso(to)];
    // The backfill backlog's keys: `{ns}:bfq:<schedule>`, `{ns}:bfs`, `{ns}:bfa`.
    const backlogKeys = async () => (await flock.redisClient.keys('{cronflock}:bf*')).sort();

    const dry = cli(flock, [...range, '--dry-run']);
    expect(dry.status, dry.stderr).toBe(0);
    expect(JSON.parse(dry.stdout)).toMatchObject({ dryRun: true, count: 150, firstDueAt: iso(from), lastDueAt: iso(to), enqueued: [] });
    const refused = cli(flock, range);
    expect(refused.status).toBe(2);
    expect(refused.stderr).toContain(
      `the range holds 150 occurrences of "big" to backfill (due ${iso(from)} to ${iso(to)}), more than 100; nothing was enqueued: check it with --dry-run, then run again with --yes (or --max 150)`,
    );
    const tooFew = cli(flock, [...range, '--max', '149']);
    expect(tooFew.status).toBe(2);
    expect(tooFew.stderr).toContain('more than --max 149; nothing was enqueued');
    expect(cli(flock, ['backfill', 'big', '--from', iso(from)]).stderr).toContain('backfill needs --from and --to');
    expect(cli(flock, ['backfill', 'big', '--cancel', '--from', iso(from)]).stderr).toContain('--cancel takes only the schedule name');
    await sleep(1000);
    expect(await backfillRuns(flock, 'big')).toEqual([]);
    expect(await backlogKeys()).toEqual([]);
    expect(flock.receiver.of('big').filter(isBackfill)).toEqual([]);

    const ok = cli(flock, [...range, '--max', '150']);
    expect(ok.status, ok.stderr).toBe(0);
    expect(JSON.parse(ok.stdout)).toMatchObject({ count: 150 });
    const again = cli(flock, [...range, '--dry-run']);
    expect(JSON.parse(again.stdout)).toMatchObject({ dryRun: true, count: 0, firstDueAt: null });
    expect((JSON.parse(again.stdout) as { existing: string[] }).existing).toHaveLength(150);
  });

  it('triggers in bulk run in the backlog lane: they never take the live slots', async () => {
    flock = await Flock.start();
    flock.receiver.holdFor = (body) => (body.manual ? 4000 : undefined);
    const file = flock.writeSchedules(`schedules:
  - { name: live, cron: "* * * * * *", startingDeadline: 2s, job: { kind: http, url: ${flock.receiver.url}/live } }
  - { name: tr, cron: "0 0 1 1 *", job: { kind: http, url: ${flock.receiver.url}/tr } }
`);
    // 2 live slots; 10 triggered runs of 4 s each would hold them for 20 s.
    await flock.startReplica({ name: 'r1', schedules: file, args: ['--concurrency', '2', '--backlog-concurrency', '2'] });
    for (const r of await Promise.all(Array.from({ length: 10 }, () => cliAsync(flock, ['trigger', 'tr'])))) expect(r.status, r.stderr).toBe(0);
    const t0 = Date.now(); // all triggered
    await sleep(9000);
    const worst = await expectLiveOnTime(flock, 'live', t0, t0 + 8000, 1500);
    expect(flock.receiver.of('tr').length).toBeGreaterThanOrEqual(4);
    expect(maxOverlap(flock.receiver.of('tr'))).toBe(2); // the backlog lane's slots
    console.log(`live lateness beside 10 triggered 4-s runs: at most ${worst} ms`);
  });

  it('catch-up runs after the whole flock was down wait in the backlog lane: the live schedule misses nothing', async () => {
    flock = await Flock.start();
    let downAt = Infinity;
    let upAt = Infinity;
    // Catch-up runs take a second each; every other call is answered at once. (What the first replica had
    // planned ahead, up to lookahead + tick after the kill, is not a catch-up run: it runs late, in the live lane.)
    flock.receiver.holdFor = (body) => {
      const due = Date.parse(body.dueAt);
      return body.schedule.startsWith('cu') && due > downAt + 2 * SECOND && due < upAt - SECOND ? 1000 : undefined;
    };
    const cu = Array.from({ length: 10 }, (_, i) => `  - { name: cu${i}, cron: "* * * * * *", catchUp: all, maxCatchUpRuns: 10, job: { kind: http, url: ${flock.receiver.url}/cu } }`);
    const file = flock.writeSchedules(`schedules:
  - { name: live, cron: "* * * * * *", startingDeadline: 2s, job: { kind: http, url: ${flock.receiver.url}/live } }
${cu.join('\n')}
`);
    const args = ['--lookahead', '1s', '--tick', '200ms', '--concurrency', '10', '--backlog-concurrency', '4'];
    const before = await flock.startReplica({ name: 'before', schedules: file, args });
    await sleep(2000);
    before.signal('SIGKILL');
    downAt = Date.now();
    await before.exited;
    await sleep(12_000); // 10 overdue due times of each cu schedule are kept: 100 catch-up runs of a second each
    upAt = Date.now();
    await flock.startReplica({ name: 'after', schedules: file, args });
    await sleep(11_000);
    const worst = await expectLiveOnTime(flock, 'live', upAt + 4000, upAt + 10_000, 1500);
    const catchUpKeys = new Set(
      (await flock.runs()).filter((r) => r.schedule.startsWith('cu') && r.reason?.startsWith('catch-up: run late')).map((r) => r.key),
    );
    expect(catchUpKeys.size).toBe(100);
    const catchUps = flock.receiver.deliveries.filter((d) => catchUpKeys.has(d.body.occurrence));
    expect(catchUps.length).toBeGreaterThanOrEqual(10);
    expect(maxOverlap(catchUps)).toBeLessThanOrEqual(4); // the backlog lane's slots, not the live ones
    console.log(`live lateness beside 100 catch-up runs: at most ${worst} ms`);
  });
});

