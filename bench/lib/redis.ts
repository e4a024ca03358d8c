/**
 * A private redis-server for one benchmark run (runner/redis/server-process.ts), registered for cleanup so that
 * a crashed driver leaves no server behind.
 */
import { RedisServerProcess } from '../../runner/redis/server-process.js';
import { trackPid, untrackPid } from './procs.js';

export class BenchRedis {
  private constructor(readonly server: RedisServerProcess) {}

  /** Starts a server with AOF (`appendOnly`, default true: what the README asks of production) and `args`. */
  static async start(o: { appendOnly?: boolean; args?: string[] } = {}): Promise<BenchRedis> {
    const server = await RedisServerProcess.start({ appendOnly: o.appendOnly ?? true, args: o.args ?? [] });
    trackPid(server.pid);
    return new BenchRedis(server);
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
  }

  async cleanup(): Promise<void> {
    const pid = this.server.pid;
    await this.server.cleanup();
    untrackPid(pid);
  }
}
