/**
 * Entry of a loader worker thread (runner/config/load-pool.ts): answers `{ id, file }` messages with
 * `{ id, result }`, the {@link precheckFile} of that file, until the pool terminates it.
 */
import { parentPort } from 'node:worker_threads';
import { precheckFile } from './precheck.js';

if (!parentPort) throw new Error('runner/config/load-worker.js runs only as a worker thread');
const port = parentPort;
port.on('message', (msg: { id: number; file: string }) => {
  precheckFile(msg.file).then(
    (result) => port.postMessage({ id: msg.id, result }),
    (err: unknown) => port.postMessage({ id: msg.id, failure: (err as Error)?.message ?? String(err) }),
  );
});
