/**
 * The admin HTTP server of a replica: `/metrics` (Prometheus), `/healthz` (the process is alive) and
 * `/readyz` (Redis answers, the planner completed a tick recently, and the host clock is within bounds of the
 * Redis clock: the replica is doing its share as it should).
 * Binds 127.0.0.1 by default: metrics name schedules, and nothing here needs to be public.
 *
 * It starts before anything else of the replica, so `/healthz` answers while Redis is still unreachable, and
 * it never touches Redis itself: readiness and the flock-wide values come from memory (flock-wide-cache.ts).
 * Its own costs are bounded whatever the scrape load: one rendering of `/metrics` at a time, shared by the
 * scrapes that arrive meanwhile and reused for a while after (see {@link RenderCache}), encoded and gzipped
 * once per rendering (off the event loop; Prometheus asks for gzip, and 5 MB of text for 50,000 schedules
 * become about a tenth of that), at most {@link MAX_METRICS_IN_FLIGHT} scrapes answered at once (more get
 * 503 at once), and time limits on every request.
 *
 * `/readyz` also shows the flock's backfill backlog, for information: a backlog never makes a replica
 * unready. It is work an operator asked for, it runs in a lane of its own beside live occurrences, and
 * taking replicas out of service (or stalling a rollout) would only slow it down; watch it with the
 * `cronflock_backfill_occurrences` gauge and live lateness with `cronflock_start_lateness_seconds`.
 */
import { createServer, type Server } from 'node:http';
import { isIPv4, type AddressInfo } from 'node:net';
import { promisify } from 'node:util';
import { gzip } from 'node:zlib';
import type { Logger } from '../log.js';

const gzipAsync = promisify(gzip);

/** What the server serves; everything from memory. */
export interface AdminSource {
  /** The Prometheus text (prom-client's content type and body; bytes are UTF-8). */
  metrics(): Promise<{ contentType: string; body: string | Buffer }>;
  /** Readiness now, with the reasons when not ready. */
  readiness(): { ready: boolean; problems: string[]; backfill?: { waiting: number; admitted: number } };
}

/** Scrapes answered at once; more get 503 (Retry-After: 1) without any work. */
export const MAX_METRICS_IN_FLIGHT = 32;
/** A rendered body is reused for at least this long… */
const MIN_REUSE_MS = 1_000;
/** …and for this many times as long as rendering it took: rendering costs at most ~1/10 of a core. */
const REUSE_FACTOR = 10;
/** Connections held at once; the server drops more (probes and scrapes reconnect). */
const MAX_CONNECTIONS = 256;

/**
 * Parses `host:port` (port 0: any free port).
 * @param what how the error names the address; `example` a valid one for the error (the default admin address
 *   for `--admin`, the dashboard's for `--listen`).
 * @throws Error with a hint when malformed, or saying the port is out of range (above 65535).
 */
export function parseListenAddress(
  s: string,
  what = 'admin address',
  example = '127.0.0.1:9464 (or "off")',
): { host: string; port: number } {
  const m = /^(.*):(\d+)$/.exec(s);
  if (!m || !m[1]) throw new Error(`${what} "${s}" must be host:port, e.g. ${example}`);
  const port = Number(m[2]);
  if (port > 65535) throw new Error(`${what} "${s}": port ${m[2]} is out of range; a port is 0–65535 (0: any free port), e.g. ${example}`);
  const host = m[1].replace(/^\[(.*)\]$/, '$1');
  // Four dotted numbers are meant as an IPv4 address: one out of range would go to DNS and fail as ENOTFOUND.
  if (/^\d+(\.\d+){3}$/.test(host) && !isIPv4(host)) {
    throw new Error(`${what} "${s}": ${host} is not an IPv4 address (four numbers 0–255); give host:port with an address of this machine, e.g. ${example}`);
  }
  return { host, port };
}

