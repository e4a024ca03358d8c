/**
 * A replica inside an application, as its own process: test/fixtures/store/replica-app.mjs (the built library's
 * startReplica with handlers that record each run in Redis under `{acc}:calls`).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const APP = fileURLToPath(new URL('../fixtures/store/replica-app.mjs', import.meta.url));

/**
 * Starts one application replica and resolves once it is running (it prints `ready`); rejects if it exits first.
 * `handlers`: the handler names it registers, comma-separated (default `record`). The caller kills it.
 */
export function startAppReplica(redisUrl: string, name: string, namespace: string, handlers?: string): Promise<ChildProcess> {
  const p = spawn(process.execPath, [APP, redisUrl, name, namespace, ...(handlers ? [handlers] : [])], { stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    p.stdout!.on('data', (d: Buffer) => {
      if (d.toString().includes('ready')) resolve(p);
    });
    p.once('exit', (code) => reject(new Error(`replica ${name} exited with ${code}`)));
  });
}
