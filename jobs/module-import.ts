/**
 * Importing a user's job module (`kind: module`): `.js`/`.mjs` natively, `.ts`/`.mts`/`.cts` through tsx. This runs
 * the module's top-level code, so the replica calls it only inside a sandbox (./module-host.ts) — except for
 * `isolation: none`, whose module runs in the replica by the user's choice, after a sandboxed check.
 */
import { access } from 'node:fs/promises';
import { pathToFileURL } from 'node:url';
import type { JobContext } from './types.js';

/** What a user module's default export must provide. */
export interface UserJob {
  run(ctx: JobContext, params: Record<string, unknown>): Promise<unknown> | unknown;
}

/** Why a module cannot be used. The message says it of the module without naming it (callers name it). */
export class UserModuleError extends Error {
  constructor(
    readonly code: 'MODULE_MISSING' | 'MODULE_THREW' | 'MODULE_SHAPE',
    message: string,
  ) {
    super(message);
    this.name = 'UserModuleError';
  }
}

/**
 * Imports `file` (absolute) and returns its default export.
 * @throws UserModuleError `MODULE_MISSING` (no such file), `MODULE_THREW` (its import threw; the message names the
 *   first place in the module's own files, `file:line:col`, when the stack has one), `MODULE_SHAPE` (no default
 *   export with a run(context, params) function).
 */
export async function importUserJob(file: string): Promise<UserJob> {
  try {
    await access(file);
  } catch {
    throw new UserModuleError('MODULE_MISSING', `not found (${file})`);
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
    const where = userFrame(err, file);
    throw new UserModuleError('MODULE_THREW', `failed to load: ${(err as Error)?.message ?? String(err)}${where ? ` (at ${where})` : ''}`);
  }
  let exported = mod.default as { run?: unknown; default?: { run?: unknown } } | undefined;
  // tsx may wrap a CommonJS-shaped default export once more.
  if (exported && typeof exported.run !== 'function' && exported.default) exported = exported.default;
  if (!exported || typeof exported.run !== 'function') {
    throw new UserModuleError('MODULE_SHAPE', 'must have a default export with a run(context, params) function');
  }
  return exported as UserJob;
}

/** The first `path:line:col` of the error's stack that lies in the module's folder (not in node or tsx). */
function userFrame(err: unknown, file: string): string | undefined {
  const stack = (err as Error)?.stack;
  if (typeof stack !== 'string') return undefined;
  const dir = file.slice(0, file.lastIndexOf('/') + 1);
  for (const m of stack.matchAll(/(?:file:\/\/)?(\/[^\s():]+):(\d+):(\d+)/g)) {
    if (m[1]!.startsWith(dir) && !m[1]!.includes('/node_modules/')) return `${m[1]}:${m[2]}:${m[3]}`;
  }
  return undefined;
}
