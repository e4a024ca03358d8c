/**
 * Module jobs with real processes: `cronflock validate` refuses modules that never load, loop or exit, with
 * file:line:col and in bounded time; a running replica whose directory receives such modules keeps reloading its
 * other files and keeps answering /healthz; an attempt's process never outlives the lease its replica can prove (a
 * stopped replica's job ends at the lease end, before another replica re-claims) and ends with its replica
 * and its memory is bounded without touching the replica's.
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Flock, sleep, until } from '../support/flock.js';
import { cronAt, readEvents } from '../support/events.js';
import { Keyspace } from '../../runner/redis/keys.js';
import { BIN, ROOT } from '../support/replica.js';

const MODULES = `${ROOT}test/fixtures/modules`;
const SLOW = `${ROOT}test/fixtures/jobs/slow.mjs`;

/** Runs the CLI to the end; resolves with its exit code, output and duration. */
function cli(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string; ms: number }> {
  return new Promise((resolve) => {
    const t0 = Date.now();
    const child = spawn(process.execPath, [BIN, ...args], { cwd: ROOT });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (b: Buffer) => (stdout += b.toString()));
    child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
    const kill = setTimeout(() => child.kill('SIGKILL'), 120_000);
    child.on('exit', (code) => {
      clearTimeout(kill);
      resolve({ code, stdout, stderr, ms: Date.now() - t0 });
    });
  });
}

/** A process's peak resident memory in MiB (VmHWM from /proc). */
function peakRssMb(pid: number): number {
  const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(m![1]) / 1024;
}

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** Whether a process runs (exists and is no zombie), from /proc. */
const running = (pid: number): boolean => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.charAt(stat.lastIndexOf(')') + 2) !== 'Z';
  } catch {
    return false;
  }
};

/** "<pid> <ms> <fencing token> <replica>" lines written by test/fixtures/modules/ticks.mjs. */
const ticks = (file: string): { pid: number; at: number; token: number; replica: string }[] =>
  existsSync(file)
    ? readFileSync(file, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => {
          const [pid, at, token, replica] = l.split(' ');
          return { pid: Number(pid), at: Number(at), token: Number(token), replica: replica! };
        })
    : [];

