/**
 * `npm start`: a local flock on `examples/schedules.yaml` — one Redis (REDIS_URL, or a private redis-server),
 * a small HTTP receiver on 127.0.0.1:8787 for the http jobs, and three replica processes of the built CLI.
 * Prints each run with its replica and its due, fire and start times.
 *
 * Stopping, whatever happens to this process:
 * - Ctrl-C (SIGINT) or SIGTERM: each replica gets one SIGTERM and hands its runs over; the private
 *   redis-server stops last, after the replicas exited (or were killed after {@link REPLICA_STOP_LIMIT_MS}).
 *   The replicas and the server run in their own process groups, so the terminal's Ctrl-C reaches this
 *   process only and the order holds.
 * - A second Ctrl-C (a second after the first), or Ctrl-\ (SIGQUIT): the replicas are killed, the server is
 *   stopped, and this process exits at once.
 * - This process killed (SIGKILL): each replica has an IPC channel to it and stops when it closes; the private
 *   server's watchdog stops the server (server-process.ts).
 *
 * Flags: `--seconds N` stops after N seconds (used by the tests); `--replicas N` (default 3).
 * `CRONFLOCK_DEMO_PORT`: the receiver's port (default 8787; 0: any free port).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RedisServerProcess } from '../redis/server-process.js';
import { CliError, resolveRedis } from '../cli/redis-target.js';
import { packageRoot } from '../cli/package-info.js';
import type { RunMessage } from '../cli/start-command.js';
import { onStopSignals, signalExitCode } from '../cli/stop-signals.js';
import { settlesWithin } from '../time/wait.js';

const ROOT = packageRoot();
const BIN = `${ROOT}bin/cronflock.js`;
/** How long the replicas get to stop (their --grace is 2 s) before they are killed. */
const REPLICA_STOP_LIMIT_MS = 15_000;

function arg(name: string, dflt: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : dflt;
}

/** The time of day of a UTC ms, `hh:mm:ss.mmm` (UTC). */
const hhmmss = (ms: number | undefined): string => (ms === undefined ? '-' : new Date(ms).toISOString().slice(11, 23));

/** What is running, in the order it started; stopped in reverse. */
const running: { privateRedis?: RedisServerProcess; receiver?: Server; children: ChildProcess[]; tmp?: string } = { children: [] };
let received = 0;

async function main(): Promise<void> {
  const seconds = arg('seconds', 0);
  const count = arg('replicas', 3);
  onStopSignals({ stop: () => void stop(), force: (signal) => forceExit(signalExitCode(signal)) });
  process.on('SIGQUIT', () => forceExit(131)); // Ctrl-\: at once, but nothing left behind
  process.on('exit', () => running.privateRedis?.stopNow());
  let redisUrl: string;
  try {
    const t = await resolveRedis(undefined, true);
    redisUrl = t.url;
    running.privateRedis = t.private;
  } catch (err) {
    process.stderr.write(`cronflock demo: ${(err as Error).message}\n`);
    process.exit(2);
  }
  const p = running.privateRedis;
  console.log(`redis: ${p ? `private redis-server (pid ${p.pid}) on ${redisUrl} (data in ${p.dir})` : 'REDIS_URL'}`);
  await run(redisUrl, count);
  if (seconds > 0) setTimeout(() => void stop(), seconds * 1000);
}

