/**
 * `kind: module`: a job written by the user in JavaScript or TypeScript. `path` (relative to the schedule file)
 * names a module whose default export has `run(context, params)`; `params` is passed through as written.
 * TypeScript modules are loaded through tsx, so no build step is needed for them.
 *
 * The module's code never runs in the replica unless the user asks for it (`isolation: none`): loading a schedule
 * file checks each module in a fresh child process with a time limit (`loadTimeout`) and a memory limit
 * (`memoryLimitMb`), and each attempt runs in a fresh child process (default) or worker thread (./module-sandbox.ts).
 */
import { access } from 'node:fs/promises';
import { isAbsolute, resolve } from 'node:path';
import { z } from 'zod';
import { timerDurationMs } from '../runner/validate/zod-duration.js';
import { linkedSignal } from '../runner/time/deadline.js';
import { formatDurationMs } from '../runner/time/duration.js';
import { importUserJob, type UserJob } from './module-import.js';
import { checkModule, prepareModuleChecks, runSandboxed, SandboxError, type SandboxLimits } from './module-sandbox.js';
import { JobCompileError, type JobContext, type JobKind } from './types.js';

/** Default of `loadTimeout` (ms). */
export const DEFAULT_LOAD_TIMEOUT_MS = 10_000;
/** Default of `memoryLimitMb` (MiB). */
export const DEFAULT_MEMORY_LIMIT_MB = 1024;
/** Smallest `memoryLimitMb`: below it a module job's own imports (and tsx for .ts) do not fit. */
export const MIN_MEMORY_LIMIT_MB = 256;

/** Parameters of a module job, as written in a schedule file. */
export const moduleJobSchema = z.strictObject({
  kind: z.literal('module').describe('a job written in JavaScript or TypeScript'),
  path: z
    .string()
    .min(1, 'must name a .js, .mjs or .ts file')
    .describe(
      'module file, relative to the schedule file (absolute paths and paths outside its folder are allowed); its default export has run(context, params)',
    ),
  params: z.record(z.string(), z.unknown()).default({}).describe('passed to run() as its second argument'),
  isolation: z
    .enum(['process', 'thread', 'none'])
    .default('process')
    .describe(
      'process (default): each attempt in its own child process, memory bounded as a whole; thread: in a worker thread (V8 heap bounded, Buffers not); none: in the replica process (no start-up cost, but the module can block or crash the replica)',
    ),
  loadTimeout: timerDurationMs
    .refine((ms) => ms <= 300_000, 'must be at most 5m')
    .prefault(`${DEFAULT_LOAD_TIMEOUT_MS / 1000}s`)
    .describe('how long importing the module (its top-level code) may take, at load and before each attempt (default 10s)'),
  memoryLimitMb: z
    .int('must be a whole number of MiB')
    .min(MIN_MEMORY_LIMIT_MB, `must be at least ${MIN_MEMORY_LIMIT_MB} (what Node reserves at start-up comes on top)`)
    .max(65_536, 'must be at most 65536')
    .default(DEFAULT_MEMORY_LIMIT_MB)
    .describe(`memory of the job's process in MiB beyond what Node reserves at start-up: V8 heap, Buffers and native memory together (thread: V8 heap only) (default ${DEFAULT_MEMORY_LIMIT_MB})`),
});

/** Parameters after validation (`loadTimeout` in ms). */
export type ModuleJobParams = z.output<typeof moduleJobSchema>;

/** A compiled module job: the resolved file, checked to load, and its limits. */
export interface CompiledModuleJob {
  kind: 'module';
  file: string;
  params: Record<string, unknown>;
  isolation: 'process' | 'thread' | 'none';
  limits: SandboxLimits;
}

/** Modules imported into the replica (`isolation: none`), by file. */
const inProcess = new Map<string, Promise<UserJob>>();
/** The modules of {@link inProcess} that have loaded: later runs take them at once. */
const loadedHere = new Map<string, UserJob>();

/**
 * Imports an `isolation: none` module into this process on its first run, within its load time limit; once it
 * has loaded, a run takes it at once (no load deadline per run: its timer, abort listeners and promise were
 * ~2 % of a busy replica's CPU with nothing left to wait for).
 * @throws Error when it does not load in time (the import goes on in the background: `none` is the user's choice).
 */
