/**
 * `kind: handler`: runs a function the application registered in code (`startReplica({ jobs: { sendReport } })`,
 * runner/library/), by name, with the schedule's `params`. For replicas run inside an application, where the
 * jobs are functions of that application rather than module files or URLs.
 *
 * A replica that has no handler of that name does not claim the occurrence (so it neither fails it nor holds
 * it): it hands the delivery to a live replica that registered the handler (each replica publishes its handler
 * names: runner/engine/handoffs.ts) and gives it back (applications whose replicas register different handlers,
 * a rollout where only new replicas have a new handler). If no replica runs it within the horizon, it is recorded `skipped` with the reason
 * `no replica has handler "<name>" registered` (engine/executor.ts, via {@link JobKind.unavailable}).
 */
import { z } from 'zod';
import type { JobContext, JobKind, JobLogger, OccurrenceInfo } from './types.js';

/** What a registered handler receives. */
export interface HandlerContext<P = Record<string, unknown>> {
  /** The schedule's `params` (an empty object when it has none). */
  params: P;
  /** The occurrence this attempt runs (schedule, key, due and fire time, fencing token, …). */
  occurrence: OccurrenceInfo;
  /** Fires when the claim is lost, the run times out, or the replica hands the run over: stop promptly. */
  signal: AbortSignal;
  log: JobLogger;
  /** The replica running it. */
  replica: string;
}

/** A job function registered in code. Resolve on success (the value is recorded as the run's result, ≤ 4 KB); throw on failure. */
export type JobHandler = (ctx: HandlerContext) => unknown;

const HANDLER_NAME = /^[A-Za-z_$][\w$.-]{0,127}$/;

/** The `job:` block of `kind: handler`. */
export const handlerJobSchema = z
  .strictObject({
    kind: z.literal('handler').describe('run a function registered in code with startReplica({ jobs })'),
    handler: z
      .string()
      .regex(HANDLER_NAME, 'must be a handler name: a letter, "_" or "$", then letters, digits, "_", "$", "." or "-" (at most 128)')
      .describe('the name the function is registered under in startReplica({ jobs: { <name>: fn } })'),
    params: z.record(z.string(), z.unknown()).optional().describe('JSON given to the handler as ctx.params'),
  })
  .describe('A function of the application that runs the replica (the library\'s startReplica).');

/** Validated `kind: handler` parameters. */
export type HandlerJobParams = z.output<typeof handlerJobSchema>;

/** The handlers of this process, by name (set by startReplica; one set per process). */
const registered = new Map<string, JobHandler>();

/**
 * Registers `jobs` (name → function) for `kind: handler` in this process, replacing a function registered under
 * the same name before. @returns a function that unregisters these (if still the registered ones).
 * @throws TypeError for a name that is not a handler name or a value that is not a function.
 */
export function registerHandlers(jobs: Readonly<Record<string, JobHandler>>): () => void {
  for (const [name, fn] of Object.entries(jobs)) {
    if (!HANDLER_NAME.test(name)) throw new TypeError(`jobs.${name}: not a handler name (a letter, "_" or "$", then letters, digits, "_", "$", "." or "-")`);
    if (typeof fn !== 'function') throw new TypeError(`jobs.${name}: must be a function (ctx) => …, got ${typeof fn}`);
  }
  for (const [name, fn] of Object.entries(jobs)) registered.set(name, fn);
  return () => {
    for (const [name, fn] of Object.entries(jobs)) if (registered.get(name) === fn) registered.delete(name);
  };
}

/** The job kind. */
export const handlerJob: JobKind<HandlerJobParams> = {
  kind: 'handler',
  schema: handlerJobSchema,
  unavailable(params) {
    return registered.has(params.handler) ? undefined : `no replica has handler "${params.handler}" registered`;
  },
  requires(params) {
    return `handler:${params.handler}`;
  },
  capabilities() {
    return [...registered.keys()].map((name) => `handler:${name}`);
  },
  async run(ctx: JobContext, params: HandlerJobParams): Promise<unknown> {
    const fn = registered.get(params.handler);
    if (!fn) throw new Error(`handler "${params.handler}" is not registered on replica ${ctx.replica}`);
    return await fn({ params: params.params ?? {}, occurrence: ctx.occurrence, signal: ctx.signal, log: ctx.log, replica: ctx.replica });
  },
};
