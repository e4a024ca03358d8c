/**
 * A job kind whose implementation is imported on first use. The schema (light: zod only) is there at once, so
 * schedule files are validated at load as usual; `compile` and `run` import the implementation when a schedule
 * of the kind is loaded or run. A replica that runs only `http` jobs thus never loads the Kubernetes client or
 * the AWS SDK (measured: +27 MB heap, +60 MB RSS and ~1 s of start-up for the Kubernetes client alone).
 */
import type { z } from 'zod';
import type { CompileContext, JobContext, JobKind } from './types.js';

/**
 * @param kind the `job.kind` value.
 * @param schema the kind's parameter schema (must not import the heavy implementation).
 * @param load imports the full kind; called at most once (its promise is kept).
 */
export function lazyKind<Params extends { kind: string }, Compiled>(
  kind: Params['kind'],
  schema: z.ZodType<Params>,
  load: () => Promise<JobKind<Params, Compiled>>,
): JobKind<Params, Compiled> {
  let loaded: Promise<JobKind<Params, Compiled>> | undefined;
  const impl = (): Promise<JobKind<Params, Compiled>> => (loaded ??= load());
  return {
    kind,
    schema,
    compile: async (params: Params, ctx: CompileContext): Promise<Compiled> => {
      const k = await impl();
      return k.compile ? k.compile(params, ctx) : (params as unknown as Compiled);
    },
    run: async (ctx: JobContext, params: Compiled): Promise<unknown> => (await impl()).run(ctx, params),
  };
}
