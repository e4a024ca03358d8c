/**
 * An OTLP/HTTP trace receiver for tests: a real HTTP endpoint (`POST /v1/traces`) that decodes what
 * OpenTelemetry exporters send as OTLP JSON (ids as hex, attributes as typed values, times in unix nanoseconds)
 * and keeps every span with its resource. Protobuf requests are refused with 415, so a test cannot pass on
 * spans it did not read.
 */
import { createServer, type Server } from 'node:http';

/** One received span, flattened: attributes as plain values. */
export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  /** Empty for a root span. */
  parentSpanId: string;
  name: string;
  startMs: number;
  endMs: number;
  attributes: Record<string, string | number | boolean>;
  /** OTLP status code: 0 unset, 1 ok, 2 error. */
  status: number;
  resource: Record<string, string | number | boolean>;
}

type AnyValue = { stringValue?: string; intValue?: string | number; doubleValue?: number; boolValue?: boolean };
type KeyValue = { key: string; value: AnyValue };

const valueOf = (v: AnyValue): string | number | boolean =>
  v.stringValue ?? (v.intValue !== undefined ? Number(v.intValue) : undefined) ?? v.doubleValue ?? v.boolValue ?? '';
const attrs = (list: KeyValue[] | undefined): Record<string, string | number | boolean> =>
  Object.fromEntries((list ?? []).map((kv) => [kv.key, valueOf(kv.value)]));

/** A running receiver; `url` is the OTLP endpoint base (exporters append /v1/traces). */
export class OtlpReceiver {
  readonly spans: ReceivedSpan[] = [];
  /** Requests received (exports), for diagnostics. */
  requests = 0;

  private constructor(
    private readonly server: Server,
    readonly url: string,
  ) {}

  static async start(): Promise<OtlpReceiver> {
    const ref: { self?: OtlpReceiver } = {};
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const self = ref.self!;
        if (req.method !== 'POST' || req.url !== '/v1/traces') return void res.writeHead(404).end();
        if (!String(req.headers['content-type']).includes('application/json')) return void res.writeHead(415).end();
        self.requests++;
        const body = JSON.parse(Buffer.concat(chunks).toString()) as {
          resourceSpans?: { resource?: { attributes?: KeyValue[] }; scopeSpans?: { spans?: Record<string, unknown>[] }[] }[];
        };
        for (const rs of body.resourceSpans ?? []) {
          const resource = attrs(rs.resource?.attributes);
          for (const ss of rs.scopeSpans ?? []) {
            for (const s of ss.spans ?? []) {
              self.spans.push({
                traceId: String(s.traceId),
                spanId: String(s.spanId),
                parentSpanId: String(s.parentSpanId ?? ''),
                name: String(s.name),
                startMs: Number(BigInt(String(s.startTimeUnixNano)) / 1_000_000n),
                endMs: Number(BigInt(String(s.endTimeUnixNano)) / 1_000_000n),
                attributes: attrs(s.attributes as KeyValue[]),
                status: Number((s.status as { code?: number } | undefined)?.code ?? 0),
                resource,
              });
            }
          }
        }
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    const addr = server.address();
    ref.self = new OtlpReceiver(server, `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`);
    return ref.self;
  }

  /** Spans of one occurrence (by its key attribute). */
  of(key: string): ReceivedSpan[] {
    return this.spans.filter((s) => s.attributes['cronflock.occurrence.key'] === key);
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((r) => this.server.close(r));
  }
}
