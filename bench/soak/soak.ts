/**
 * The chaos soak: five replica processes, an external HTTP receiver, random bounded faults, and an audit of every
 * occurrence against the run records, the receiver and the replicas' own logs.
 *
 * Faults (one at a time, each bounded, in a shuffled rotation so that every kind occurs):
 * - `kill`   SIGKILL a replica, restart it 0.2–1.5 s later;
 * - `stop`   SIGSTOP a replica for 1.5 × lock + 0.5–3 s (past its lease and the stall check), then SIGCONT;
 * - `redis`  stop Redis (SIGTERM: AOF flushed; SIGKILL with `redisCrash`), keep it down 0.5–3 s, restart it on the
 *            same AOF;
 * - `clock`  SIGTERM a replica (graceful hand-over) and restart it with another host clock offset (±3 s) through
 *            test/support/skew-clock.mjs; replicas start with offsets −3 s … +3 s already;
 * - `slow`   for 1–2.5 s the receiver holds every answer past the jobs' timeout. Besides, `slow-*` schedules are
 *            held past their timeout always, and `long-*` schedules run 1.5 × lock (their lease is renewed).
 *
 * Definitions used by the audit (the window: due times in [auditFrom, auditTo], all replicas healthy after it):
 * - **duplicate**, any of:
 *   - *two successes*: more than one claimant had its `succeeded` completion accepted (the replicas log every
 *     accepted completion, "run finished");
 *   - *the same fencing token delivered twice*;
 *   - *two live claimants at once*: deliveries d1, d2 of one occurrence with tokens t1 < t2 such that d1's call was
 *     still open at the receiver after d2's claim began (d2.startedAt, Redis clock) and d1's replica process was
 *     running (neither stopped by SIGSTOP nor dead) for more than `epsilonMs` of that overlap. A stale claimant that
 *     was frozen when the new claim began and closes its call (its AbortSignal fired) as soon as it runs again is
 *     not live; its call reaching the receiver before the new claim is an at-least-once re-run, counted apart
 *     (`reRuns`), never a duplicate, because no lease can make a call that already left undone.
 * - **miss**: an expected occurrence (derived independently from the cron expressions) with no run record, or
 *   whose record is still open (scheduled/running) after the settle period.
 * - **unaccounted**: an occurrence that does not have exactly one final state consistent with what happened:
 *   a record or delivery the cron did not produce (phantom); more than one final transition in the replicas'
 *   logs, or one that disagrees with the record; a `succeeded` record without a 2xx delivery carrying its token;
 *   a `missed`/`skipped` record that was delivered; a delivery without a record; events that arrived after their
 *   occurrence was audited (long soaks audit as they go).
 * Recorded `missed` (e.g. catch-up after a Redis outage) and `failed` (timeouts, stalls) are final states: they
 * are counted and shown with their reasons, not misses.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { Keyspace } from '../../runner/redis/keys.js';
import { listRuns, toRunRecord, type RunRecord } from '../../runner/records/runs.js';
import { parseDurationMs } from '../../runner/time/duration.js';
import { killAndWait, ReplicaProc, trackPid, untrackPid } from '../lib/procs.js';
import { BenchRedis } from '../lib/redis.js';
import { DIST_BENCH, pct, pick, shuffle, sleep, uniform } from '../lib/util.js';
import type { DeliveryRecord } from './receiver.js';

export type FaultKind = 'kill' | 'stop' | 'redis' | 'clock' | 'slow';
export const FAULT_KINDS: readonly FaultKind[] = ['kill', 'stop', 'redis', 'clock', 'slow'];

export interface SoakOptions {
  /** Total length of the soak, setup excluded (warm-up + faults + settle). */
  minutes: number;
  replicas?: number;
  /** Schedules firing every second (1 s jitter window). */
  ticks?: number;
  /** Schedules every 5 s whose calls are held 1.5 × lock (their lease must be renewed). */
  longs?: number;
  /** Schedules every 5 s whose calls are held past their 500 ms timeout (they fail). */
  slows?: number;
  /** `--lock` of the replicas (default: the engine's default, 4s). */
  lock?: string;
  faults?: readonly FaultKind[];
  /** Pause between faults, ms. */
  gapMs?: [number, number];
  /** Tolerance for a stale claimant's call staying open while its process runs (see the definitions). */
  epsilonMs?: number;
  /** Stop Redis with SIGKILL instead of SIGTERM (Redis then runs with `appendfsync always`). */
  redisCrash?: boolean;
  /** Longest wait after the faults for every occurrence of the window to be final. */
  settleMaxMs?: number;
  /** Audit occurrences this long after their due time while the soak runs (bounds memory on long soaks). */
  auditLagMs?: number;
  /** Progress lines. */
  log?: (line: string) => void;
}

