/**
 * Redis targets as URLs: what `--redis` / `REDIS_URL` may say, parsed into a {@link RedisEndpoint}, and the
 * redaction every log line and error uses. Pure: no I/O (TLS files are read by connect.ts).
 *
 *   redis://[[user]:pass@]host[:6379][/db]                   one server
 *   rediss://…                                              the same over TLS
 *   redis+sentinel://[[user]:pass@]host1[:26379],host2…/<masterName>[/db][?sentinelPassword=…&sentinelUsername=…]
 *   redis+cluster://[[user]:pass@]host1[:6379],host2…        Redis Cluster (seed nodes; database 0 only)
 *   rediss+sentinel://…, rediss+cluster://…                  over TLS (sentinels and data nodes alike)
 *
 * Credentials in the user-info part are the data nodes' (what `AUTH` on the master or on a cluster node takes);
 * a Sentinel's own password, which is a different thing (its `requirepass`), goes in `sentinelPassword`.
 * Special characters in passwords must be percent-encoded (`@` → `%40`, `/` → `%2F`, `:` → `%3A`).
 */

/** The topology a URL names. */
export type RedisMode = 'standalone' | 'sentinel' | 'cluster';

/** A host and a port. */
export interface HostPort {
  host: string;
  port: number;
}

/** A parsed Redis URL. Secrets are in clear here: never log this object, log {@link RedisEndpoint.redacted}. */
export interface RedisEndpoint {
  mode: RedisMode;
  /** TLS to every node (rediss…). */
  tls: boolean;
  /** standalone: the server; sentinel: the sentinels; cluster: seed nodes. */
  nodes: HostPort[];
  /** ACL user of the data nodes (absent: `default`). */
  username?: string;
  /** Password of the data nodes. */
  password?: string;
  /** Database number (standalone and sentinel; a cluster has only 0). */
  db: number;
  /** Sentinel only: the monitored master's name. */
  masterName?: string;
  /** Sentinel only: the sentinels' own credentials. */
  sentinelUsername?: string;
  sentinelPassword?: string;
  /** The URL with every secret replaced by `***`, for logs and errors. */
  redacted: string;
}

/** A Redis URL that cannot be used. The message never contains a secret. */
export class RedisUrlError extends Error {
  readonly code = 'REDIS_URL';
  constructor(message: string) {
    super(message);
    this.name = 'RedisUrlError';
  }
}

const SCHEMES: Record<string, { mode: RedisMode; tls: boolean; defaultPort: number }> = {
  'redis:': { mode: 'standalone', tls: false, defaultPort: 6379 },
  'rediss:': { mode: 'standalone', tls: true, defaultPort: 6379 },
  'redis+sentinel:': { mode: 'sentinel', tls: false, defaultPort: 26379 },
  'rediss+sentinel:': { mode: 'sentinel', tls: true, defaultPort: 26379 },
  'redis+cluster:': { mode: 'cluster', tls: false, defaultPort: 6379 },
  'rediss+cluster:': { mode: 'cluster', tls: true, defaultPort: 6379 },
};

/** Query parameters whose values are shown in logs; every other value is redacted (a misspelt
 * `sentinelPasword=…` is still a password). */
const PUBLIC_PARAMS = new Set(['sentinelusername']);

/**
 * Replaces every secret of a Redis URL (or of a string that merely looks like one) with `***`: the password of
 * the user-info part (all of it when it has no `:`), and every query parameter value but a user name. Works on
 * malformed input too, conservatively: everything between `://` and the last `@` before the path counts as
 * user-info.
 */
export function redactRedisUrl(url: string): string {
  let s = url;
  const schemeEnd = s.indexOf('://');
  if (schemeEnd >= 0) {
    const start = schemeEnd + 3;
    // User-info ends at the last '@': a password with an unencoded '/', '?' or '#' stays hidden too.
    const at = s.lastIndexOf('@');
    if (at >= start) {
      const info = s.slice(start, at);
      const colon = info.indexOf(':');
      const masked = colon >= 0 ? `${info.slice(0, colon)}:***` : '***';
      s = s.slice(0, start) + masked + s.slice(at);
    }
  }
  const q = s.indexOf('?');
  if (q >= 0) {
    const hash = s.indexOf('#', q);
    const query = s.slice(q + 1, hash >= 0 ? hash : undefined);
    const red = query
      .split('&')
      .map((kv) => {
        const eq = kv.indexOf('=');
        if (eq < 0) return kv;
        return PUBLIC_PARAMS.has(kv.slice(0, eq).toLowerCase()) ? kv : `${kv.slice(0, eq)}=***`;
      })
      .join('&');
    s = `${s.slice(0, q + 1)}${red}${hash >= 0 ? s.slice(hash) : ''}`;
  }
  return s;
}

/** Replaces every occurrence of the secrets of `e` in `text` (e.g. an error message) with `***`. */
export function redactSecrets(text: string, e: Pick<RedisEndpoint, 'password' | 'sentinelPassword'>): string {
  let out = text;
  for (const secret of [e.password, e.sentinelPassword]) {
    if (secret && secret.length >= 3) out = out.split(secret).join('***');
  }
  return out;
}

const decode = (s: string, what: string, redacted: string): string => {
  try {
    return decodeURIComponent(s);
  } catch {
    throw new RedisUrlError(`${redacted}: the ${what} is not valid percent-encoding`);
  }
};

