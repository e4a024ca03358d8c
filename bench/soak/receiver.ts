/**
 * The soak's HTTP receiver, in a process of its own (so that the driver's audits never delay an answer): the
 * system the `http` jobs call. It records every delivery — which occurrence, which fencing token, when it
 * arrived, and how the request ended (answered, or closed by the caller: an aborted job, a timeout, a killed
 * process) — and sends the records to its parent in batches over IPC.
 *
 * It behaves like a fencing-aware system (what the README asks users to build): a call whose fencing token is
 * lower than one already seen for the same occurrence is refused with 409 at once.
 *
 * Paths: `/fast` answers at once; `/hold?ms=N` holds the answer N ms (long runs, and "slow" jobs held past
 * their timeout). The parent can make every answer wait (`{type: 'holdAll', ms, untilMs}`).
 *
 * Messages to the parent: `{type: 'port', port}`, `{type: 'deliveries', items: DeliveryRecord[]}`,
 * `{type: 'flushed'}`.
 */
import { createServer } from 'node:http';
import type { HttpJobBody } from '../../jobs/http.js';

/** One request as the receiver saw it. Times are this host's clock (ms); the replicas' `startedAt` is Redis'. */
export interface DeliveryRecord {
  occurrence: string;
  schedule: string;
  token: number;
  attempt: number;
  replica: string;
  /** Claim time on the Redis clock (`startedAt` of the body). */
  startedMs: number;
  fireMs: number;
  dueMs: number;
  receivedMs: number;
  /** When the request ended; undefined while it is open (flush at the end reports open ones). */
  closedMs?: number;
  /** answered: we sent the answer; aborted: the caller closed the request first; open: still open at a flush. */
  how: 'answered' | 'aborted' | 'open';
  /** Status we answered (409: refused, stale fencing token). */
  status?: number;
}

/** What an http job sends (jobs/http.ts), read by the receiver. */
type Body = HttpJobBody;

const send = (m: unknown): void => {
  if (process.send) process.send(m);
};

function main(): void {
  const open = new Set<DeliveryRecord>();
  let batch: DeliveryRecord[] = [];
  const maxToken = new Map<string, { token: number; dueMs: number }>();
  let holdAll: { ms: number; untilMs: number } | undefined;

  const done = (d: DeliveryRecord): void => {
    open.delete(d);
    batch.push(d);
  };
  const flush = (): void => {
    if (batch.length > 0) {
      send({ type: 'deliveries', items: batch });
      batch = [];
    }
  };
  setInterval(flush, 200).unref();
  // Forget fencing state of occurrences due long ago (their tokens can no longer matter to an audit window).
  setInterval(() => {
    const old = Date.now() - 15 * 60_000;
    for (const [k, v] of maxToken) if (v.dueMs < old) maxToken.delete(k);
  }, 60_000).unref();

  const server = createServer((req, res) => {
    let text = '';
    req.on('data', (c: Buffer) => (text += c.toString()));
    req.on('end', () => {
      const receivedMs = Date.now();
      let b: Body;
      try {
        b = JSON.parse(text) as Body;
      } catch {
        res.statusCode = 400;
        res.end('bad body');
        return;
      }
      const d: DeliveryRecord = {
        occurrence: b.occurrence,
        schedule: b.schedule,
        token: Number(b.fencingToken),
        attempt: Number(b.attempt),
        replica: b.replica,
        startedMs: Date.parse(b.startedAt),
        fireMs: Date.parse(b.fireAt),
        dueMs: Date.parse(b.dueAt),
        receivedMs,
        how: 'open',
      };
      open.add(d);
      res.on('close', () => {
        if (d.how !== 'open') return;
        d.closedMs = Date.now();
        d.how = res.writableFinished ? 'answered' : 'aborted';
        done(d);
      });
      const answer = (status: number): void => {
        if (res.destroyed || d.how !== 'open') return;
        d.status = status;
        res.statusCode = status;
        res.end(status === 409 ? 'stale fencing token' : 'ok');
      };
      const seen = maxToken.get(d.occurrence);
      if (seen && d.token < seen.token) return answer(409);
      maxToken.set(d.occurrence, { token: Math.max(d.token, seen?.token ?? 0), dueMs: d.dueMs });
      const url = new URL(req.url ?? '/', 'http://x');
      let hold = url.pathname === '/hold' ? Number(url.searchParams.get('ms') ?? 0) : 0;
      if (holdAll && receivedMs < holdAll.untilMs) hold = Math.max(hold, holdAll.ms);
      if (hold > 0) setTimeout(() => answer(200), hold);
      else answer(200);
    });
  });
  server.keepAliveTimeout = 60_000;
  server.listen(0, '127.0.0.1', () => {
    const a = server.address();
    send({ type: 'port', port: typeof a === 'object' && a ? a.port : 0 });
  });

  process.on('message', (m: { type: string; ms?: number; untilMs?: number }) => {
    if (m.type === 'holdAll') holdAll = { ms: m.ms ?? 0, untilMs: m.untilMs ?? 0 };
    else if (m.type === 'flush') {
      flush();
      send({ type: 'deliveries', items: [...open].map((d) => ({ ...d })) });
      send({ type: 'flushed' });
    } else if (m.type === 'exit') {
      flush();
      server.closeAllConnections();
      process.exit(0);
    }
  });
  // The parent died: nothing left to report to.
  process.on('disconnect', () => process.exit(0));
}

main();
