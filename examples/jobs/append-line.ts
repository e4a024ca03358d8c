/**
 * An example user job: appends one line per run to a file. `context` gives the occurrence, its fencing token,
 * an AbortSignal (fires when the claim is lost) and a logger.
 */
import { appendFile, mkdir } from 'node:fs/promises';
import { dirname } from 'node:path';

interface Context {
  occurrence: { key: string; fencingToken: number; attempt: number };
  signal: AbortSignal;
  replica: string;
  log: { info(obj: object, msg?: string): void };
}

export default {
  async run(ctx: Context, params: { file?: string }): Promise<{ file: string }> {
    const file = params.file ?? '.cronflock/demo-runs.log';
    ctx.signal.throwIfAborted();
    await mkdir(dirname(file), { recursive: true });
    const line = `${new Date().toISOString()} ${ctx.occurrence.key} token=${ctx.occurrence.fencingToken} replica=${ctx.replica}\n`;
    await appendFile(file, line);
    ctx.log.info({ file }, 'appended a line');
    return { file };
  },
};