describe('module jobs in real processes', () => {
  let flock: Flock;
  afterEach(() => flock?.close());

  it('validate refuses a module that never settles, loops forever or calls process.exit(), each at file:line:col, in bounded time', async () => {
    flock = await Flock.start();
    const write = (name: string, module: string): string =>
      flock.writeSchedules(`schedules:\n  - name: ${name}\n    cron: "@daily"\n    job: { kind: module, path: ${MODULES}/${module}, loadTimeout: 3s }\n`, `${name}.yaml`);
    const files = { hang: write('hang', 'never-settles.mjs'), loop: write('loop', 'loops.mjs'), exit: write('exit', 'exits.mjs') };
    const r = await cli(['validate', flock.dir]);
    expect(r.code).toBe(1);
    expect(r.stdout).toContain('0 schedules valid, 3 file(s) refused');
    const at = (file: string): string => `${file}:4:32: schedules[0].job.path: module ${MODULES}/`;
    expect(r.stderr).toContain(`${at(files.hang)}never-settles.mjs: did not finish loading within 3s (loadTimeout)`);
    expect(r.stderr).toContain(`${at(files.loop)}loops.mjs: did not finish loading within 3s (loadTimeout)`);
    expect(r.stderr).toContain(`${at(files.exit)}exits.mjs: its process exited with code 5 while loading`);
    expect(r.ms).toBeLessThan(60_000);
    // One file alone: the exit code is validate's, not the module's.
    const one = await cli(['validate', files.exit]);
    expect(one.code).toBe(1);
    expect(one.stderr).toContain(at(files.exit));
  });

  it('start refuses to run a directory whose only module never loads, saying why, instead of exiting 0 silently', async () => {
    flock = await Flock.start();
    const file = flock.writeSchedules(`schedules:\n  - { name: hang, cron: "@daily", job: { kind: module, path: ${MODULES}/never-settles.mjs, loadTimeout: 2s } }\n`);
    const r = await cli(['start', file, '--redis', flock.redis.url, '--admin', 'off']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`schedules[0].job.path: module ${MODULES}/never-settles.mjs: did not finish loading within 2s`);
    expect(r.stderr).toMatch(new RegExp(`^${file}:2:\\d+: `, "m"));
    expect(r.stderr).toContain('no valid schedules');
  });

  it('a running replica whose directory receives such modules keeps reloading its other files and answering /healthz', async () => {
    flock = await Flock.start();
    const good = (extra: string): string =>
      flock.writeSchedules(`schedules:\n  - { name: good, cron: "* * * * * *", job: { kind: http, url: ${flock.receiver.url}/good } }\n${extra}`, 'good.yaml');
    good('');
    const r = await flock.startReplica({ name: 'h1', schedules: flock.dir });
    await until(() => flock.receiver.of('good').length >= 1, 15_000, 'the good schedule runs');
    // Poll /healthz the whole time: every answer must come, and fast.
    let polls = 0;
    const failures: string[] = [];
    let polling = true;
    const poller = (async () => {
      while (polling) {
        const t0 = Date.now();
        try {
          const res = await fetch(`${r.adminUrl}/healthz`, { signal: AbortSignal.timeout(3000) });
          if (res.status !== 200) failures.push(`status ${res.status}`);
        } catch (err) {
          failures.push(`${(err as Error).message} after ${Date.now() - t0} ms`);
        }
        polls++;
        await sleep(200);
      }
    })();
    try {
      for (const [name, module] of [['hang', 'never-settles.mjs'], ['loop', 'loops.mjs'], ['exit', 'exits.mjs']] as const) {
        flock.writeSchedules(`schedules:\n  - { name: ${name}, cron: "* * * * * *", job: { kind: module, path: ${MODULES}/${module}, loadTimeout: 2s } }\n`, `${name}.yaml`);
        await sleep(500);
      }
      await sleep(1000);
      good(`  - { name: added, cron: "* * * * * *", job: { kind: http, url: ${flock.receiver.url}/added } }\n`);
      await until(() => flock.receiver.of('added').length >= 2, 60_000, 'the schedule added after the bad modules runs');
      for (const name of ['hang', 'loop', 'exit']) {
        await r.waitForLog((l) => l.file === join(flock.dir, `${name}.yaml`) && l.line === 2 && String(l.msg).startsWith('reload refused: module '), 30_000, `${name} refused`);
      }
    } finally {
      polling = false;
      await poller;
    }
    expect(failures).toEqual([]);
    expect(polls).toBeGreaterThan(20);
    expect(r.child.exitCode).toBeNull();
    // The refused modules never ran: nothing of them was scheduled.
    expect((await flock.runs()).filter((x) => ['hang', 'loop', 'exit'].includes(x.schedule))).toEqual([]);
  });

  it('an attempt\'s process ends at its lease end while its replica is stopped: no write of the stale token after the re-claim, nothing recorded twice', async () => {
    flock = await Flock.start();
    const tickFile = join(flock.dir, 'ticks');
    const lockMs = 2000;
    const dueMs = Math.ceil(Date.now() / 1000) * 1000 + 8000;
    const file = flock.writeSchedules(`schedules:
  - { name: tick, cron: "${cronAt(dueMs)}", job: { kind: module, path: ${MODULES}/ticks.mjs, params: { ms: 8000, every: 100, file: ${tickFile} } } }
`);
    const replicas = [
      await flock.startReplica({ name: 't1', schedules: file, args: ['--lock', '2s'] }),
      await flock.startReplica({ name: 't2', schedules: file, args: ['--lock', '2s'] }),
    ];
    await until(() => ticks(tickFile).length >= 5, 20_000, 'ticks');
    const first = ticks(tickFile)[0]!;
    expect(first.token).toBe(1);
    const claimant = replicas.find((r) => r.name === first.replica)!;
    const other = replicas.find((r) => r !== claimant)!;
    expect(first.pid).not.toBe(claimant.pid);
    claimant.signal('SIGSTOP');
    const stoppedAt = Date.now();
    await until(() => ticks(tickFile).some((t) => t.token === 2), 15_000, 're-claim by the other replica');
    // The job process is gone (a zombie at most: its stopped parent cannot reap it) before the replica resumes.
    await until(() => !running(first.pid), 5_000, 'the stale job process ends');
    expect(running(first.pid)).toBe(false);
    await sleep(1000);
    const stale = ticks(tickFile).filter((t) => t.token === 1);
    const fresh = ticks(tickFile).filter((t) => t.token === 2);
    const lastStale = Math.max(...stale.map((t) => t.at));
    const firstFresh = Math.min(...fresh.map((t) => t.at));
    expect(fresh.every((t) => t.replica === other.name)).toBe(true);
    // Never two live attempts: the stale token's last write comes before the new token's first.
    expect(lastStale).toBeLessThan(firstFresh);
    // …and no later than the lease end: the last renewal was sent before the SIGSTOP, so the lease ends by
    // stoppedAt + lockMs. Margin 150 ms: the test's own reading of the clock around the signal, and file writes.
    expect(lastStale).toBeLessThanOrEqual(stoppedAt + lockMs + 150);
    const contAt = Date.now();
    claimant.signal('SIGCONT');
    await claimant.waitForLog((l) => l.msg === 'claim lost; run aborted' || String(l.msg).startsWith('completion refused'), 10_000, 'the resumed replica gives the claim up');
    await until(async () => (await flock.runs('tick'))[0]?.state === 'succeeded', 20_000, 'the re-claimed attempt succeeds');
    await sleep(500);
    expect(ticks(tickFile).filter((t) => t.token === 1 && t.at > contAt)).toEqual([]);
    const recs = await flock.runs('tick');
    expect(recs).toHaveLength(1);
    expect(recs[0]).toMatchObject({ state: 'succeeded', fencingToken: 2, attempt: 2, replica: other.name });
    // The resumed replica recorded nothing of its own: no 'run finished' from it.
    expect(claimant.lines.filter((l) => l.msg === 'run finished')).toEqual([]);
  });

  it('an alive replica whose Redis is paused (SIGSTOP) for less than the lease keeps its job process running, and the run succeeds', async () => {
    // The heartbeat case: the replica answers, so its job's process leaves the lease deadlines to it, even past the
    // point where a process without heartbeats fires its signal (lease end − margin − grace).
    flock = await Flock.start();
    const events = join(flock.dir, 'events.jsonl');
    const dueMs = Math.ceil(Date.now() / 1000) * 1000 + 5000;
    const file = flock.writeSchedules(`schedules:
  - { name: long, cron: "${cronAt(dueMs)}", job: { kind: module, path: ${SLOW}, params: { ms: 16000, events: ${events} } } }
`);
    // lock 9 s: renewals every 3 s; margin 500 ms, grace 1.8 s (leaseMargins), so a process without heartbeats fires
    // the signal 6.7 s after the last renewal and ends itself at 8.5 s.
    await flock.startReplica({ name: 'p1', schedules: file, args: ['--lock', '9s'] });
    await until(() => readEvents(events).some((e) => e.event === 'start'), 20_000, 'the run starts');
    // Pause Redis right after a renewal (the record's leaseUntil moves), so the pause's position in the lease is known.
    const rec = new Keyspace().occurrence(`long@${new Date(dueMs).toISOString()}`);
    const lease0 = await flock.redisClient.hget(rec, 'leaseUntil');
    await until(async () => (await flock.redisClient.hget(rec, 'leaseUntil')) !== lease0, 10_000, 'a renewal');
    const redisPid = flock.redis.pid!;
    process.kill(redisPid, 'SIGSTOP');
    const pausedAt = Date.now();
    try {
      await sleep(7500); // past 6.7 s (the signal without heartbeats), before 8.5 s (the kill), under the 9 s lease
    } finally {
      process.kill(redisPid, 'SIGCONT');
    }
    const resumedAt = Date.now();
    expect(resumedAt - pausedAt).toBeLessThan(8300);
    await until(async () => ['succeeded', 'failed'].includes((await flock.runs('long'))[0]?.state ?? ''), 30_000, 'the run ends');
    const [run] = await flock.runs('long');
    expect(run).toMatchObject({ state: 'succeeded', fencingToken: 1, attempt: 1 });
    const evs = readEvents(events);
    expect(evs.filter((e) => e.event === 'abort')).toEqual([]); // its signal never fired
    expect(evs.filter((e) => e.event === 'start')).toHaveLength(1);
    expect(evs.filter((e) => e.event === 'end')).toHaveLength(1);
  });

  it('an attempt\'s process ends when its replica is killed', async () => {
    flock = await Flock.start();
    const tickFile = join(flock.dir, 'ticks');
    const file = flock.writeSchedules(`schedules:
  - { name: tick, cron: "* * * * * *", concurrencyPolicy: Forbid, job: { kind: module, path: ${MODULES}/ticks.mjs, params: { ms: 60000, file: ${tickFile} } } }
`);
    const r = await flock.startReplica({ name: 't1', schedules: file, args: ['--lock', '10s'] });
    await until(() => ticks(tickFile).length >= 5, 20_000, 'ticks');
    const jobPid = ticks(tickFile)[0]!.pid;
    expect(jobPid).not.toBe(r.pid);
    r.signal('SIGKILL');
    const killedAt = Date.now();
    await r.exited;
    await until(() => !alive(jobPid), 3_000, 'the job process ends with its replica');
    await sleep(500);
    expect(ticks(tickFile).filter((t) => t.at > killedAt + 500)).toEqual([]);
  });

  it('bounds an attempt\'s memory, Buffers included, without touching the replica\'s; isolation: thread bounds the heap', async () => {
    flock = await Flock.start();
    const file = flock.writeSchedules(`schedules:
  - { name: hoard, cron: "* * * * * *", concurrencyPolicy: Forbid, job: { kind: module, path: ${MODULES}/hoards.mjs, memoryLimitMb: 512, params: { mb: 3000, holdMs: 1000 } } }
  - { name: hog, cron: "*/2 * * * * *", concurrencyPolicy: Forbid, job: { kind: module, path: ${MODULES}/heap-hog.mjs, isolation: thread, memoryLimitMb: 256 } }
  - { name: echo, cron: "* * * * * *", job: { kind: module, path: ${MODULES}/echo.mjs, isolation: thread, params: { n: 1 } } }
`);
    const r = await flock.startReplica({ name: 'b1', schedules: file });
    await until(async () => (await flock.runs('hoard')).filter((x) => x.state === 'failed').length >= 2, 60_000, 'hoard attempts fail');
    await until(async () => (await flock.runs('hog')).some((x) => x.state === 'failed'), 60_000, 'hog attempt fails');
    await until(async () => (await flock.runs('echo')).some((x) => x.state === 'succeeded'), 30_000, 'echo runs in a thread');
    for (const x of (await flock.runs('hoard')).filter((y) => y.state === 'failed')) {
      // V8's words for a refused allocation differ: Node 20 'Array buffer allocation failed', Node 24 'Failed to allocate memory'.
      expect(x.error).toMatch(/(Array buffer allocation failed|Failed to allocate memory).*\(memoryLimitMb: 512 reached\)|ran out of memory \(memoryLimitMb: 512\)/);
    }
    expect((await flock.runs('hoard')).filter((x) => x.state === 'succeeded')).toEqual([]);
    expect((await flock.runs('hog')).find((x) => x.state === 'failed')!.error).toMatch(/ran out of memory \(memoryLimitMb: 256, V8 heap\)/);
    expect(JSON.parse((await flock.runs('echo')).find((x) => x.state === 'succeeded')!.result!)).toMatchObject({ params: { n: 1 }, replica: 'b1' });
    expect(r.child.exitCode).toBeNull();
    expect(peakRssMb(r.pid)).toBeLessThan(600); // a job of 3 GB of Buffers once took a replica to 3.2 GB RSS
  });
});
