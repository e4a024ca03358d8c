/**
 * A `redis-server` child process on a free loopback port with its own data directory. Used by `cronflock start`
 * when no Redis URL is given (a private server for trying cronflock out), by the demo, and by the tests, which
 * need to stop, kill and restart a real server.
 *
 * A private server must never outlive the process that started it, and must be the last thing to stop:
 * - it runs in its own process group, so the terminal's Ctrl-C (SIGINT to the foreground group) reaches its
 *   parent only, which stops its replicas first and the server last;
 * - a watchdog (`sh`, reading a pipe from the parent) sends it SIGTERM when that pipe closes, which happens
 *   however the parent ends, SIGKILL included.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { sleep } from '../time/wait.js';

/** Options of a server process. */
export interface RedisServerOptions {
  /** Port; a free one when omitted. */
  port?: number;
  /** Data directory; a new temporary one when omitted (removed by {@link RedisServerProcess.cleanup}). */
  dir?: string;
  /** AOF persistence (default true): a restart keeps the flock's state. */
  appendOnly?: boolean;
  /** Extra `redis-server` arguments, e.g. `['--hz', '100']`. */
  args?: string[];
}

/** Thrown when `redis-server` is not installed. */
export class RedisServerMissingError extends Error {
  readonly code = 'REDIS_SERVER_MISSING';
  constructor() {
    super(
      'redis-server is not on PATH. Install Redis 7 (Debian/Ubuntu: `apt-get install redis-server`; macOS: `brew install redis`) ' +
        'or point cronflock at a running server with REDIS_URL=redis://host:6379 or --redis.',
    );
    this.name = 'RedisServerMissingError';
  }
}

/** True when a `redis-server` binary can be run. */
export function redisServerAvailable(): boolean {
  const r = spawnSync('redis-server', ['--version'], { stdio: 'ignore' });
  return r.status === 0;
}

/** A free TCP port on 127.0.0.1 (the OS picks it; a small race with other processes is accepted). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

/**
 * The watchdog: blocks reading its stdin (a pipe whose write end only the parent holds) until end of file,
 * then stops the server ($1). End of file comes when the parent exits, however it exits. SIGCONT too, so that
 * a stopped server acts on the SIGTERM.
 */
const WATCHDOG_SH = 'while read -r _; do :; done; kill -TERM "$1" 2>/dev/null; kill -CONT "$1" 2>/dev/null';

/** How long {@link RedisServerProcess.stop} waits for the exit after its signal before it sends SIGKILL. */
const STOP_TIMEOUT_MS = 10_000;

/** A running (or stopped) `redis-server` process. */
export class RedisServerProcess {
  private child: ChildProcess | undefined;
  private watchdog: ChildProcess | undefined;
  private ownsDir: boolean;
  readonly dir: string;

  private constructor(
    readonly port: number,
    dir: string | undefined,
    private readonly opts: RedisServerOptions,
  ) {
    this.ownsDir = dir === undefined;
    this.dir = dir ?? mkdtempSync(join(tmpdir(), 'cronflock-redis-'));
  }

  /** Starts a server and waits until it answers PING. @throws RedisServerMissingError */
  static async start(opts: RedisServerOptions = {}): Promise<RedisServerProcess> {
    if (!redisServerAvailable()) throw new RedisServerMissingError();
    const s = new RedisServerProcess(opts.port ?? (await freePort()), opts.dir, opts);
    await s.spawn();
    return s;
  }

  /** `redis://127.0.0.1:<port>`. */
  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  /** PID of the running server, if any. */
  get pid(): number | undefined {
    return this.child?.exitCode === null ? this.child.pid : undefined;
  }

  private async spawn(): Promise<void> {
    const args = [
      '--port', String(this.port),
      '--bind', '127.0.0.1',
      '--dir', this.dir,
      '--save', '',
      '--appendonly', this.opts.appendOnly === false ? 'no' : 'yes',
      '--maxmemory-policy', 'noeviction',
      '--protected-mode', 'yes',
      ...(this.opts.args ?? []),
    ];
    // Its own process group: a terminal's SIGINT must not stop Redis before the replicas that use it.
    const child = spawn('redis-server', args, { stdio: ['ignore', 'ignore', 'pipe'], detached: true });
    this.child = child;
    this.startWatchdog(child);
    let stderr = '';
    child.stderr?.on('data', (b: Buffer) => (stderr += b.toString()));
    const deadline = Date.now() + 15_000;
    for (;;) {
      if (child.exitCode !== null) throw new Error(`redis-server exited with ${child.exitCode}: ${stderr.trim()}`);
      const c = new Redis({ port: this.port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
      c.on('error', () => undefined);
      try {
        await c.connect();
        // While the AOF loads, PING answers -LOADING: wait until the data is there.
        if ((await c.ping()) === 'PONG') return;
      } catch {
        /* not up yet */
      } finally {
        c.disconnect();
      }
      if (Date.now() > deadline) throw new Error(`redis-server on port ${this.port} did not start: ${stderr.trim()}`);
      await sleep(50);
    }
  }

  /** Starts the watchdog that stops `child` when this process ends (see {@link WATCHDOG_SH}). */
  private startWatchdog(child: ChildProcess): void {
    if (child.pid === undefined) return; // spawn failed; the start loop reports it
    const dog = spawn('sh', ['-c', WATCHDOG_SH, 'cronflock-redis-watchdog', String(child.pid)], {
      stdio: ['pipe', 'ignore', 'ignore'],
      detached: true, // not in the terminal's group either: a Ctrl-C must not take the watchdog away
    });
    dog.on('error', () => undefined); // no sh: the server is still stopped by stop() and at exit
    // Neither the watchdog nor its pipe keeps this process alive.
    dog.unref();
    (dog.stdin as unknown as { unref?: () => void } | null)?.unref?.();
    this.watchdog = dog;
    child.once('exit', () => this.stopWatchdog(dog));
  }

  private stopWatchdog(dog: ChildProcess | undefined): void {
    if (!dog || dog.exitCode !== null || dog.signalCode !== null) return;
    dog.kill('SIGKILL');
  }

  /**
   * Stops the server with `signal` (SIGTERM: graceful, AOF flushed; SIGKILL: crash) and waits for the exit;
   * sends SIGKILL when it has not exited within 10 s (a hung server must not hang its parent's shutdown).
   */
  async stop(signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill(signal);
    if (signal !== 'SIGSTOP' && signal !== 'SIGKILL') child.kill('SIGCONT'); // a stopped server must see it
    const timer = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS);
    await exited;
    clearTimeout(timer);
  }

  /**
   * Sends SIGTERM now, without waiting: for a process that is about to exit (a forced exit, an 'exit' handler).
   * The server still writes its AOF and exits on its own.
   */
  stopNow(): void {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    child.kill('SIGCONT');
  }

  /** Starts the server again on the same port and data directory (AOF replayed). */
  async restart(): Promise<void> {
    await this.stop();
    await this.spawn();
  }

  /** Stops the server and removes a temporary data directory. */
  async cleanup(): Promise<void> {
    await this.stop();
    if (this.ownsDir) rmSync(this.dir, { recursive: true, force: true });
  }
}