export interface SoakReport {
  options: Required<Omit<SoakOptions, 'log' | 'lock'>> & { lock: string };
  startedAt: string;
  wallMs: number;
  windowMs: number;
  faults: Record<string, number>;
  redisDownMs: number;
  replicaStarts: number;
  crashes: { replica: string; code: number | null; signal: string | null; stderr: string }[];
  expected: number;
  states: Record<string, number>;
  reasons: Record<string, number>;
  deliveries: { total: number; ok: number; refused409: number; aborted: number; otherStatus: number };
  reRuns: number;
  staleOverlaps: number;
  maxLiveOverlapMs: number;
  liveOverlapP99Ms: number;
  latenessMs: { p50: number; p99: number; max: number };
  duplicates: { twoSuccesses: number; liveClaimants: number; sameToken: number; total: number };
  misses: { noRecord: number; open: number; total: number };
  unaccounted: {
    phantom: number;
    twoFinalStates: number;
    disagree: number;
    successWithoutDelivery: number;
    ranButNotRun: number;
    ranWithoutRecord: number;
    lateEvents: number;
    total: number;
  };
  /** Up to 20 offending occurrences with what was seen of them. */
  examples: string[];
}

/** A final transition a replica logged for an occurrence. */
export interface LogFinal {
  state: string;
  token?: number;
  replica: string;
}

/** Due time (ms) of an occurrence key `<schedule>@<ISO>`. */
export function dueOfKey(key: string): number {
  return Date.parse(key.slice(key.lastIndexOf('@') + 1));
}

/** Problems the audit can find with one occurrence; each belongs to duplicates, misses or unaccounted. */
export type Problem =
  | 'twoSuccesses'
  | 'liveClaimants'
  | 'sameToken'
  | 'noRecord'
  | 'open'
  | 'twoFinalStates'
  | 'disagree'
  | 'successWithoutDelivery'
  | 'ranButNotRun'
  | 'ranWithoutRecord';

/** What the audit knows of one occurrence. */
export interface JudgeInput {
  key: string;
  rec: RunRecord | null;
  deliveries: readonly DeliveryRecord[];
  finals: readonly LogFinal[];
  /** SIGSTOP→SIGCONT intervals of a replica (name), driver clock; an open one ends at Infinity. */
  frozen: (replica: string) => readonly (readonly [number, number])[];
  epsilonMs: number;
  /** End of observation: open calls and open freezes end here. */
  endMs: number;
}

export interface Verdict {
  problems: Problem[];
  /** More than one fencing token reached the receiver: a re-run after a lost claim. */
  reRun: boolean;
  /** For each stale call still open when a newer claim began: how long its process ran during the overlap. */
  liveOverlapsMs: number[];
}

/** Time in [a, b) during which `replica` was not frozen. */
function liveTime(frozen: readonly (readonly [number, number])[], a: number, b: number, endMs: number): number {
  if (b <= a) return 0;
  let t = b - a;
  for (const [s, e] of frozen) {
    const lo = Math.max(a, s);
    const hi = Math.min(b, e === Infinity ? endMs : e);
    if (hi > lo) t -= hi - lo;
  }
  return Math.max(0, t);
}

