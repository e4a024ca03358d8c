/**
 * Checks of what an application passes to the library (connectFlock, startReplica, flock.schedules.*,
 * flock.tenants.*), so that a mistyped option or a value of the wrong type is refused with a message naming the
 * argument and what it takes, instead of being ignored (a misspelled `ifVersion` silently turned a
 * compare-and-set into an overwrite) or failing deep inside (a Lua comparison error, a client's TypeError).
 * The same rules as the CLI's and the HTTP API's for the same values.
 */
import { MAX_INSTANT_MS } from '../time/instant.js';
import { editDistance } from '../text/edit-distance.js';
import { parseListenAddress } from '../admin/server.js';

/** A call of the library with an argument it does not take; `argument` names it (e.g. `upsert options.ifVersion`). */
export class LibraryArgumentError extends TypeError {
  readonly code = 'ARGUMENT_INVALID';
  constructor(
    readonly argument: string,
    message: string,
  ) {
    super(`${argument}: ${message}`);
    this.name = 'LibraryArgumentError';
  }
}

const show = (v: unknown): string => {
  if (typeof v === 'string') return JSON.stringify(v.length > 60 ? `${v.slice(0, 57)}...` : v);
  if (typeof v === 'bigint') return `${v}n`;
  return v === undefined ? 'undefined' : typeof v === 'object' && v !== null ? (Array.isArray(v) ? 'a list' : 'an object') : String(v);
};

/**
 * Refuses keys of `o` not in `allowed` (naming the nearest allowed one).
 * @throws LibraryArgumentError when `o` is not a plain object or has an unknown key.
 */
export function onlyKeys(what: string, o: unknown, allowed: readonly string[]): Record<string, unknown> {
  if (o === undefined) return {};
  if (typeof o !== 'object' || o === null || Array.isArray(o)) throw new LibraryArgumentError(what, `must be an object with ${allowed.join(', ')}; got ${show(o)}`);
  for (const k of Object.keys(o)) {
    if (allowed.includes(k)) continue;
    const near = allowed.map((a) => ({ a, d: editDistance(a.toLowerCase(), k.toLowerCase()) })).sort((x, y) => x.d - y.d)[0];
    const hint = near && near.d <= Math.max(2, Math.floor(k.length / 3)) ? `did you mean "${near.a}"? ` : '';
    throw new LibraryArgumentError(`${what}.${k}`, `unknown option; ${hint}allowed: ${allowed.join(', ')}`);
  }
  return o as Record<string, unknown>;
}

/**
 * A whole number in [min, max], or undefined when `v` is undefined and `optional`.
 * @throws LibraryArgumentError otherwise.
 */
export function wholeNumber(what: string, v: unknown, min: number, max: number, rule = ''): number | undefined {
  if (v === undefined) return undefined;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) {
    throw new LibraryArgumentError(what, `must be a whole number from ${min} to ${max}${rule ? ` (${rule})` : ''}; got ${show(v)}`);
  }
  return v;
}

/**
 * A time in UTC ms (a number a Date holds: within ±{@link MAX_INSTANT_MS}) or undefined.
 * @throws LibraryArgumentError otherwise (1e20 is a finite number but no time).
 */
export function timeMs(what: string, v: unknown): number | undefined {
  if (v === undefined) return undefined;
  if (typeof v !== 'number' || !Number.isFinite(v) || Math.abs(v) > MAX_INSTANT_MS) {
    throw new LibraryArgumentError(what, `must be a time in UTC ms from -${MAX_INSTANT_MS} to ${MAX_INSTANT_MS} (e.g. Date.parse('2026-12-01T00:00:00Z')); got ${show(v)}`);
  }
  return v;
}

/**
 * A schedule name: a non-empty string (`suspend(42)` used to reach the control code and come back as a
 * ControlError about a schedule "42"). @throws LibraryArgumentError naming `what` otherwise.
 */
export function scheduleName(what: string, v: unknown): string {
  if (typeof v !== 'string' || v === '') throw new LibraryArgumentError(what, `must be a schedule name (a non-empty string such as 'report-acme'); got ${v === '' ? 'an empty string' : show(v)}`);
  return v;
}

/** A string, or undefined. @throws LibraryArgumentError otherwise. */
export function text(what: string, v: unknown): string | undefined {
  if (v === undefined) return undefined;
  if (typeof v !== 'string') throw new LibraryArgumentError(what, `must be a string; got ${show(v)}`);
  return v;
}