function importHere(p: CompiledModuleJob, signal: AbortSignal): UserJob | Promise<UserJob> {
  return loadedHere.get(p.file) ?? importWithin(p, signal);
}

/** {@link importHere} before the module has loaded. */
async function importWithin(p: CompiledModuleJob, signal: AbortSignal): Promise<UserJob> {
  let loading = inProcess.get(p.file);
  if (!loading) {
    loading = importUserJob(p.file);
    inProcess.set(p.file, loading);
    loading.then(
      (job) => loadedHere.set(p.file, job),
      () => inProcess.delete(p.file),
    );
  }
  const deadline = linkedSignal([signal], p.limits.loadTimeoutMs);
  try {
    return await new Promise<UserJob>((resolve, reject) => {
      deadline.signal.addEventListener('abort', () => {
        reject(
          deadline.timedOut
            ? new Error(`module ${p.file}: did not finish loading within ${formatDurationMs(p.limits.loadTimeoutMs)} (loadTimeout)`)
            : deadline.signal.reason,
        );
      });
      loading.then(resolve, (err: unknown) => reject(new Error(`module ${p.file}: ${(err as Error)?.message ?? String(err)}`)));
    });
  } finally {
    deadline.dispose();
  }
}

/** One frozen limits object per distinct (loadTimeout, memoryLimitMb), shared by the compiled jobs that have them. */
const sharedLimits = new Map<string, SandboxLimits>();

/** Memo key of a check: the same file with the same limits is checked once per load. */
const checkKey = (file: string, l: SandboxLimits): string => `module-check\u0000${file}\u0000${l.loadTimeoutMs}\u0000${l.memoryLimitMb}`;

/** The `module` job kind. */
export const moduleJob: JobKind<ModuleJobParams, CompiledModuleJob> = {
  kind: 'module',
  schema: moduleJobSchema,
  /**
   * Resolves `path` against the schedule file's folder and checks, in a fresh child process, that the module loads
   * within `loadTimeout` and `memoryLimitMb` and has a default export with run() (once per file and limits per load).
   * @throws JobCompileError (field `path`) saying why not.
   */
  /** The check's measure of a bare Node's reservation, started beside the file's parse. */
  prepare: prepareModuleChecks,
  async compile(p, ctx) {
    const file = isAbsolute(p.path) ? p.path : resolve(ctx.baseDir, p.path);
    // Once per file and load: 100,000 schedules of one module file looked it up 100,000 times.
    const existsKey = `module-exists\u0000${file}`;
    let exists = ctx.memo?.get(existsKey) as Promise<boolean> | undefined;
    if (!exists) {
      exists = access(file).then(() => true, () => false);
      ctx.memo?.set(existsKey, exists);
    }
    if (!(await exists)) throw new JobCompileError(`module ${p.path}: not found (${file})`, ['path']);
    const key = checkKey(file, { loadTimeoutMs: p.loadTimeout, memoryLimitMb: p.memoryLimitMb });
    // Schedules with the same limits share one limits object (compiled jobs are read, never changed).
    const limitsKey = `${p.loadTimeout}\u0000${p.memoryLimitMb}`;
    let limits = sharedLimits.get(limitsKey);
    if (!limits) sharedLimits.set(limitsKey, (limits = Object.freeze({ loadTimeoutMs: p.loadTimeout, memoryLimitMb: p.memoryLimitMb })));
    let check = ctx.memo?.get(key) as Promise<void> | undefined;
    if (!check) {
      check = checkModule(file, limits);
      ctx.memo?.set(key, check);
    }
    try {
      await check;
    } catch (err) {
      throw new JobCompileError(`module ${p.path}: ${(err as Error).message}`, ['path']);
    }
    return { kind: 'module', file, params: p.params, isolation: p.isolation, limits };
  },
  async run(ctx: JobContext, p: CompiledModuleJob) {
    if (p.isolation === 'none') return (await importHere(p, ctx.signal)).run(ctx, p.params);
    try {
      const task = { file: p.file, params: p.params, occurrence: ctx.occurrence, replica: ctx.replica, ...(ctx.trace ? { trace: ctx.trace } : {}) };
      return await runSandboxed(p.isolation, ctx, task, p.limits);
    } catch (err) {
      // A module that stopped loading since the load-time check (edited, or depending on something that changed).
      if (err instanceof SandboxError && err.phase === 'load') throw new Error(`module ${p.file}: ${err.message}`);
      throw err;
    }
  },
};
