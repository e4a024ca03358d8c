/**
 * A real PostgreSQL server for tests: `initdb` into a temporary directory and `postgres` on a free loopback
 * port, from Debian's `postgresql` package (.ci/run installs it). PostgreSQL refuses to run as root: as root
 * (CI, these machines) the server runs as the `postgres` user the package creates, through `setpriv`, which
 * execs (the pid we stop is the server's own).
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { freePort } from '../../runner/redis/server-process.js';

/** The newest PostgreSQL's bin directory, or undefined when none is installed. */
export function postgresBinDir(): string | undefined {
  const base = '/usr/lib/postgresql';
  if (!existsSync(base)) return undefined;
  const versions = readdirSync(base).filter((v) => existsSync(join(base, v, 'bin', 'initdb'))).sort((a, b) => Number(b) - Number(a));
  return versions[0] ? join(base, versions[0], 'bin') : undefined;
}

/** A running server; {@link stop} it in afterAll. */
export class PostgresServer {
  private constructor(
    private readonly child: ChildProcess,
    private readonly dir: string,
    readonly port: number,
  ) {}

  /** Connection settings for `pg`. */
  get config(): pg.ClientConfig {
    return { host: '127.0.0.1', port: this.port, user: 'cronflock', database: 'postgres' };
  }

  static async start(): Promise<PostgresServer> {
    const bin = postgresBinDir();
    if (!bin) throw new Error('PostgreSQL is not installed: apt-get install postgresql (bash .ci/run does)');
    const dir = mkdtempSync(join(tmpdir(), 'cronflock-pg-'));
    const asRoot = process.getuid?.() === 0;
    const wrap = (cmd: string, args: string[]): [string, string[]] =>
      asRoot ? ['setpriv', ['--reuid=postgres', '--regid=postgres', '--init-groups', cmd, ...args]] : [cmd, args];
    if (asRoot) {
      const uid = Number(execFileSync('id', ['-u', 'postgres']).toString());
      const gid = Number(execFileSync('id', ['-g', 'postgres']).toString());
      chownSync(dir, uid, gid);
    }
    const data = join(dir, 'data');
    const [initCmd, initArgs] = wrap(join(bin, 'initdb'), ['-D', data, '-A', 'trust', '-U', 'cronflock', '--no-sync', '-E', 'UTF8']);
    execFileSync(initCmd, initArgs, { stdio: 'ignore' });
    const port = await freePort();
    const [cmd, args] = wrap(join(bin, 'postgres'), ['-D', data, '-p', String(port), '-k', dir, '-c', 'listen_addresses=127.0.0.1', '-c', 'fsync=off']);
    const child = spawn(cmd, args, { stdio: 'ignore' });
    const server = new PostgresServer(child, dir, port);
    const end = Date.now() + 30_000;
    for (;;) {
      const c = new pg.Client(server.config);
      try {
        await c.connect();
        await c.end();
        return server;
      } catch (err) {
        await c.end().catch(() => undefined);
        if (Date.now() > end || child.exitCode !== null) {
          await server.stop();
          throw new Error(`postgres did not start: ${(err as Error).message}`);
        }
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  }

  async stop(): Promise<void> {
    if (this.child.exitCode === null) {
      const exited = new Promise((r) => this.child.once('exit', r));
      this.child.kill('SIGINT'); // fast shutdown
      await exited;
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}