/**
 * A label filter of `flock.schedules.list`: an object of label → value, both strings, e.g. `{ plan: 'gold' }`.
 * @throws LibraryArgumentError for anything else (a `'plan=gold'` string used to match nothing, silently).
 */
export function labelsFilter(what: string, v: unknown): Record<string, string> | undefined {
  if (v === undefined) return undefined;
  const shape = "must be an object of label → value, both strings, e.g. { plan: 'gold' }";
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new LibraryArgumentError(what, `${shape}; got ${show(v)}`);
  for (const [k, x] of Object.entries(v)) if (typeof x !== 'string') throw new LibraryArgumentError(`${what}.${k}`, `${shape}; got ${show(x)}`);
  return v as Record<string, string>;
}

/** The form of the library's list cursors: `c1.` and the base64url of the last name of the page. */
const CURSOR = /^c1\.([A-Za-z0-9_-]+)$/;

/** The cursor `flock.schedules.list` hands back for a page that ended at schedule `lastName`. */
export function encodeListCursor(lastName: string): string {
  return `c1.${Buffer.from(lastName, 'utf8').toString('base64url')}`;
}

/**
 * The last name of the previous page, from a cursor {@link encodeListCursor} made.
 * @throws LibraryArgumentError for any other string (a made-up cursor used to list from the first page, silently).
 */
export function decodeListCursor(v: unknown): string {
  const m = typeof v === 'string' ? CURSOR.exec(v) : null;
  const name = m ? Buffer.from(m[1]!, 'base64url').toString('utf8') : '';
  if (name === '' || encodeListCursor(name) !== v) {
    throw new LibraryArgumentError('list options.cursor', `must be the \`cursor\` of a page list() gave back (a string such as "c1.YTE"), or left out for the first page; got ${show(v)}`);
  }
  return name;
}

/** A call of a flock's method after its `close()`; `call` names it (e.g. `schedules.upsert`). */
export class FlockClosedError extends Error {
  readonly code = 'FLOCK_CLOSED';
  constructor(readonly call: string) {
    super(`${call}: this flock is closed (flock.close() was called); connect again with connectFlock to go on`);
    this.name = 'FlockClosedError';
  }
}

/** What a listen host may look like: a DNS name, an IPv4 or IPv6 address (no spaces, no URL parts). */
const HOST = /^[A-Za-z0-9._:%-]+$/;

/**
 * Where a replica of the library serves /metrics, /healthz and /readyz (`startReplica({ admin })`): `{ host, port }`,
 * a `'host:port'` string as `cronflock start --admin` takes, or `'off'`/null/undefined for none.
 * @throws LibraryArgumentError naming `what` for anything else (a bare port, a host that is not a string, a port
 *   out of 0–65535): the server would otherwise listen on a random port of every interface.
 */
export function listenAddress(what: string, v: unknown): { host: string; port: number } | null {
  if (v === undefined || v === null || v === 'off') return null;
  if (typeof v === 'string') {
    let at: { host: string; port: number };
    try {
      at = parseListenAddress(v, what);
    } catch (err) {
      throw new LibraryArgumentError(what, (err as Error).message.replace(`${what} `, ''));
    }
    if (!HOST.test(at.host)) throw new LibraryArgumentError(what, `${JSON.stringify(v)}: ${JSON.stringify(at.host)} is not a host name or address (letters, digits, '.', '-', ':' for IPv6); give host:port, e.g. '127.0.0.1:9464'`);
    return at;
  }
  if (typeof v !== 'object' || Array.isArray(v)) throw new LibraryArgumentError(what, `must be { host, port }, 'host:port' (e.g. '127.0.0.1:9464') or 'off'; got ${JSON.stringify(v)}`);
  const o = onlyKeys(what, v, ['host', 'port']);
  if (typeof o.host !== 'string' || o.host === '' || !HOST.test(o.host)) throw new LibraryArgumentError(`${what}.host`, `must be a host name or address (e.g. '127.0.0.1'); got ${JSON.stringify(o.host)}`);
  const port = wholeNumber(`${what}.port`, o.port, 0, 65535, '0: any free port');
  if (port === undefined) throw new LibraryArgumentError(`${what}.port`, 'must be a port from 0 to 65535 (0: any free port)');
  return { host: o.host, port };
}