async function run(redisUrl: string, count: number): Promise<void> {
  const receiver = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      received++;
      try {
        const b = JSON.parse(body) as { occurrence: string; replica: string; fencingToken: number };
        console.log(`  receiver  ${req.url} ← ${b.occurrence} from ${b.replica} (fencing token ${b.fencingToken})`);
      } catch {
        /* not ours */
      }
      res.end('ok');
    });
  });
  running.receiver = receiver;
  const wanted = Number(process.env.CRONFLOCK_DEMO_PORT ?? 8787);
  await new Promise<void>((resolve, reject) => {
    receiver.once('error', (e: NodeJS.ErrnoException) =>
      reject(e.code === 'EADDRINUSE' ? new CliError(`port ${wanted} is in use; set CRONFLOCK_DEMO_PORT to another port (0: any free port)`) : e),
    );
    receiver.listen(wanted, '127.0.0.1', () => resolve());
  });
  const port = (receiver.address() as AddressInfo).port;
  console.log(`receiver: http://127.0.0.1:${port} (the http jobs of examples/schedules.yaml call it)`);
  // With another port, the replicas run a copy of the examples whose URLs point at it.
  let schedules = 'examples/schedules.yaml';
  if (port !== 8787) {
    running.tmp = mkdtempSync(join(tmpdir(), 'cronflock-demo-'));
    schedules = join(running.tmp, 'schedules.yaml');
    const text = readFileSync(join(ROOT, 'examples/schedules.yaml'), 'utf8')
      .replaceAll('127.0.0.1:8787', `127.0.0.1:${port}`)
      .replaceAll('./jobs/', `${join(ROOT, 'examples/jobs')}/`);
    writeFileSync(schedules, text);
  }

  for (let i = 1; i <= count; i++) {
    const name = `replica-${i}`;
    const child = spawn(process.execPath, [BIN, 'start', schedules, '--redis', redisUrl, '--replica', name, '--grace', '2s', '--admin', '127.0.0.1:0'], {
      cwd: ROOT,
      // The IPC channel: a replica stops when this process goes away, however it ends.
      stdio: ['ignore', 'pipe', 'inherit', 'ipc'],
      env: { ...process.env, CRONFLOCK_LOG_LEVEL: 'info' },
      // Their own process group: Ctrl-C reaches this process only, which stops them gracefully (once).
      detached: true,
    });
    running.children.push(child);
    let buf = '';
    child.stdout!.on('data', (b: Buffer) => {
      buf += b.toString();
      let j;
      while ((j = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, j);
        buf = buf.slice(j + 1);
        let l: Record<string, unknown>;
        try {
          l = JSON.parse(line) as Record<string, unknown>;
        } catch {
          continue;
        }
        // Runs come as events (below; a failed run's 'run finished' line among them); other warnings and errors
        // from the log.
        if (typeof l.level === 'number' && l.level >= 40 && l.msg !== 'run finished') console.log(`${name}  ${String(l.msg)}`);
      }
    });
    // The replica's run events (engine/events.ts), sent over the IPC channel (cli/start-command.ts).
    child.on('message', (m: Partial<RunMessage>) => {
      if (m.type !== 'cronflock:run' || !m.event) return;
      const e = m.event;
      if (e.state === 'started') {
        console.log(
          `${name}  ${e.key.padEnd(44)} due ${hhmmss(e.dueMs)}  fire ${hhmmss(e.fireMs)}  start ${hhmmss(e.startMs)} (+${(e.startMs ?? e.fireMs) - e.fireMs} ms)  token ${e.fencingToken}`,
        );
      } else if (e.state === 'failed') {
        console.log(`${name}  ${e.key} failed: ${e.error ?? ''}`);
      }
    });
  }
  console.log(
    `started ${count} replicas (pids ${running.children.map((c) => c.pid).join(', ')}); try: kill -9 <one of them> and watch its runs move. Ctrl-C stops.`,
  );
  console.log(`dashboard: node bin/cronflock.js ui --redis ${redisUrl}   (then open http://127.0.0.1:8080/)`);
}

const exited = (c: ChildProcess): boolean => c.exitCode !== null || c.signalCode !== null;

let stopping = false;
/** Stops the replicas (each once, with SIGTERM; killed after the limit), then the receiver, then Redis. */
async function stop(): Promise<void> {
  if (stopping) return;
  stopping = true;
  console.log('stopping the flock… (Ctrl-C again to stop at once)');
  const replicas = running.children.map(
    (c) =>
      new Promise<void>((resolve) => {
        if (exited(c)) return resolve();
        c.once('exit', () => resolve());
        c.kill('SIGTERM');
      }),
  );
  if (!(await settlesWithin(Promise.all(replicas), REPLICA_STOP_LIMIT_MS))) {
    console.log('replicas did not stop in time; killing them');
    for (const c of running.children) if (!exited(c)) c.kill('SIGKILL');
    await settlesWithin(Promise.all(replicas), 2_000);
  }
  running.receiver?.closeAllConnections();
  running.receiver?.close();
  await running.privateRedis?.cleanup(); // last: the replicas needed it to hand over
  if (running.tmp) rmSync(running.tmp, { recursive: true, force: true });
  console.log(`done: the receiver got ${received} calls`);
  process.exit(0);
}

/** Kills the replicas, stops Redis (without waiting) and exits. */
function forceExit(code: number): never {
  for (const c of running.children) if (!exited(c)) c.kill('SIGKILL');
  running.privateRedis?.stopNow();
  if (running.tmp) rmSync(running.tmp, { recursive: true, force: true });
  process.exit(code);
}

main().catch((err: unknown) => {
  process.stderr.write(`cronflock demo: ${err instanceof CliError ? err.message : String((err as Error).stack ?? err)}\n`);
  forceExit(1);
});
