/**
 * An HTTP receiver for http jobs: counts deliveries per occurrence and keeps what each carried. It can hold
 * answers (`holdMs`) to make runs long, and notes requests whose client went away (an aborted job).
 */
import { createServer, type Server } from 'node:http';
import type { HttpJobBody } from '../../jobs/http.js';

/** One request as the receiver saw it. */
export interface Delivery {
  body: HttpJobBody;
  /** Request path, e.g. `/hook`. */
  path: string;
  /** Request headers (lower-case names). */
  headers: Record<string, string | string[] | undefined>;
  /** Receiver's clock when the request arrived (ms). */
  receivedMs: number;
  /** Set when the client closed the connection before the answer. */
  abortedMs?: number;
  answeredMs?: number;
}

/** A running receiver. */
export class Receiver {
  readonly deliveries: Delivery[] = [];
  /** Per schedule name: how long to hold the answer (ms). */
  holdMs = new Map<string, number>();
  /** Per delivery: how long to hold the answer (ms); undefined falls back to {@link Receiver.holdMs}. */
  holdFor: ((body: HttpJobBody) => number | undefined) | undefined;
  /** Per schedule name: status code to answer. */
  status = new Map<string, number>();
  /** Per schedule name: answer 500 to the first N calls of each occurrence, then as usual. */
  failFirst = new Map<string, number>();

  private constructor(
    private readonly server: Server,
    readonly url: string,
  ) {}

  /** Starts on a free loopback port. */
  static async start(): Promise<Receiver> {
    const ref: { self?: Receiver } = {};
    const server = createServer((req, res) => {
      let text = '';
      req.on('data', (c: Buffer) => (text += c.toString()));
      req.on('end', () => {
        const d: Delivery = { body: JSON.parse(text || '{}') as HttpJobBody, path: req.url ?? '/', headers: req.headers, receivedMs: Date.now() };
        ref.self!.deliveries.push(d);
        res.on('close', () => {
          if (!res.writableFinished) d.abortedMs = Date.now();
        });
        const hold = ref.self!.holdFor?.(d.body) ?? ref.self!.holdMs.get(d.body.schedule) ?? 0;
        setTimeout(() => {
          if (res.destroyed) return;
          d.answeredMs = Date.now();
          const seen = ref.self!.deliveries.filter((x) => x.body.occurrence === d.body.occurrence).length;
          const failing = seen <= (ref.self!.failFirst.get(d.body.schedule) ?? 0);
          res.statusCode = failing ? 500 : (ref.self!.status.get(d.body.schedule) ?? 200);
          res.end('ok');
        }, hold);
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    const addr = server.address();
    const port = typeof addr === 'object' && addr ? addr.port : 0;
    ref.self = new Receiver(server, `http://127.0.0.1:${port}`);
    return ref.self;
  }

  /** Deliveries per occurrence key. */
  countByOccurrence(): Map<string, number> {
    const m = new Map<string, number>();
    for (const d of this.deliveries) m.set(d.body.occurrence, (m.get(d.body.occurrence) ?? 0) + 1);
    return m;
  }

  /** Deliveries of one schedule. */
  of(schedule: string): Delivery[] {
    return this.deliveries.filter((d) => d.body.schedule === schedule);
  }

  /** Resolves when `pred` holds (polled), or rejects after `timeoutMs`. */
  async waitFor(pred: () => boolean, timeoutMs: number, what = 'condition'): Promise<void> {
    const end = Date.now() + timeoutMs;
    while (!pred()) {
      if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 25));
    }
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((r) => this.server.close(r));
  }
}

/**
 * The most of `deliveries` in flight at once at the receiver (arrival to answer or abort; one still open counts
 * until `nowMs`): what a concurrency limit bounds, seen from the job's side.
 */
export function maxInFlight(deliveries: readonly Delivery[], nowMs: number): number {
  const edges: [number, number][] = [];
  for (const d of deliveries) {
    edges.push([d.receivedMs, 1]);
    edges.push([d.answeredMs ?? d.abortedMs ?? nowMs, -1]);
  }
  edges.sort((a, b) => a[0] - b[0] || a[1] - b[1]); // an end before a start at the same ms
  let n = 0;
  let max = 0;
  for (const [, step] of edges) max = Math.max(max, (n += step));
  return max;
}
