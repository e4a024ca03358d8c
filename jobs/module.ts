/**
 * `kind: module`: a job written by the user in JavaScript or TypeScript. `path` (relative to the schedule file)
 * names a module whose default export has `run(context, params)`; `params` is passed through as written.
 * TypeScript modules are loaded through tsx, so no build step is needed for them.
 */
import { access } from 'node:fs/promises';
import { isAbsolute, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { z } from 'zod';
import { JobCompileError, type JobContext, type JobKind } from './types.js';

/** Parameters of a module job, as written in a schedule file. */
export const moduleJobSchema = z.strictObject({
  kind: z.literal('module').describe('a job written in JavaScript or TypeScript'),
  path: z
    .string()
    .min(1, 'must name a .js, .mjs or .ts file')
    .describe('module file, relative to the schedule file; its default export has run(context, params)'),
  params: z.record(z.string(), z.unknown()).default({}).describe('passed to run() as its second argument'),
  isolation: z
    .enum(['thread', 'none'])
    .default('thread')
    .describe(
      'thread (default): each run in its own worker thread, so a crashing job fails only its attempt; none: in the replica process (faster start, but a crash takes the replica down)',
    ),
});

/** Parameters after validation. */
export type ModuleJobParams = z.output<typeof moduleJobSchema>;

/** What a user module's default export must provide. */
export interface UserJob {
  run(ctx: JobContext, params: Record<string, unknown>): Promise<unknown> | unknown;
}

/** A compiled module job: the resolved file and the loaded export. */
export interface CompiledModuleJob {
  kind: 'module';
  file: string;
  params: Record<string, unknown>;
  isolation: 'thread' | 'none';
  job: UserJob;
}

/** How long a thread may go on after its signal fired before it is terminated. */
const THREAD_ABORT_GRACE_MS = 5_000;

/** Runs one attempt in a worker thread (see module-worker.ts); settles with the job's result or error. */
function runInThread(ctx: JobContext, p: CompiledModuleJob): Promise<unknown> {
  const worker = new Worker(new URL('./module-worker.js', import.meta.url), {
    workerData: { file: p.file, params: p.params, occurrence: ctx.occurrence, replica: ctx.replica, trace: ctx.trace },
  });
  let killTimer: NodeJS.Timeout | undefined;
  const onAbort = (): void => {
    worker.postMessage({ type: 'abort', reason: String((ctx.signal.reason as Error)?.message ?? 'aborted') });
    killTimer = setTimeout(() => void worker.terminate(), THREAD_ABORT_GRACE_MS);
  };
  if (ctx.signal.aborted) onAbort();
  else ctx.signal.addEventListener('abort', onAbort, { once: true });
  return new Promise<unknown>((resolve, reject) => {
    worker.on('message', (m: { type: string; level?: keyof JobContext['log']; obj?: object; msg?: string; value?: unknown; message?: string }) => {
      if (m.type === 'log' && m.level) ctx.log[m.level](m.obj ?? {}, m.msg);
      else if (m.type === 'done') resolve(m.value);
      else if (m.type === 'error') reject(new Error(m.message));
    });
    worker.on('error', (err) => reject(new Error(`job crashed: ${err.message}`)));
    worker.on('exit', (code) => reject(new Error(`job thread exited with code ${code} before finishing`)));
  }).finally(() => {
    ctx.signal.removeEventListener('abort', onAbort);
    if (killTimer) clearTimeout(killTimer);
    void worker.terminate();
  });
}

/**
 * Imports a user job module; `.ts`, `.mts` and `.cts` through tsx.
 * @throws JobCompileError (field `path`) when the file is missing or its default export has no `run`.
 */
export async function importUserJob(file: string): Promise<UserJob> {
  try {
    await access(file);
  } catch {
    throw new JobCompileError(`module not found: ${file}`, ['path']);
  }
  let mod: { default?: unknown };
  try {
    if (/\.[mc]?ts$/.test(file)) {
      const { tsImport } = await import('tsx/esm/api');
      mod = (await tsImport(pathToFileURL(file).href, import.meta.url)) as { default?: unknown };
    } else {
      mod = (await import(pathToFileURL(file).href)) as { default?: unknown };
    }
  } catch (err) {
    throw new JobCompileError(`module ${file} failed to load: ${(err as Error).message}`, ['path']);
  }
  let exported = mod.default as { run?: unknown; default?: { run?: unknown } } | undefined;
  // tsx may wrap a CommonJS-shaped default export once more.
  if (exported && typeof exported.run !== 'function' && exported.default) exported = exported.default;
  if (!exported || typeof exported.run !== 'function') {
    throw new JobCompileError(`module ${file} must have a default export with a run(context, params) function`, [
      'path',
    ]);
  }
  return exported as UserJob;
}

/** The `module` job kind. */
export const moduleJob: JobKind<ModuleJobParams, CompiledModuleJob> = {
  kind: 'module',
  schema: moduleJobSchema,
  async compile(p, ctx) {
    const file = isAbsolute(p.path) ? p.path : resolve(ctx.baseDir, p.path);
    return { kind: 'module', file, params: p.params, isolation: p.isolation, job: await importUserJob(file) };
  },
  async run(ctx, p) {
    return p.isolation === 'thread' ? runInThread(ctx, p) : p.job.run(ctx, p.params);
  },
};
