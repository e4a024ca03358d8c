/**
 * Reading the secrets a `notify:`, `heartbeat:` or `signing:` block names, when a message is sent (so a rotated
 * Secret file is used without a restart). Values never leave this module except into the request that needs
 * them: errors name the variable or file, never the value.
 */
import { readFileSync } from 'node:fs';
import type { SecretRef } from './config.js';

/** A secret that cannot be read now (the variable was unset, the file removed): the send fails and is retried. */
export class SecretUnavailableError extends Error {
  readonly code = 'SECRET_UNAVAILABLE';
  constructor(message: string) {
    super(message);
    this.name = 'SecretUnavailableError';
  }
}

const FILE_CACHE_MS = 5_000;
const fileCache = new Map<string, { value: string; readAtMs: number }>();

/** The secret's value (a file's content without its trailing newline). Files are re-read after 5 s. */
export function readSecret(ref: SecretRef): string {
  if ('value' in ref) return ref.value;
  if ('env' in ref) {
    const v = process.env[ref.env];
    if (!v) throw new SecretUnavailableError(`environment variable ${ref.env} is not set`);
    return v;
  }
  const hit = fileCache.get(ref.file);
  if (hit && Date.now() - hit.readAtMs < FILE_CACHE_MS) return hit.value;
  let value: string;
  try {
    value = readFileSync(ref.file, 'utf8').replace(/\r?\n$/, '');
  } catch (err) {
    throw new SecretUnavailableError(`cannot read ${ref.file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  if (value === '') throw new SecretUnavailableError(`${ref.file} is empty`);
  fileCache.set(ref.file, { value, readAtMs: Date.now() });
  return value;
}

/** Where a secret is, for messages: `env HOOK_KEY`, `file /run/secrets/k`, or `the file` for a literal. */
export function describeSecret(ref: SecretRef): string {
  return 'env' in ref ? `env ${ref.env}` : 'file' in ref ? `file ${ref.file}` : 'the schedule file';
}
