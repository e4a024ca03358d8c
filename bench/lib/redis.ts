/**
 * A private redis-server for one benchmark run (runner/redis/server-process.ts), registered for cleanup so that
 * a crashed driver leaves no server behind. It listens on a port the OS picked; since another process could take
 * that port between the pick and the server's start, the server answering there is checked to be the process
 * started (its `process_id`), and its `run_id` is kept so that every measurement can check it again.
 */
import { Redis } from 'ioredis';
import { RedisServerProcess } from '../../runner/redis/server-process.js';
import { trackPid, untrackPid } from './procs.js';

export class BenchRedis {
  private constructor(
    readonly server: RedisServerProcess,
    private id: string,
  ) {}

  /**
   * Starts a server with AOF (`appendOnly`, default true: what the README asks of production) and `args`.
   * @throws when the server answering on its port is not the process started
   */
  static async start(o: { appendOnly?: boolean; args?: string[] } = {}): Promise<BenchRedis> {
    const server = await RedisServerProcess.start({ appendOnly: o.appendOnly ?? true, args: o.args ?? [] });
    trackPid(server.pid);
    try {
      return new BenchRedis(server, await BenchRedis.identify(server));
    } catch (err) {
      const pid = server.pid;
      await server.cleanup();
      untrackPid(pid);
      throw err;
    }
  }

  /** The `run_id` of the server on `server`'s port, after checking its `process_id` is `server.pid`. */
  private static async identify(server: RedisServerProcess): Promise<string> {
    const c = new Redis(server.url, { maxRetriesPerRequest: 1, lazyConnect: true });
    c.on('error', () => undefined);
    try {
      await c.connect();
      const info = await c.info('server');
      const pid = Number(/^process_id:(\d+)/m.exec(info)?.[1]);
      const runId = /^run_id:(\w+)/m.exec(info)?.[1];
      if (pid !== server.pid || !runId) {
        throw new Error(`the Redis server on ${server.url} is pid ${pid}, not the redis-server the bench started (pid ${server.pid}): another process took the port`);
      }
      return runId;
    } finally {
      c.disconnect();
    }
  }

  /** `run_id` of the running server process: pass it to redisCounters() so that a measurement checks it. */
  get runId(): string {
    return this.id;
  }

  get url(): string {
    return this.server.url;
  }
  get pid(): number | undefined {
    return this.server.pid;
  }

  /** Graceful stop (SIGTERM: the AOF is flushed) or crash (SIGKILL). */
  async stop(signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
    const pid = this.server.pid;
    await this.server.stop(signal);
    untrackPid(pid);
  }

  /** Starts again on the same port and data directory; the AOF is replayed. */
  async restart(): Promise<void> {
    untrackPid(this.server.pid);
    await this.server.restart();
    trackPid(this.server.pid);
    this.id = await BenchRedis.identify(this.server);
  }

  async cleanup(): Promise<void> {
    const pid = this.server.pid;
    await this.server.cleanup();
    untrackPid(pid);
  }
}
