/**
 * Replica processes for tests: the built CLI (`bin/cronflock.js start`) as a user runs it, with its JSON log
 * lines parsed, and signals (SIGKILL, SIGSTOP/SIGCONT, SIGTERM) sent to the real process.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const BIN = `${ROOT}bin/cronflock.js`;
const SKEW = fileURLToPath(new URL('./skew-clock.mjs', import.meta.url));

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
  namespace?: string;
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

  /** Spawns `cronflock start` and waits until it logs "replica running". */
  static async start(o: ReplicaProcessOptions): Promise<ReplicaProcess> {
    const env: NodeJS.ProcessEnv = { ...process.env, CRONFLOCK_LOG_LEVEL: 'info' };
    delete env.REDIS_URL;
    const nodeArgs: string[] = [];
    if (o.clockOffsetMs) {
      nodeArgs.push('--import', SKEW);
      env.CRONFLOCK_TEST_CLOCK_OFFSET_MS = String(o.clockOffsetMs);
    }
    const args = [...nodeArgs, BIN, 'start', ...(o.schedules ? [o.schedules] : []), '--redis', o.redisUrl, '--replica', o.name, '--admin', '127.0.0.1:0', ...(o.args ?? [])];
    if (o.namespace) args.push('--namespace', o.namespace);
    const child = spawn(process.execPath, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    const r = new ReplicaProcess(o.name, child);
    await r.waitForLog((l) => l.msg === 'replica running', 30_000, 'replica start');
    return r;
  }

  get pid(): number {
    return this.child.pid!;
  }

  /** Base URL (http://host:port) of the replica's admin server, from its log. */
  get adminUrl(): string {
    const l = this.lines.find((x) => x.msg === 'admin server listening (/metrics, /healthz, /readyz)');
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
