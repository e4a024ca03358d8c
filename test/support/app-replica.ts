/**
 * A replica inside an application, as its own process: test/fixtures/store/replica-app.mjs (the built library's
 * startReplica with handlers that record each run in Redis under `{acc}:calls`).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const APP = fileURLToPath(new URL('../fixtures/store/replica-app.mjs', import.meta.url));

/**
 * Starts one application replica and resolves once it is running (it prints `ready`); rejects if it exits first.
 * `handlers`: the handler names it registers, comma-separated (default `record`). The caller kills it.
 */
export function startAppReplica(redisUrl: string, name: string, namespace: string, handlers?: string): Promise<ChildProcess> {
  const p = spawn(process.execPath, [APP, redisUrl, name, namespace, ...(handlers ? [handlers] : [])], { stdio: ['ignore', 'pipe', 'inherit'] });
  // CRONFLOCK_APP_LOG_DIR: each replica's stdout (its log, pino level CRONFLOCK_APP_LOG_LEVEL, default warn) goes to
  // <dir>/<name>.log as well, to see afterwards what happened to deliveries in a failed run.
  const dir = process.env.CRONFLOCK_APP_LOG_DIR;
  if (dir) p.stdout!.pipe(createWriteStream(join(dir, `${name}.log`), { flags: 'a' }));
  return new Promise((resolve, reject) => {
    p.stdout!.on('data', (d: Buffer) => {
      if (d.toString().includes('ready')) resolve(p);
    });
    p.once('exit', (code) => reject(new Error(`replica ${name} exited with ${code}`)));
  });
}
