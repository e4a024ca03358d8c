/**
 * Receivers for notification tests: an HTTP server that records every request (webhook, Slack, Teams,
 * PagerDuty, heartbeat pings; path, headers, raw body) and can hold its answers, and a real SMTP server
 * (smtp-server, the library nodemailer's authors maintain) that records every message with its Message-ID.
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';

/** One request as the hook server saw it. */
export interface Hit {
  path: string;
  method: string;
  headers: IncomingHttpHeaders;
  raw: string;
  /** The JSON body, or {} when it was not JSON. */
  body: Record<string, unknown>;
  receivedMs: number;
}

/** An HTTP server recording requests. */
export class HookServer {
  readonly hits: Hit[] = [];
  /** Per path prefix: hold the answer this long (ms); a sender killed meanwhile has sent but not heard back. */
  readonly holdMs = new Map<string, number>();
  /** Status to answer per path prefix (default 200). */
  readonly status = new Map<string, number>();
  /** Requests whose client went away before the answer (a sender killed during its send). */
  interrupted = 0;
  /** Requests received and not yet answered. */
  inFlight = 0;

  private constructor(
    private readonly server: Server,
    readonly url: string,
  ) {}

  static async start(): Promise<HookServer> {
    const ref: { self?: HookServer } = {};
    const server = createServer((req, res) => {
      let raw = '';
      req.on('data', (c: Buffer) => (raw += c.toString()));
      req.on('end', () => {
        const self = ref.self!;
        let body: Record<string, unknown> = {};
        try {
          body = JSON.parse(raw) as Record<string, unknown>;
        } catch {
          /* not JSON */
        }
        self.hits.push({ path: req.url ?? '/', method: req.method ?? '', headers: req.headers, raw, body, receivedMs: Date.now() });
        const path = req.url ?? '/';
        const status = [...self.status.entries()].find(([p]) => path.startsWith(p))?.[1] ?? 200;
        const hold = [...self.holdMs.entries()].find(([p]) => path.startsWith(p))?.[1] ?? 0;
        self.inFlight++;
        res.on('close', () => {
          self.inFlight--;
          if (!res.writableFinished) self.interrupted++;
        });
        setTimeout(() => {
          if (res.destroyed) return;
          res.statusCode = status;
          res.end('ok');
        }, hold);
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    ref.self = new HookServer(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    return ref.self;
  }

  /** Requests whose path starts with `prefix`. */
  on(prefix: string): Hit[] {
    return this.hits.filter((h) => h.path.startsWith(prefix));
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((r) => this.server.close(r));
  }
}

/** One message as the SMTP server received it. */
export interface Mail {
  messageId: string;
  subject: string;
  to: string[];
  raw: string;
}

/** A real SMTP server on a free loopback port (no TLS, no auth), recording messages. */
export class MailServer {
  readonly mails: Mail[] = [];
  /** Hold the answer to the message data this long (ms). */
  holdMs = 0;
  /** Messages whose sender went away before the answer. */
  interrupted = 0;
  /** Messages received and not yet answered. */
  get inFlight(): number {
    return this.pending.size;
  }

  private constructor(
    private readonly server: SMTPServer,
    readonly port: number,
    private readonly pending: Set<string>,
  ) {}

  static async start(): Promise<MailServer> {
    const ref: { self?: MailServer } = {};
    const pending = new Set<string>();
    const server = new SMTPServer({
      onClose(session) {
        if (pending.delete(session.id)) ref.self!.interrupted++;
      },
      authOptional: true,
      disabledCommands: ['STARTTLS', 'AUTH'],
      logger: false,
      onData(stream, session, callback) {
        let raw = '';
        stream.on('data', (c: Buffer) => (raw += c.toString()));
        stream.on('end', () => {
          const head = raw.split(/\r?\n\r?\n/)[0] ?? '';
          const unfolded = head.replace(/\r?\n[ \t]+/g, ' ');
          const header = (name: string): string => new RegExp(`^${name}:\\s*(.*)$`, 'im').exec(unfolded)?.[1]?.trim() ?? '';
          ref.self!.mails.push({
            messageId: header('Message-ID'),
            subject: header('Subject'),
            to: session.envelope.rcptTo.map((r) => r.address),
            raw,
          });
          pending.add(session.id);
          setTimeout(() => {
            pending.delete(session.id);
            callback();
          }, ref.self!.holdMs);
        });
      },
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    const port = (server.server.address() as AddressInfo).port;
    ref.self = new MailServer(server, port, pending);
    return ref.self;
  }

  get url(): string {
    return `smtp://127.0.0.1:${this.port}`;
  }

  async close(): Promise<void> {
    await new Promise<void>((r) => this.server.close(() => r()));
  }
}