/** The audit of one occurrence (definitions at the top of this file). Pure. */
export function judge(i: JudgeInput): Verdict {
  const problems: Problem[] = [];
  const ds = [...i.deliveries].sort((a, b) => a.token - b.token || a.receivedMs - b.receivedMs);
  const tokens = new Set(ds.map((d) => d.token));
  if (tokens.size < ds.length) problems.push('sameToken');
  const liveOverlapsMs: number[] = [];
  let live = false;
  for (let x = 0; x < ds.length; x++) {
    for (let y = x + 1; y < ds.length; y++) {
      const older = ds[x]!;
      const newer = ds[y]!;
      if (older.token >= newer.token) continue;
      const closed = older.closedMs ?? i.endMs;
      if (closed <= newer.startedMs) continue;
      const l = liveTime(i.frozen(older.replica), newer.startedMs, closed, i.endMs);
      liveOverlapsMs.push(l);
      if (l > i.epsilonMs) live = true;
    }
  }
  if (live) problems.push('liveClaimants');
  const successes = i.finals.filter((f) => f.state === 'succeeded' || f.state === 'late-accepted');
  if (successes.length > 1) problems.push('twoSuccesses');
  else if (i.finals.length > 1) problems.push('twoFinalStates');
  const rec = i.rec;
  if (rec === null) {
    if (ds.length > 0) problems.push('ranWithoutRecord');
    problems.push('noRecord');
  } else if (rec.state === 'scheduled' || rec.state === 'running' || rec.state === 'retrying') {
    problems.push('open');
  } else {
    const f = i.finals[0];
    if (i.finals.length === 1 && f!.state !== 'late-accepted' && f!.state !== rec.state) problems.push('disagree');
    if (rec.state === 'succeeded' && !ds.some((d) => d.token === rec.fencingToken && d.how === 'answered' && d.status === 200)) {
      problems.push('successWithoutDelivery');
    }
    if ((rec.state === 'missed' || rec.state === 'skipped') && ds.length > 0) problems.push('ranButNotRun');
  }
  return { problems, reRun: tokens.size > 1, liveOverlapsMs };
}

/** One line describing an occurrence for a report (times relative to its due time). */
export function describe(key: string, rec: RunRecord | null, ds: readonly DeliveryRecord[], fs: readonly LogFinal[]): string {
  const due = dueOfKey(key);
  const r = rec
    ? `${rec.state} token ${rec.fencingToken} attempt ${rec.attempt} stalls ${rec.stalls} refused ${rec.refused}${rec.reason ? ` (${rec.reason})` : ''}`
    : 'none';
  const d = ds
    .map(
      (x) =>
        `[t${x.token} ${x.replica} claim +${x.startedMs - due} recv +${x.receivedMs - due} ${x.how}${x.status ? ` ${x.status}` : ''} close ${x.closedMs === undefined ? '-' : `+${x.closedMs - due}`}]`,
    )
    .join(' ');
  return `${key}: record ${r}; deliveries ${d || 'none'}; logged finals ${JSON.stringify(fs)}`;
}

interface ScheduleSpec {
  name: string;
  periodS: number;
}

interface ReplicaSlot {
  name: string;
  offsetMs: number;
  proc: ReplicaProc | undefined;
  /** [SIGSTOP, SIGCONT] intervals (driver clock). */
  frozen: [number, number][];
}

const OFFSETS = [-3000, -1500, 0, 1500, 3000];

