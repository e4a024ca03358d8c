/**
 * `npm start`: a local flock on `examples/schedules.yaml` — one Redis (REDIS_URL, or a private redis-server),
 * a small HTTP receiver on 127.0.0.1:8787 for the http jobs, and three replica processes of the built CLI.
 * Prints each run with its replica and its due, fire and start times. Ctrl-C stops everything.
 *
 * Flags: `--seconds N` stops after N seconds (used by the tests); `--replicas N` (default 3).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { RedisServerProcess } from '../redis/server-process.js';
import { CliError, resolveRedis } from '../cli/redis-target.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const BIN = `${ROOT}bin/cronflock.js`;
const RECEIVER_PORT = Number(process.env.CRONFLOCK_DEMO_PORT ?? 8787);

function arg(name: string, dflt: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : dflt;
}

const hhmmss = (iso: unknown): string => (typeof iso === 'string' ? iso.slice(11, 23) : '-');

async function main(): Promise<void> {
  const seconds = arg('seconds', 0);
  const count = arg('replicas', 3);
  let redisUrl: string;
  let privateRedis: RedisServerProcess | undefined;
  try {
    const t = await resolveRedis(undefined, true);
    redisUrl = t.url;
    privateRedis = t.private;
  } catch (err) {
    process.stderr.write(`cronflock demo: ${(err as Error).message}\n`);
    process.exit(2);
  }
  console.log(`redis: ${privateRedis ? `private redis-server on ${redisUrl} (data in ${privateRedis.dir})` : 'REDIS_URL'}`);
  try {
    await run(redisUrl, privateRedis, seconds, count);
  } catch (err) {
    await privateRedis?.cleanup(); // never leave a private server behind
    throw err;
  }
}

async function run(redisUrl: string, privateRedis: RedisServerProcess | undefined, seconds: number, count: number): Promise<void> {

  let received = 0;
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
  await new Promise<void>((resolve, reject) => {
    receiver.once('error', (e: NodeJS.ErrnoException) =>
      reject(e.code === 'EADDRINUSE' ? new CliError(`port ${RECEIVER_PORT} is in use; set CRONFLOCK_DEMO_PORT to another port`) : e),
    );
    receiver.listen(RECEIVER_PORT, '127.0.0.1', () => resolve());
  });
  console.log(`receiver: http://127.0.0.1:${RECEIVER_PORT} (the http jobs of examples/schedules.yaml call it)`);
  // With another port, the replicas run a copy of the examples whose URLs point at it.
  let schedules = 'examples/schedules.yaml';
  let tmp: string | undefined;
  if (RECEIVER_PORT !== 8787) {
    tmp = mkdtempSync(join(tmpdir(), 'cronflock-demo-'));
    schedules = join(tmp, 'schedules.yaml');
    const text = readFileSync(join(ROOT, 'examples/schedules.yaml'), 'utf8')
      .replaceAll('127.0.0.1:8787', `127.0.0.1:${RECEIVER_PORT}`)
      .replaceAll('./jobs/', `${join(ROOT, 'examples/jobs')}/`);
    writeFileSync(schedules, text);
  }

  const children: ChildProcess[] = [];
  for (let i = 1; i <= count; i++) {
    const name = `replica-${i}`;
    const child = spawn(process.execPath, [BIN, 'start', schedules, '--redis', redisUrl, '--replica', name, '--grace', '2s', '--admin', '127.0.0.1:0'], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'inherit'],
      env: { ...process.env, CRONFLOCK_LOG_LEVEL: 'info' },
      // Their own process group: Ctrl-C reaches this process only, which stops them gracefully (once).
      detached: true,
    });
    children.push(child);
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
        if (l.msg === 'run started') {
          console.log(
            `${name}  ${String(l.occurrence).padEnd(44)} due ${hhmmss(l.dueAt)}  fire ${hhmmss(l.fireAt)}  start ${hhmmss(l.startAt)} (+${String(l.latenessMs)} ms)  token ${String(l.fencingToken)}`,
          );
        } else if (l.msg === 'run finished' && l.state !== 'succeeded') {
          console.log(`${name}  ${String(l.occurrence)} ${String(l.state)}: ${String(l.error ?? '')}`);
        } else if (typeof l.level === 'number' && l.level >= 40) {
          console.log(`${name}  ${String(l.msg)}`);
        }
      }
    });
  }
  console.log(`started ${count} replicas; try: kill -9 <pid> of one (pids: ${children.map((c) => c.pid).join(', ')}) and watch its runs move. Ctrl-C stops.`);

  let stopping = false;
  const stop = async (): Promise<void> => {
    if (stopping) return;
    stopping = true;
    console.log('stopping the flock…');
    await Promise.all(
      children.map(
        (c) =>
          new Promise((r) => {
            if (c.exitCode !== null) return r(undefined);
            c.once('exit', r);
            c.kill('SIGTERM');
          }),
      ),
    );
    receiver.close();
    await privateRedis?.cleanup();
    if (tmp) rmSync(tmp, { recursive: true, force: true });
    console.log(`done: the receiver got ${received} calls`);
    process.exit(0);
  };
  process.on('SIGINT', () => void stop());
  process.on('SIGTERM', () => void stop());
  if (seconds > 0) setTimeout(() => void stop(), seconds * 1000);
}

main().catch((err: unknown) => {
  process.stderr.write(`cronflock demo: ${err instanceof CliError ? err.message : String((err as Error).stack ?? err)}\n`);
  process.exit(1);
});
