/**
 * Entry of a loader child process (runner/config/load-pool.ts): answers `{ id, file }` messages with
 * `{ id, result }`, the {@link precheckFile} of that file, until the pool kills it.
 */
import { precheckFile } from './precheck.js';

if (!process.send) throw new Error('runner/config/load-worker.js runs only as a loader child process (with an IPC channel)');
const send = process.send.bind(process);
process.on('message', (msg: { id: number; file: string }) => {
  precheckFile(msg.file).then(
    (result) => send({ id: msg.id, result }),
    (err: unknown) => send({ id: msg.id, failure: (err as Error)?.message ?? String(err) }),
  );
});
// The loader's pool kills this process when the load is done; if the loader goes away first, so does this.
process.on('disconnect', () => process.exit(0));