/** Runs the soak; always cleans up every process it started. */
export async function runSoak(opts: SoakOptions): Promise<SoakReport> {
  const o = {
    minutes: opts.minutes,
    replicas: opts.replicas ?? 5,
    ticks: opts.ticks ?? 100,
    longs: opts.longs ?? 10,
    slows: opts.slows ?? 4,
    lock: opts.lock ?? '4s',
    faults: opts.faults ?? FAULT_KINDS,
    gapMs: opts.gapMs ?? ([1000, 3000] as [number, number]),
    epsilonMs: opts.epsilonMs ?? 250,
    redisCrash: opts.redisCrash ?? false,
    settleMaxMs: opts.settleMaxMs ?? 60_000,
    auditLagMs: opts.auditLagMs ?? 120_000,
  };
  const log = opts.log ?? (() => undefined);
  const lockMs = parseDurationMs(o.lock);
  const holdMs = Math.round(lockMs * 1.5);
  const tickTimeoutMs = 2000;
  const keys = new Keyspace();
  const t0 = Date.now();
  const dir = mkdtempSync(join(tmpdir(), 'cronflock-soak-'));

  let redis: BenchRedis | undefined;
  let client: Redis | undefined;
  let receiver: ChildProcess | undefined;
  const slots: ReplicaSlot[] = [];
  const crashes: SoakReport['crashes'] = [];
  const faults: Record<string, number> = {};
  let redisDownMs = 0;
  let replicaStarts = 0;
  let stopping = false;

  // What we learn, per occurrence key, until it is audited.
  const deliveries = new Map<string, DeliveryRecord[]>();
  const finals = new Map<string, LogFinal[]>();
  const deferred = new Set<string>();
  let auditFrom = Infinity; // first due time of the window
  let auditedTo = 0; // due times in [auditFrom, auditedTo) are audited (except deferred keys)
  let lateEvents = 0;
  const examples: string[] = [];
  const isLate = (key: string): boolean => {
    if (auditedTo === 0) return false;
    const due = dueOfKey(key);
    return due >= auditFrom && due < auditedTo && !deferred.has(key);
  };

  const onDeliveries = (items: DeliveryRecord[]): void => {
    for (const d of items) {
      if (isLate(d.occurrence)) {
        lateEvents++;
        note(`late delivery ${d.occurrence} token ${d.token} from ${d.replica} (${d.how})`);
        continue;
      }
      // A flush reports open requests; their final record replaces it if it comes later.
      const list = deliveries.get(d.occurrence) ?? [];
      const same = list.findIndex((x) => x.token === d.token && x.replica === d.replica && x.receivedMs === d.receivedMs);
      if (same >= 0) list[same] = d;
      else list.push(d);
      deliveries.set(d.occurrence, list);
    }
  };

  const onLine = (replica: string) => (line: string): void => {
    // Only the lines that record a final state; cheap test before parsing.
    if (!line.includes('"run finished"') && !line.includes('"late completion accepted"') && !line.includes('"delivery closed without a run"')) return;
    let l: Record<string, unknown>;
    try {
      l = JSON.parse(line) as Record<string, unknown>;
    } catch {
      return;
    }
    const key = String(l.occurrence ?? '');
    if (!key) return;
    let f: LogFinal | undefined;
    if (l.msg === 'run finished') f = { state: String(l.state), token: Number(l.fencingToken), replica };
    else if (l.msg === 'late completion accepted') f = { state: 'late-accepted', token: Number(l.fencingToken), replica };
    else if (l.msg === 'delivery closed without a run' && (l.outcome === 'missed' || l.outcome === 'stalled-out')) {
      f = { state: l.outcome === 'missed' ? 'missed' : 'failed', replica };
    }
    if (!f) return;
    if (isLate(key)) {
      lateEvents++;
      note(`late final ${key}: ${JSON.stringify(f)}`);
      return;
    }
    const list = finals.get(key) ?? [];
    list.push(f);
    finals.set(key, list);
  };

  function note(s: string): void {
    if (examples.length < 20) examples.push(s);
  }

  // ---- schedules --------------------------------------------------------------------------------------
  const specs: ScheduleSpec[] = [];
  let port = 0;
  const scheduleYaml = (): string => {
    const url = `http://127.0.0.1:${port}`;
    let y = 'schedules:\n';
    for (let i = 0; i < o.ticks; i++) {
      const name = `tick-${String(i).padStart(4, '0')}`;
      specs.push({ name, periodS: 1 });
      y += `  - {name: ${name}, cron: "* * * * * *", jitter: 999ms, job: {kind: http, url: "${url}/fast", timeout: ${tickTimeoutMs}ms}}\n`;
    }
    for (let i = 0; i < o.longs; i++) {
      const name = `long-${String(i).padStart(3, '0')}`;
      specs.push({ name, periodS: 5 });
      y += `  - {name: ${name}, cron: "*/5 * * * * *", jitter: 4s, job: {kind: http, url: "${url}/hold?ms=${holdMs}", timeout: ${holdMs + 10_000}ms}}\n`;
    }
    for (let i = 0; i < o.slows; i++) {
      const name = `slow-${String(i).padStart(3, '0')}`;
      specs.push({ name, periodS: 5 });
      y += `  - {name: ${name}, cron: "*/5 * * * * *", jitter: 4s, job: {kind: http, url: "${url}/hold?ms=2000", timeout: 500ms}}\n`;
    }
    return y;
  };
  /** Expected occurrence keys with due times in [from, to). Independent of the engine: plain arithmetic. */
  const expectedKeys = (from: number, to: number): string[] => {
    const out: string[] = [];
    for (const s of specs) {
      const p = s.periodS * 1000;
      for (let d = Math.ceil(from / p) * p; d < to; d += p) out.push(`${s.name}@${new Date(d).toISOString()}`);
    }
    return out;
  };

  // ---- replicas ---------------------------------------------------------------------------------------
  let file = '';
  const replicaArgs = ['--lock', o.lock, '--grace', '1s'];
  const startSlot = async (slot: ReplicaSlot): Promise<void> => {
    for (let attempt = 1; ; attempt++) {
      try {
        const proc = await ReplicaProc.start({
          name: slot.name,
          schedules: file,
          redisUrl: redis!.url,
          args: replicaArgs,
          logLevel: 'info',
          clockOffsetMs: slot.offsetMs,
          onLine: onLine(slot.name),
          readyTimeoutMs: 60_000,
        });
        replicaStarts++;
        slot.proc = proc;
        void proc.exited.then((e) => {
          if (!proc.expectedExit && !stopping) {
            crashes.push({ replica: slot.name, code: e.code, signal: e.signal, stderr: proc.stderrTail.slice(-2000) });
            log(`replica ${slot.name} exited unexpectedly (${e.code ?? e.signal}): ${proc.stderrTail.slice(-500)}`);
          }
        });
        return;
      } catch (err) {
        if (attempt >= 3) throw err;
        log(`replica ${slot.name} failed to start (${(err as Error).message}); retrying`);
        await sleep(1000);
      }
    }
  };
  /** Restarts replicas that died on their own and resumes stopped ones. */
  const heal = async (): Promise<void> => {
    for (const s of slots) {
      const f = s.frozen[s.frozen.length - 1];
      if (f && f[1] === Infinity) {
        s.proc?.signal('SIGCONT');
        f[1] = Date.now();
      }
      if (!s.proc?.alive) await startSlot(s);
    }
  };

  // ---- faults -----------------------------------------------------------------------------------------
  const running = (): ReplicaSlot[] => slots.filter((s) => s.proc?.alive);
  const inject = async (kind: FaultKind): Promise<string> => {
    faults[kind] = (faults[kind] ?? 0) + 1;
    switch (kind) {
      case 'kill': {
        const s = pick(running());
        await s.proc!.kill();
        const down = uniform(200, 1500);
        await sleep(down);
        await startSlot(s);
        return `SIGKILL ${s.name}, restarted after ${down.toFixed(0)} ms`;
      }
      case 'stop': {
        const s = pick(running());
        // Past the lease and past BullMQ's stall check, so that another replica re-claims while it is frozen.
        const ms = lockMs * 1.5 + uniform(500, 3000);
        const iv: [number, number] = [Date.now(), Infinity];
        s.frozen.push(iv);
        s.proc!.signal('SIGSTOP');
        await sleep(ms);
        s.proc!.signal('SIGCONT');
        iv[1] = Date.now();
        return `SIGSTOP ${s.name} for ${ms.toFixed(0)} ms`;
      }
      case 'redis': {
        const down = uniform(500, 3000);
        const t = Date.now();
        await redis!.stop(o.redisCrash ? 'SIGKILL' : 'SIGTERM');
        await sleep(down);
        await redis!.restart();
        redisDownMs += Date.now() - t;
        return `Redis ${o.redisCrash ? 'SIGKILL' : 'SIGTERM'}, restarted on its AOF after ${(Date.now() - t).toFixed(0)} ms`;
      }
      case 'clock': {
        const s = pick(running());
        await s.proc!.stop(15_000);
        const before = s.offsetMs;
        s.offsetMs = pick(OFFSETS.filter((x) => x !== before));
        await startSlot(s);
        return `SIGTERM ${s.name}, restarted with clock offset ${s.offsetMs} ms (was ${before})`;
      }
      case 'slow': {
        const forMs = uniform(1000, 2500);
        receiver!.send({ type: 'holdAll', ms: tickTimeoutMs + 1000, untilMs: Date.now() + forMs });
        await sleep(forMs + tickTimeoutMs);
        return `receiver held every answer ${tickTimeoutMs + 1000} ms (timeout ${tickTimeoutMs} ms) for ${forMs.toFixed(0)} ms`;
      }
    }
  };

  // ---- audit ------------------------------------------------------------------------------------------
  const states: Record<string, number> = {};
  const reasons: Record<string, number> = {};
  const lateness: number[] = [];
  const dv = { total: 0, ok: 0, refused409: 0, aborted: 0, otherStatus: 0 };
  const dup = { twoSuccesses: 0, liveClaimants: 0, sameToken: 0 };
  const miss = { noRecord: 0, open: 0 };
  const un = { phantom: 0, twoFinalStates: 0, disagree: 0, successWithoutDelivery: 0, ranButNotRun: 0, ranWithoutRecord: 0 };
  let expected = 0;
  let reRuns = 0;
  let staleOverlaps = 0;
  const liveOverlaps: number[] = [];
  let endMs = 0;

  /** Frozen intervals per replica name, for the audit. */
  const frozen = (replica: string): [number, number][] => slots.find((x) => x.name === replica)?.frozen ?? [];

  const fetchRecords = async (ks: string[]): Promise<Map<string, RunRecord | null>> => {
    const out = new Map<string, RunRecord | null>();
    for (let i = 0; i < ks.length; i += 2000) {
      const chunk = ks.slice(i, i + 2000);
      const pipe = client!.pipeline();
      for (const k of chunk) pipe.hgetall(keys.occurrence(k));
      const res = (await pipe.exec()) ?? [];
      res.forEach(([err, h], j) => {
        if (err) throw err;
        out.set(chunk[j]!, toRunRecord(h as Record<string, string>));
      });
    }
    return out;
  };

  /**
   * Audits the expected occurrences due in [from, to) plus the deferred ones. With `final` false, open ones are
   * deferred to a later round; with `final` true they are misses.
   */
  const audit = async (from: number, to: number, final: boolean): Promise<void> => {
    const exp = new Set(expectedKeys(from, to));
    // Records and deliveries the cron did not produce (phantoms), inside the same window.
    const listed = to > from ? await listRuns(client!, keys, { fromMs: from, toMs: to - 1, limit: 1_000_000 }) : [];
    for (const r of listed) {
      if (!exp.has(r.key) && !deferred.has(r.key)) {
        un.phantom++;
        note(`phantom record ${r.key} (${r.state})`);
      }
    }
    for (const k of deliveries.keys()) {
      const d = dueOfKey(k);
      if (d >= from && d < to && !exp.has(k) && !deferred.has(k)) {
        un.phantom++;
        note(`phantom delivery ${k}`);
        deliveries.delete(k);
      }
    }
    const todo = [...exp, ...deferred];
    const recs = await fetchRecords(todo);
    for (const key of todo) {
      const rec = recs.get(key) ?? null;
      const ds = (deliveries.get(key) ?? []).sort((a, b) => a.token - b.token || a.receivedMs - b.receivedMs);
      const fs = finals.get(key) ?? [];
      const open = rec !== null && (rec.state === 'scheduled' || rec.state === 'running' || rec.state === 'retrying');
      if (!final && (open || (rec === null && ds.length === 0))) {
        // Not final yet (or not even planned, under a fault): look again later.
        deferred.add(key);
        continue;
      }
      deferred.delete(key);
      deliveries.delete(key);
      finals.delete(key);
      expected++;
      const v = judge({ key, rec, deliveries: ds, finals: fs, frozen, epsilonMs: o.epsilonMs, endMs });
      for (const d of ds) {
        dv.total++;
        if (d.how === 'aborted') dv.aborted++;
        else if (d.status === 409) dv.refused409++;
        else if (d.status !== undefined && d.status >= 200 && d.status < 300) dv.ok++;
        else if (d.how === 'answered') dv.otherStatus++;
      }
      if (v.reRun) reRuns++;
      staleOverlaps += v.liveOverlapsMs.length;
      liveOverlaps.push(...v.liveOverlapsMs);
      if (rec) {
        states[rec.state] = (states[rec.state] ?? 0) + 1;
        if (rec.reason || rec.error) {
          const r = `${rec.state}: ${(rec.reason ?? '').replace(/\d+/g, 'N')}${rec.error ? ` — ${rec.error.replace(/\d+/g, 'N')}` : ''}`;
          reasons[r] = (reasons[r] ?? 0) + 1;
        }
        if (rec.latenessMs !== undefined) lateness.push(rec.latenessMs);
      }
      for (const p of v.problems) {
        if (p in dup) dup[p as keyof typeof dup]++;
        else if (p in miss) miss[p as keyof typeof miss]++;
        else un[p as keyof typeof un]++;
      }
      if (v.problems.length > 0) note(`${v.problems.join(', ')}: ${describe(key, rec, ds, fs)}`);
    }
  };

  // ---- run --------------------------------------------------------------------------------------------
  try {
    redis = await BenchRedis.start({ args: o.redisCrash ? ['--appendfsync', 'always'] : [] });
    client = new Redis(redis.url, { maxRetriesPerRequest: 3, lazyConnect: false });
    client.on('error', () => undefined);
    receiver = fork(join(DIST_BENCH, 'soak/receiver.js'), [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    trackPid(receiver.pid);
    const flushed: (() => void)[] = [];
    receiver.on('message', (m: { type: string; port?: number; items?: DeliveryRecord[] }) => {
      if (m.type === 'port') port = m.port!;
      else if (m.type === 'deliveries') onDeliveries(m.items!);
      else if (m.type === 'flushed') flushed.splice(0).forEach((f) => f());
    });
    while (port === 0) {
      if (receiver.exitCode !== null) throw new Error('receiver exited');
      await sleep(20);
    }
    file = join(dir, 'soak.yaml');
    writeFileSync(file, scheduleYaml());
    for (let i = 0; i < o.replicas; i++) {
      slots.push({ name: `r${i + 1}`, offsetMs: OFFSETS[i % OFFSETS.length]!, proc: undefined, frozen: [] });
    }
    await Promise.all(slots.map((s) => startSlot(s)));
    const setupMs = Date.now() - t0;
    const totalMs = o.minutes * 60_000;
    const warmMs = 5000;
    const settleMinMs = Math.max(2 * lockMs, 5000) + holdMs + 5000;
    auditFrom = Math.ceil((Date.now() + 2000) / 1000) * 1000;
    const faultsFrom = Date.now() + warmMs;
    const faultsEnd = t0 + setupMs + totalMs - settleMinMs;
    log(
      `soak: ${o.replicas} replicas (lock ${o.lock}), ${o.ticks} × every 1 s, ${o.longs} long + ${o.slows} slow × every 5 s (≈ ${(o.ticks + (o.longs + o.slows) / 5).toFixed(0)} occurrences/s); setup ${setupMs} ms; faults until +${((faultsEnd - t0) / 1000).toFixed(0)} s`,
    );
    await sleep(Math.max(0, faultsFrom - Date.now()));

    // Faults, one at a time, while auditing behind.
    let bag: FaultKind[] = [];
    let lastAudit = Date.now();
    let n = 0;
    while (Date.now() < faultsEnd && o.faults.length > 0) {
      await heal();
      if (bag.length === 0) bag = shuffle([...o.faults]);
      const kind = bag.pop()!;
      const what = await inject(kind);
      n++;
      log(`  fault ${n} at +${((Date.now() - t0) / 1000).toFixed(1)} s: ${what}`);
      await sleep(uniform(o.gapMs[0], o.gapMs[1]));
      if (Date.now() - lastAudit > 30_000) {
        lastAudit = Date.now();
        const to = Math.floor((Date.now() - o.auditLagMs) / 1000) * 1000;
        const from = auditedTo || auditFrom;
        if (to > from) {
          try {
            await audit(from, to, false);
            auditedTo = to;
            log(`  audited up to ${new Date(to).toISOString()}: ${expected} occurrences, ${deferred.size} deferred`);
          } catch (err) {
            log(`  audit round skipped: ${(err as Error).message}`);
          }
        }
      }
    }
    if (o.faults.length === 0) await sleep(Math.max(0, faultsEnd - Date.now()));
    const auditTo = Math.floor(Math.min(Date.now(), faultsEnd + 1000) / 1000) * 1000;
    await heal();
    log(`faults over at +${((Date.now() - t0) / 1000).toFixed(0)} s; settling (window ${new Date(auditFrom).toISOString()} … ${new Date(auditTo).toISOString()})`);

    // Settle: every occurrence of the window final, or settleMax.
    const settleStart = Date.now();
    const from = auditedTo || auditFrom;
    for (;;) {
      await sleep(2000);
      if (Date.now() - settleStart < settleMinMs) continue;
      const ks = [...expectedKeys(from, auditTo + 1), ...deferred];
      const recs = await fetchRecords(ks).catch(() => undefined);
      const openN = recs ? [...recs.values()].filter((r) => !r || r.state === 'scheduled' || r.state === 'running' || r.state === 'retrying').length : -1;
      if (openN === 0 || Date.now() - settleStart > o.settleMaxMs) break;
    }
    stopping = true;
    await Promise.all(slots.map((s) => s.proc?.stop(15_000)));
    await new Promise<void>((r) => {
      flushed.push(r);
      receiver!.send({ type: 'flush' });
    });
    endMs = Date.now();
    await audit(from, auditTo + 1, true);
    const l = liveOverlaps;
    return {
      options: { ...o, faults: [...o.faults] },
      startedAt: new Date(t0).toISOString(),
      wallMs: Date.now() - t0,
      windowMs: auditTo + 1 - auditFrom,
      faults,
      redisDownMs,
      replicaStarts,
      crashes,
      expected,
      states,
      reasons,
      deliveries: dv,
      reRuns,
      staleOverlaps,
      maxLiveOverlapMs: l.length ? Math.max(...l) : 0,
      liveOverlapP99Ms: l.length ? pct(l, 99) : 0,
      latenessMs: { p50: pct(lateness, 50), p99: pct(lateness, 99), max: lateness.reduce((a, b) => Math.max(a, b), -Infinity) },
      duplicates: { ...dup, total: dup.twoSuccesses + dup.liveClaimants + dup.sameToken },
      misses: { ...miss, total: miss.noRecord + miss.open },
      unaccounted: {
        ...un,
        lateEvents,
        total: un.phantom + un.twoFinalStates + un.disagree + un.successWithoutDelivery + un.ranButNotRun + un.ranWithoutRecord + lateEvents,
      },
      examples,
    };
  } finally {
    stopping = true;
    await Promise.all(slots.map((s) => (s.proc ? killAndWait(s.proc.child) : undefined)));
    if (receiver && receiver.exitCode === null) {
      untrackPid(receiver.pid);
      await killAndWait(receiver);
    }
    client?.disconnect();
    await redis?.cleanup();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The report as table rows (figure, value). */
export function soakRows(r: SoakReport): [string, string][] {
  const kv = (x: Record<string, number>): string =>
    Object.entries(x)
      .sort((a, b) => b[1] - a[1])
      .map(([k, v]) => `${k} ${v}`)
      .join(', ') || '–';
  return [
    ['window audited (s) / wall (s)', `${(r.windowMs / 1000).toFixed(0)} / ${(r.wallMs / 1000).toFixed(0)}`],
    ['faults injected', kv(r.faults)],
    ['Redis down in total (ms)', String(r.redisDownMs)],
    ['replica starts / unexpected exits', `${r.replicaStarts} / ${r.crashes.length}`],
    ['occurrences audited', String(r.expected)],
    ['final states', kv(r.states)],
    ['reasons', kv(r.reasons)],
    ['deliveries: total / 2xx / refused 409 (stale token) / aborted by caller', `${r.deliveries.total} / ${r.deliveries.ok} / ${r.deliveries.refused409} / ${r.deliveries.aborted}`],
    ['occurrences delivered with more than one token (re-runs after a lost claim)', String(r.reRuns)],
    ['stale calls still open when the next claim began / longest while running (ms) / p99', `${r.staleOverlaps} / ${r.maxLiveOverlapMs} / ${r.liveOverlapP99Ms}`],
    ['start lateness after fire p50 / p99 / max (ms)', `${r.latenessMs.p50} / ${r.latenessMs.p99} / ${r.latenessMs.max}`],
    ['**duplicates** (two successes / two live claimants / same token twice)', `**${r.duplicates.total}** (${r.duplicates.twoSuccesses} / ${r.duplicates.liveClaimants} / ${r.duplicates.sameToken})`],
    ['**misses** (no record / still open)', `**${r.misses.total}** (${r.misses.noRecord} / ${r.misses.open})`],
    [
      '**unaccounted** (phantom / two finals / log≠record / success w/o delivery / delivered but missed / no record / late events)',
      `**${r.unaccounted.total}** (${r.unaccounted.phantom} / ${r.unaccounted.twoFinalStates} / ${r.unaccounted.disagree} / ${r.unaccounted.successWithoutDelivery} / ${r.unaccounted.ranButNotRun} / ${r.unaccounted.ranWithoutRecord} / ${r.unaccounted.lateEvents})`,
    ],
  ];
}
