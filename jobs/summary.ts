/**
 * A one-line description of a job block for people (the dashboard and the HTTP API), with every secret left out:
 * a URL loses its user info and query values, headers show their names only, keys and credentials are never named
 * beyond where they come from. Published with the schedule's definition, so it stays short (~100 characters).
 */

import { basename } from 'node:path';
import { MAX_DEFINITION_DEPTH } from '../runner/config/depth.js';

/** Most characters of a summary. */
const MAX = 160;

/** A URL without user info, with query values and fragment replaced by `***`. */
export function redactUrl(raw: string): string {
  try {
    const u = new URL(raw);
    u.username = '';
    u.password = '';
    for (const k of [...u.searchParams.keys()]) u.searchParams.set(k, '***');
    if (u.hash) u.hash = '***';
    return u.toString().replaceAll('%2A%2A%2A', '***');
  } catch {
    return '[unparseable URL]';
  }
}

/** Keys whose text value is a credential itself (inline secrets; `…Env` and `…File` name where one is, so they stay). */
const SECRET_KEY = /(secret|token|password|passphrase|credentials?|apikey|authorization|routingkey|webhookurl)$/i;

/**
 * A schedule definition (or any part of one) as answers show it, with every secret left out by the rules of
 * {@link jobSummary}: a `url` loses its user info and query values ({@link redactUrl}), `headers` keep their
 * names with each value `***`, and a text value under a key that names a credential inline (`secret`, `token`,
 * `password`, a Slack `webhookUrl` …, but not `secretEnv`/`secretFile`, which say where one is) is `***`.
 * Everything else is kept as it is, so the answer still shows the schedule. Pure: returns a copy.
 * A map or list nested deeper than MAX_DEFINITION_DEPTH levels (runner/config/depth.ts; `value` is level 1) is shown
 * as `"…"`: no new definition can be that deep, but one stored before the limit existed may be, and showing it must
 * not run out of stack (that broke `cronflock list` for everyone).
 */
export function redactDefinition<T>(value: T): T {
  return redactValue(value, '', 1) as T;
}

function redactValue(value: unknown, key: string, level: number): unknown {
  if (typeof value === 'string') {
    if (key === 'url' || key.endsWith('Url')) return SECRET_KEY.test(key) ? '***' : redactUrl(value);
    return SECRET_KEY.test(key) ? '***' : value;
  }
  if (value === null || typeof value !== 'object') return value;
  if (level > MAX_DEFINITION_DEPTH) return '…';
  if (Array.isArray(value)) return value.map((v) => redactValue(v, '', level + 1));
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    out[k] = k === 'headers' && v !== null && typeof v === 'object' && !Array.isArray(v) ? Object.fromEntries(Object.keys(v).map((h) => [h, '***'])) : redactValue(v, k, level + 1);
  }
  return out;
}

type Block = { kind: string } & Record<string, unknown>;
const str = (v: unknown): string => (typeof v === 'string' ? v : '');

/** The summary of a compiled or validated job block (see the module doc). */
export function jobSummary(job: Block): string {
  let s: string;
  switch (job.kind) {
    case 'http': {
      const headers = Object.keys((job.headers as Record<string, string> | undefined) ?? {});
      s = `${str(job.method) || 'POST'} ${redactUrl(str(job.url))}${headers.length ? ` (headers: ${headers.join(', ')}, values hidden)` : ''}`;
      break;
    }
    case 'module':
      s = `module ${str(job.path) || basename(str(job.file))}${job.isolation === 'none' ? ' (in process)' : ''}`;
      break;
    case 'cleanup':
      s = `cleanup: ${str(job.action) || 'plan'} ${Array.isArray(job.resources) ? job.resources.length : 0} selector(s)${job.dryRun ? ' (dry run)' : ''}`;
      break;
    case 'backup':
    case 'restore': {
      const st = (job.storage ?? {}) as Record<string, unknown>;
      const where = st.type === 's3' ? `s3://${str(st.bucket)}/${str(st.prefix)}` : st.type === 'local' ? str(st.directory) : '';
      s = `${job.kind}${job.kind === 'restore' ? ` ${str(job.backup)}` : ''}${where ? ` (${job.kind === 'restore' ? 'from' : 'to'} ${where})` : ''}`;
      break;
    }
    case 'job': {
      const ns = str(job.namespace);
      s = `Kubernetes Job${ns ? ` in ${ns}` : ''}`;
      break;
    }
    case 'handler':
      s = `handler ${str(job.handler)}`; // params are left out: they may carry anything
      break;
    default:
      s = job.kind;
  }
  return s.length > MAX ? `${s.slice(0, MAX - 1)}…` : s;
}