/**
 * One rendering at a time, shared: scrapes that arrive while a body is being rendered wait for it, and a body
 * is served again for `max(1 s, 10 × its rendering time)`. With 50,000 schedules a rendering takes a while;
 * 100 concurrent scrapes still cost one.
 */
export class RenderCache<T> {
  private body: { value: T; atMs: number; tookMs: number } | undefined;
  private rendering: Promise<T> | undefined;

  constructor(private readonly render: () => Promise<T>) {}

  /** The current body, rendered if it is too old. */
  get(): Promise<T> {
    const b = this.body;
    if (b && performance.now() - b.atMs < Math.max(MIN_REUSE_MS, REUSE_FACTOR * b.tookMs)) return Promise.resolve(b.value);
    this.rendering ??= (async () => {
      const t0 = performance.now();
      try {
        const value = await this.render();
        this.body = { value, atMs: performance.now(), tookMs: performance.now() - t0 };
        return value;
      } finally {
        this.rendering = undefined;
      }
    })();
    return this.rendering;
  }
}

/** A running admin server. */
export class AdminServer {
  private constructor(
    private readonly server: Server,
    readonly address: string,
  ) {}

  /**
   * Starts listening. If the port is taken (several replicas on one host), falls back to a free port and
   * logs where it is, so a local flock still starts.
   */
  static async start(addr: { host: string; port: number }, source: AdminSource, log: Logger): Promise<AdminServer> {
    const metrics = new RenderCache(async () => {
      const m = await source.metrics();
      const body = typeof m.body === 'string' ? Buffer.from(m.body) : m.body;
      return { contentType: m.contentType, body, gzipped: await gzipAsync(body) };
    });
    let scrapes = 0;
    const server = createServer((req, res) => {
      const path = (req.url ?? '/').split('?')[0];
      if (path === '/healthz') {
        res.writeHead(200, { 'content-type': 'text/plain' }).end('ok\n');
      } else if (path === '/readyz') {
        const r = source.readiness();
        res.writeHead(r.ready ? 200 : 503, { 'content-type': 'application/json' }).end(`${JSON.stringify(r)}\n`);
      } else if (path === '/metrics') {
        if (scrapes >= MAX_METRICS_IN_FLIGHT) {
          res.writeHead(503, { 'content-type': 'text/plain', 'retry-after': '1' }).end('too many concurrent scrapes\n');
          return;
        }
        scrapes++;
        res.once('close', () => scrapes--);
        const gzipOk = /\bgzip\b/.test(String(req.headers['accept-encoding'] ?? ''));
        metrics.get().then(
          (m) =>
            gzipOk
              ? res.writeHead(200, { 'content-type': m.contentType, 'content-encoding': 'gzip', vary: 'accept-encoding' }).end(m.gzipped)
              : res.writeHead(200, { 'content-type': m.contentType, vary: 'accept-encoding' }).end(m.body),
          (err: Error) => {
            if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' }).end(`${err.message}\n`);
          },
        );
      } else {
        res.writeHead(404, { 'content-type': 'text/plain' }).end('try /metrics, /healthz or /readyz\n');
      }
    });
    server.maxConnections = MAX_CONNECTIONS;
    server.headersTimeout = 5_000;
    server.requestTimeout = 10_000;
    server.keepAliveTimeout = 5_000;
    const listen = (port: number): Promise<void> =>
      new Promise((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, addr.host, () => {
          server.off('error', reject);
          resolve();
        });
      });
    try {
      await listen(addr.port);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EADDRINUSE' || addr.port === 0) throw err;
      log.warn({ wanted: `${addr.host}:${addr.port}` }, 'admin port in use (another replica on this host?); using a free port');
      await listen(0);
    }
    const a = server.address() as AddressInfo;
    const address = `${a.address.includes(':') ? `[${a.address}]` : a.address}:${a.port}`;
    log.info({ admin: `http://${address}` }, 'admin server listening (/metrics, /healthz, /readyz)');
    return new AdminServer(server, address);
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((r) => this.server.close(r));
  }
}
