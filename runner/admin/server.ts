/**
 * The admin HTTP server of a replica: `/metrics` (Prometheus), `/healthz` (the process is alive) and
 * `/readyz` (Redis answers, the planner completed a tick recently, and the host clock is within bounds of the
 * Redis clock: the replica is doing its share as it should).
 * Binds 127.0.0.1 by default: metrics name schedules, and nothing here needs to be public.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { register } from 'prom-client';
import type { Logger } from '../log.js';
import type { Metrics } from './metrics.js';

/** What readiness looks at. */
export interface ReadinessProbe {
  /** Resolves when Redis answers a PING (rejects otherwise). */
  ping(): Promise<unknown>;
  /** Monotonic time (performance.now(), ms) of the planner's last completed tick. */
  lastTickOkAt(): number;
  /** A tick older than this makes the replica not ready. */
  staleAfterMs: number;
  /** Other reasons not to be ready now (e.g. the host clock far off the Redis clock), one sentence each. */
  problems?(): string[];
}

/** Parses `host:port` (port 0: any free port). @throws Error with a hint when malformed. */
export function parseListenAddress(s: string): { host: string; port: number } {
  const m = /^(.*):(\d{1,5})$/.exec(s);
  const port = m ? Number(m[2]) : NaN;
  if (!m || !m[1] || port > 65535) throw new Error(`admin address "${s}" must be host:port, e.g. 127.0.0.1:9464 (or "off")`);
  return { host: m[1].replace(/^\[(.*)\]$/, '$1'), port };
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
  static async start(addr: { host: string; port: number }, metrics: Metrics, probe: ReadinessProbe, log: Logger): Promise<AdminServer> {
    const server = createServer((req, res) => {
      void (async () => {
        const path = (req.url ?? '/').split('?')[0];
        if (path === '/healthz') {
          res.writeHead(200, { 'content-type': 'text/plain' }).end('ok\n');
        } else if (path === '/readyz') {
          const problems: string[] = [];
          try {
            await withTimeout(probe.ping(), 1000);
          } catch (err) {
            problems.push(`redis: ${(err as Error).message}`);
          }
          const age = performance.now() - probe.lastTickOkAt();
          if (age > probe.staleAfterMs) problems.push(`planner: no completed tick for ${Math.round(age)} ms`);
          problems.push(...(probe.problems?.() ?? []));
          res
            .writeHead(problems.length ? 503 : 200, { 'content-type': 'application/json' })
            .end(`${JSON.stringify({ ready: problems.length === 0, problems })}\n`);
        } else if (path === '/metrics') {
          // Job kinds (e.g. a backup's progress gauge) and in-process user jobs register on prom-client's
          // default registry; serve it beside the replica's own (a merged registry would drop the replica's
          // default labels).
          const own = await metrics.registry.metrics();
          const jobs = await register.metrics();
          res.writeHead(200, { 'content-type': metrics.registry.contentType }).end(jobs ? `${own}\n${jobs}` : own);
        } else {
          res.writeHead(404, { 'content-type': 'text/plain' }).end('try /metrics, /healthz or /readyz\n');
        }
      })().catch((err: Error) => {
        if (!res.headersSent) res.writeHead(500).end(`${err.message}\n`);
      });
    });
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

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
    p.then(
      (v) => {
        clearTimeout(t);
        resolve(v);
      },
      (e: unknown) => {
        clearTimeout(t);
        reject(e instanceof Error ? e : new Error(String(e)));
      },
    );
  });
}
