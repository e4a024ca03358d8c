/**
 * Replica processes for tests: the built CLI (`bin/cronflock.js start`) as a user runs it, with its JSON log
 * lines parsed, and signals (SIGKILL, SIGSTOP/SIGCONT, SIGTERM) sent to the real process.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const BIN = `${ROOT}bin/cronflock.js`;
const SKEW = fileURLToPath(new URL('./skew-clock.mjs', import.meta.url));
/**
 * Debian's libfaketime (package `libfaketime`; `.ci/run` installs it), for this machine's architecture: its
 * thread-safe build `libfaketimeMT.so.1`. Node calls the wall clock from several threads, and the plain build
 * parses the timestamp file in a static buffer that another thread may overwrite between two reads
 * (wolfcw/libfaketime#547): a replica stepped back by an hour once read the clock an hour *ahead* (CI).
 */
export function libfaketime(): string {
  const dirs = readdirSync('/usr/lib', { withFileTypes: true }).filter((d) => d.isDirectory()).map((d) => `/usr/lib/${d.name}/faketime`);
  const found = [...dirs, '/usr/lib/faketime'].map((d) => `${d}/libfaketimeMT.so.1`).find((f) => existsSync(f));
  if (!found) throw new Error('libfaketime is not installed (Debian/Ubuntu: apt-get install libfaketime; .ci/run does it)');
  return found;
}

const ADMIN_LISTENING = 'admin server listening (/metrics, /healthz, /readyz)';

/** A parsed log line of a replica. */
export type LogLine = Record<string, unknown> & { msg?: string; replica?: string };

/** Options of a replica process. */
export interface ReplicaProcessOptions {
  name: string;
  /** Schedule file or directory; '' for none (Schedules from the cluster only). */
  schedules: string;
  redisUrl: string;
  /** Extra CLI flags, e.g. ['--lock', '1s']. */
  args?: string[];
  /** Host clock offset to simulate (ms). */
  clockOffsetMs?: number;
  /**
   * A libfaketime timestamp file (e.g. `+0`; see fake-clock.ts): the process's wall clock (Date.now(), new
   * Date()) follows the offset written in it, re-read at every call; its monotonic clock (performance.now(),
   * timers) does not, as on a host whose clock is stepped.
   */
  faketimeFile?: string;
  namespace?: string;
  /** What start() waits for: the replica running (default), its admin server listening, or nothing. */
  waitFor?: 'running' | 'admin' | 'nothing';
  /** How long start() waits (default 30 s). */
  startTimeoutMs?: number;
  /** Extra environment variables. */
  env?: NodeJS.ProcessEnv;
}

/** A running replica process. */
export class ReplicaProcess {
  readonly lines: LogLine[] = [];
  readonly stderr: string[] = [];
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;

  private constructor(
    readonly name: string,
    readonly child: ChildProcess,
  ) {
    let buf = '';
    child.stdout!.on('data', (b: Buffer) => {
      buf += b.toString();
      let i;
      while ((i = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 1);
        try {
          this.lines.push(JSON.parse(line) as LogLine);
        } catch {
          this.lines.push({ msg: line });
        }
      }
    });
    child.stderr!.on('data', (b: Buffer) => this.stderr.push(b.toString()));
    this.exited = new Promise((r) => child.once('exit', (code, signal) => r({ code, signal })));
  }

  /** Spawns `cronflock start` and waits until it logs "replica running" (see {@link ReplicaProcessOptions.waitFor}). */
  static async start(o: ReplicaProcessOptions): Promise<ReplicaProcess> {
    const env: NodeJS.ProcessEnv = { ...process.env, CRONFLOCK_LOG_LEVEL: 'info', ...o.env };
    delete env.REDIS_URL;
    const nodeArgs: string[] = [];
    if (o.clockOffsetMs) {
      nodeArgs.push('--import', SKEW);
      env.CRONFLOCK_TEST_CLOCK_OFFSET_MS = String(o.clockOffsetMs);
    }
    if (o.faketimeFile) {
      env.LD_PRELOAD = libfaketime();
      env.FAKETIME_TIMESTAMP_FILE = o.faketimeFile;
      env.FAKETIME_NO_CACHE = '1';
      env.FAKETIME_DONT_FAKE_MONOTONIC = '1';
    }
    const args = [...nodeArgs, BIN, 'start', ...(o.schedules ? [o.schedules] : []), '--redis', o.redisUrl, '--replica', o.name, '--admin', '127.0.0.1:0', ...(o.args ?? [])];
    if (o.namespace) args.push('--namespace', o.namespace);
    const child = spawn(process.execPath, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    const r = new ReplicaProcess(o.name, child);
    const waitFor = o.waitFor ?? 'running';
    if (waitFor === 'running') await r.waitForLog((l) => l.msg === 'replica running', o.startTimeoutMs ?? 30_000, 'replica start');
    if (waitFor === 'admin') await r.waitForLog((l) => l.msg === ADMIN_LISTENING, o.startTimeoutMs ?? 30_000, 'admin server');
    return r;
  }

  get pid(): number {
    return this.child.pid!;
  }

  /** Base URL (http://host:port) of the replica's admin server, from its log. */
  get adminUrl(): string {
    const l = this.lines.find((x) => x.msg === ADMIN_LISTENING);
    if (!l) throw new Error(`replica ${this.name} has no admin server`);
    return String(l.admin);
  }

  /** Sends a signal to the process. */
  signal(sig: NodeJS.Signals): void {
    this.child.kill(sig);
  }

  /** Waits for a log line matching `pred` (lines already seen count). */
  async waitForLog(pred: (l: LogLine) => boolean, timeoutMs: number, what = 'log line'): Promise<LogLine> {
    const end = Date.now() + timeoutMs;
    for (;;) {
      const hit = this.lines.find(pred);
      if (hit) return hit;
      if (this.child.exitCode !== null) {
        throw new Error(`replica ${this.name} exited (${this.child.exitCode}) waiting for ${what}: ${this.stderr.join('')}`);
      }
      if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what} from ${this.name}`);
      await new Promise((r) => setTimeout(r, 25));
    }
  }

  /** Log lines with a given message. */
  logs(msg: string): LogLine[] {
    return this.lines.filter((l) => l.msg === msg);
  }

  /** SIGTERM and wait for the exit (SIGKILL after `timeoutMs`). */
  async stop(timeoutMs = 20_000): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    this.signal('SIGCONT');
    this.signal('SIGTERM');
    const t = setTimeout(() => this.signal('SIGKILL'), timeoutMs);
    await this.exited;
    clearTimeout(t);
  }
}

/** Stops every replica (used in afterEach/afterAll). */
export async function stopAll(rs: Iterable<ReplicaProcess | undefined>): Promise<void> {
  await Promise.all([...rs].map((r) => r?.stop()));
}