function parseHostPort(s: string, defaultPort: number, redacted: string): HostPort {
  let host: string;
  let port: string | undefined;
  if (s.startsWith('[')) {
    const close = s.indexOf(']');
    if (close < 0) throw new RedisUrlError(`${redacted}: unclosed '[' in host "${s}"`);
    host = s.slice(1, close);
    const rest = s.slice(close + 1);
    if (rest !== '' && !rest.startsWith(':')) throw new RedisUrlError(`${redacted}: bad host "${s}"`);
    port = rest ? rest.slice(1) : undefined;
  } else {
    const colon = s.lastIndexOf(':');
    host = colon >= 0 ? s.slice(0, colon) : s;
    port = colon >= 0 ? s.slice(colon + 1) : undefined;
  }
  if (!host) throw new RedisUrlError(`${redacted}: a host is missing`);
  if (!/^[A-Za-z0-9._\-:%]+$/.test(host)) {
    throw new RedisUrlError(`${redacted}: bad host "${host}" (percent-encode special characters in the password)`);
  }
  let p = defaultPort;
  if (port !== undefined) {
    p = Number(port);
    if (!/^\d+$/.test(port) || p < 1 || p > 65535) throw new RedisUrlError(`${redacted}: bad port "${port}"`);
  }
  return { host, port: p };
}

function parseDb(s: string, redacted: string): number {
  if (!/^\d+$/.test(s)) throw new RedisUrlError(`${redacted}: database "${s}" must be a number`);
  return Number(s);
}

/**
 * Parses a Redis URL (the forms in this module's header).
 * @throws RedisUrlError with the redacted URL and what is wrong.
 */
export function parseRedisUrl(url: string): RedisEndpoint {
  const redacted = redactRedisUrl(url.trim());
  const m = /^([A-Za-z][A-Za-z0-9+.-]*:)\/\/(.*)$/s.exec(url.trim());
  if (!m) {
    throw new RedisUrlError(`"${redacted}" is not a Redis URL: expected redis://host:6379 (or rediss://, redis+sentinel://, redis+cluster://)`);
  }
  const scheme = SCHEMES[m[1]!.toLowerCase()];
  if (!scheme) {
    throw new RedisUrlError(`${redacted}: unknown scheme "${m[1]}//"; use one of ${Object.keys(SCHEMES).map((k) => `${k}//`).join(', ')}`);
  }
  let rest = m[2]!;
  const e: RedisEndpoint = { mode: scheme.mode, tls: scheme.tls, nodes: [], db: 0, redacted };
  // As in redaction, user-info is everything before the last '@' (so '@' elsewhere must be percent-encoded).
  const at = rest.lastIndexOf('@');
  let info: string | undefined;
  if (at >= 0) {
    info = rest.slice(0, at);
    rest = rest.slice(at + 1);
  }
  const hashAt = rest.indexOf('#');
  if (hashAt >= 0) rest = rest.slice(0, hashAt);
  let query = '';
  const qAt = rest.indexOf('?');
  if (qAt >= 0) {
    query = rest.slice(qAt + 1);
    rest = rest.slice(0, qAt);
  }
  if (info !== undefined) {
    const colon = info.indexOf(':');
    if (colon < 0) {
      throw new RedisUrlError(
        `${redacted}: user-info without ':' is ambiguous; write ${m[1]}//:password@host (password only) or ${m[1]}//user:password@host`,
      );
    }
    const user = decode(info.slice(0, colon), 'user name', redacted);
    const pass = decode(info.slice(colon + 1), 'password', redacted);
    if (user) e.username = user;
    if (pass) e.password = pass;
  }
  const slash = rest.indexOf('/');
  const authority = slash >= 0 ? rest.slice(0, slash) : rest;
  const path = (slash >= 0 ? rest.slice(slash + 1) : '').split('/').filter((x) => x !== '');
  if (!authority) throw new RedisUrlError(`${redacted}: a host is missing`);
  e.nodes = authority.split(',').map((h) => parseHostPort(h.trim(), scheme.defaultPort, redacted));
  if (scheme.mode === 'standalone' && e.nodes.length > 1) {
    throw new RedisUrlError(`${redacted}: several hosts: use redis+sentinel:// or redis+cluster://`);
  }

  if (scheme.mode === 'sentinel') {
    if (path.length === 0) throw new RedisUrlError(`${redacted}: the master name is missing: redis+sentinel://host:26379/<masterName>`);
    if (path.length > 2) throw new RedisUrlError(`${redacted}: path must be /<masterName>[/<db>]`);
    e.masterName = decode(path[0]!, 'master name', redacted);
    if (path[1] !== undefined) e.db = parseDb(path[1], redacted);
  } else {
    if (path.length > 1) throw new RedisUrlError(`${redacted}: path must be /<db>`);
    if (path[0] !== undefined) e.db = parseDb(path[0], redacted);
    if (scheme.mode === 'cluster' && e.db !== 0) throw new RedisUrlError(`${redacted}: Redis Cluster has only database 0`);
  }

  for (const kv of query.split('&').filter((x) => x !== '')) {
    const eq = kv.indexOf('=');
    const k = eq >= 0 ? kv.slice(0, eq) : kv;
    const v = decode(eq >= 0 ? kv.slice(eq + 1) : '', `value of ${k}`, redacted);
    if (scheme.mode === 'sentinel' && k === 'sentinelPassword') e.sentinelPassword = v || undefined;
    else if (scheme.mode === 'sentinel' && k === 'sentinelUsername') e.sentinelUsername = v || undefined;
    else {
      const allowed = scheme.mode === 'sentinel' ? 'sentinelPassword, sentinelUsername' : 'none';
      throw new RedisUrlError(`${redacted}: unknown query parameter "${k}" (allowed for ${m[1]}//: ${allowed})`);
    }
  }
  if (e.sentinelPassword === undefined) delete e.sentinelPassword;
  if (e.sentinelUsername === undefined) delete e.sentinelUsername;
  return e;
}
