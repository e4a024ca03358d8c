/**
 * The http job kind against real local HTTP servers (no mocks): its timeout fires every time, the answer's body is
 * read with bounded memory and within the timeout, redirects follow the origin policy, and no header value ever
 * appears in a message.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { parseScheduleText } from '../runner/config/load.js';
import { httpJob, httpJobSchema, type HttpJobParams } from './http.js';
import type { JobContext } from './types.js';

interface Seen {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
}

/** A server on a free loopback port that records requests and answers with `handler`. */
async function serve(handler: (req: IncomingMessage, res: ServerResponse, body: string) => void): Promise<{ url: string; seen: Seen[]; server: Server }> {
  const seen: Seen[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
      handler(req, res, body);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const port = (server.address() as { port: number }).port;
  servers.push(server);
  return { url: `http://127.0.0.1:${port}`, seen, server };
}
const servers: Server[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
});

const params = (job: Record<string, unknown>): HttpJobParams => httpJobSchema.parse({ kind: 'http', ...job });

function context(signal = new AbortController().signal): JobContext {
  const log = { info: () => undefined, warn: () => undefined, error: () => undefined, debug: () => undefined };
  return {
    occurrence: { schedule: 's', key: 's@2026-01-01T00:00:00.000Z', dueMs: 0, fireMs: 0, startMs: 0, attempt: 1, fencingToken: 7, manual: false },
    signal,
    log,
    replica: 'test',
  };
}

/** Settles the attempt: its result, or the error message. */
async function attempt(p: HttpJobParams, ctx = context()): Promise<{ ok: boolean; value?: unknown; error?: string; ms: number }> {
  const t0 = performance.now();
  try {
    const value = await httpJob.run(ctx, p);
    return { ok: true, value, ms: performance.now() - t0 };
  } catch (err) {
    return { ok: false, error: (err as Error).message, ms: performance.now() - t0 };
  }
}

describe('http job: timeout', () => {
  it('fires every time: 40 attempts against a server that answers late all time out, while garbage is collected', async () => {
    // AbortSignal.any([…, AbortSignal.timeout()]) loses its timeout to the garbage collector (nodejs/node#57736):
    // with it, most of these attempts ran to the late answer.
    const { url } = await serve((_req, res) => setTimeout(() => res.end('late'), 2500));
    let junk: object[] = [];
    const churn = setInterval(() => {
      junk = [];
      for (let i = 0; i < 200_000; i++) junk.push({ i });
    }, 20);
    try {
      const p = params({ url: `${url}/slow`, timeout: '300ms' });
      const results = await Promise.all(Array.from({ length: 40 }, () => attempt(p)));
      expect(results.filter((r) => r.ok)).toEqual([]);
      for (const r of results) {
        expect(r.error).toBe('timed out after 300 ms');
        expect(r.ms).toBeLessThan(2000);
      }
    } finally {
      clearInterval(churn);
      junk = [];
    }
  });

  it('counts reading the body: an answer whose body trickles past the timeout fails as a timeout', async () => {
    const { url } = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      const t = setInterval(() => res.write('x'), 100);
      res.on('close', () => clearInterval(t));
    });
    const r = await attempt(params({ url, timeout: '500ms' }));
    expect(r).toMatchObject({ ok: false, error: 'timed out after 500 ms' });
    expect(r.ms).toBeLessThan(2500);
  });

  it('stops when the run\'s signal fires, with the signal\'s reason', async () => {
    const { url } = await serve((_req, res) => setTimeout(() => res.end('late'), 5000));
    const ac = new AbortController();
    setTimeout(() => ac.abort(new Error('claim lost')), 200);
    const r = await attempt(params({ url, timeout: '10s' }), context(ac.signal));
    expect(r).toMatchObject({ ok: false, error: 'claim lost' });
  });
});

describe('http job: answers', () => {
  it('reads a large body with bounded memory and succeeds on 2xx', async () => {
    const chunk = Buffer.alloc(1024 * 1024, 'a');
    const { url } = await serve((_req, res) => {
      res.writeHead(200);
      let left = 256; // 256 MiB
      const write = (): void => {
        while (left > 0) {
          left--;
          if (!res.write(chunk)) return void res.once('drain', write);
        }
        res.end();
      };
      write();
    });
    const before = process.memoryUsage().arrayBuffers;
    let peak = before;
    const watch = setInterval(() => (peak = Math.max(peak, process.memoryUsage().arrayBuffers)), 5);
    const r = await attempt(params({ url, timeout: '60s' }));
    clearInterval(watch);
    expect(r).toMatchObject({ ok: true, value: { status: 200 } });
    // Chunks read and dropped (and the server's, in this same process) wait for the garbage collector, so some
    // are counted (up to ~125 MiB seen on Node 24 in a busy run); the whole 256 MiB body never is.
    expect(peak - before).toBeLessThan(192 * 1024 * 1024);
  });

  it('quotes the start of a failed answer, without the job\'s header values', async () => {
    const { url } = await serve((req, res) => {
      res.statusCode = 403;
      res.end(`forbidden for key ${String(req.headers['x-api-key'])} ${'y'.repeat(1000)}`);
    });
    const r = await attempt(params({ url, headers: { 'X-Api-Key': 's3cr3t-value' } }));
    expect(r.ok).toBe(false);
    expect(r.error).toMatch(/^answered 403: forbidden for key \*\*\* y+ … \(1031 bytes\)$/);
    expect(r.error).not.toContain('s3cr3t-value');
    expect(r.error!.length).toBeLessThan(400);
  });
});

describe('http job: redirects', () => {
  /** An origin that redirects `/go` to `target` with `status`, and answers 200 elsewhere. */
  const redirector = (status: number, target: () => string) =>
    serve((req, res) => {
      if (req.url === '/go') {
        res.writeHead(status, { location: target() });
        res.end('moving');
      } else res.end('here');
    });
  const headers = { 'X-Api-Key': 'key-1234' };

  it('follows a redirect within the origin, with the headers and (307) the body', async () => {
    const a = await serve((req, res) => {
      if (req.url === '/go') {
        res.writeHead(307, { location: '/there' });
        res.end();
      } else res.end('ok');
    });
    const r = await attempt(params({ url: `${a.url}/go`, headers }));
    expect(r).toMatchObject({ ok: true, value: { status: 200 } });
    expect(a.seen.map((s) => [s.url, s.method, s.headers['x-api-key']])).toEqual([
      ['/go', 'POST', 'key-1234'],
      ['/there', 'POST', 'key-1234'],
    ]);
    expect(JSON.parse(a.seen[1]!.body)).toMatchObject({ occurrence: 's@2026-01-01T00:00:00.000Z', fencingToken: 7 });
  });

  for (const status of [301, 302, 303, 307, 308]) {
    it(`does not follow a ${status} to another origin by default: the other origin receives nothing`, async () => {
      const b = await serve((_req, res) => res.end('other'));
      const a = await redirector(status, () => `${b.url}/steal`);
      const r = await attempt(params({ url: `${a.url}/go`, headers }));
      expect(r.ok).toBe(false);
      expect(r.error).toContain(`answered ${status}, a redirect to another origin (${b.url}); not followed (redirects: same-origin)`);
      expect(b.seen).toEqual([]);
    });
  }

  it('redirects: any follows to another origin without the job\'s headers and without the body', async () => {
    const b = await serve((_req, res) => res.end('other'));
    const a = await redirector(302, () => `${b.url}/landing`);
    const r = await attempt(params({ url: `http://user:pw-9876@${a.url.slice(7)}/go`, headers, redirects: 'any' }));
    expect(r).toMatchObject({ ok: true, value: { status: 200 } });
    expect(a.seen[0]!.headers).toMatchObject({ 'x-api-key': 'key-1234', authorization: expect.stringMatching(/^Basic /) });
    expect(b.seen).toHaveLength(1);
    const got = b.seen[0]!;
    expect(got.method).toBe('GET');
    expect(got.body).toBe('');
    expect(got.headers['x-api-key']).toBeUndefined();
    expect(got.headers.authorization).toBeUndefined();
    expect(got.headers['content-type']).toBeUndefined();
    expect(got.headers['x-cronflock-occurrence']).toBe('s@2026-01-01T00:00:00.000Z');
  });

  it('redirects: any still refuses a 307 to another origin, which would re-send the body', async () => {
    const b = await serve((_req, res) => res.end('other'));
    const a = await redirector(307, () => `${b.url}/landing`);
    const r = await attempt(params({ url: `${a.url}/go`, headers, redirects: 'any' }));
    expect(r.error).toContain('would re-send the request body; not followed');
    expect(b.seen).toEqual([]);
  });

  it('redirects: none makes a 3xx answer a failure', async () => {
    const a = await redirector(302, () => '/there');
    const r = await attempt(params({ url: `${a.url}/go`, redirects: 'none' }));
    expect(r).toMatchObject({ ok: false, error: 'answered 302: moving' });
    expect(a.seen).toHaveLength(1);
  });

  it('stops after 10 redirects', async () => {
    const a = await serve((req, res) => {
      res.writeHead(302, { location: `/r${Number(req.url!.slice(2) || 0) + 1}` });
      res.end();
    });
    const r = await attempt(params({ url: `${a.url}/r0`, method: 'GET' }));
    expect(r.error).toMatch(/^more than 10 redirects/);
    expect(a.seen).toHaveLength(11);
  });
});

describe('http job: header values are refused at load, never echoed', () => {
  const SECRET = 'tok-5ecret-9';
  const load = (headersYaml: string) =>
    parseScheduleText(`schedules:\n  - name: a\n    cron: "@daily"\n    job:\n      kind: http\n      url: http://127.0.0.1:9/x\n      headers:\n${headersYaml}`, 'h.yaml');

  const bad: [string, string, RegExp][] = [
    ['a line break', `        X-Token: "${SECRET}\\nInjected: 1"\n`, /contains a line break/],
    ['a carriage return', `        X-Token: "${SECRET}\\r"\n`, /contains a line break/],
    ['a NUL', `        X-Token: "${SECRET}\\0"\n`, /contains a NUL character/],
    ['a control character', `        X-Token: "${SECRET}\\x07"\n`, /contains a control character/],
    ['a character beyond Latin-1', `        X-Token: "${SECRET}€"\n`, /beyond Latin-1/],
    ['a trailing space', `        X-Token: "${SECRET} "\n`, /ends with a space or tab/],
  ];
  for (const [what, yaml, why] of bad) {
    it(`refuses a value with ${what} at its file:line:col, without the value`, async () => {
      const r = await load(yaml);
      expect(r.schedules).toEqual([]);
      expect(r.errors).toHaveLength(1);
      const e = r.errors[0]!;
      expect({ line: e.line, col: e.col, field: e.field, code: e.code }).toEqual({ line: 8, col: 18, field: 'schedules[0].job.headers.X-Token', code: 'SCHEMA_INVALID' });
      expect(e.reason).toMatch(why);
      expect(e.format()).not.toContain(SECRET);
    });
  }

  it('refuses a number or a map as a value without showing it', async () => {
    const r = await load('        X-Pin: 918273\n        X-Map: {a: b}\n');
    expect(r.errors.map((e) => [e.field, e.reason])).toEqual([
      ['schedules[0].job.headers.X-Pin', 'must be text (quote it); the value is not shown here'],
      ['schedules[0].job.headers.X-Map', 'must be text (quote it); the value is not shown here'],
    ]);
    for (const e of r.errors) expect(e.format()).not.toContain('918273');
  });

  it('refuses a __proto__ key (which JavaScript would drop silently) where it is written', async () => {
    const r = await load('        __proto__: {X-Evil: "1"}\n        X-Ok: fine\n');
    expect(r.errors).toHaveLength(1);
    expect(r.errors[0]!.format()).toBe(
      'h.yaml:8:9: schedules[0].job.headers.__proto__: the key "__proto__" cannot be used: JavaScript gives it a special meaning, and what it holds would be dropped\n' +
        '  hint: remove it (no field, header or parameter can be named __proto__)',
    );
  });

  it('refuses header names HTTP or cronflock own, and the same name twice', async () => {
    const r = await load('        Content-Length: "5"\n        X-Cronflock-Fencing-Token: "999"\n        X-A: "1"\n        x-a: "2"\n');
    expect(r.errors.map((e) => `${e.field}: ${e.reason}`)).toEqual([
      'schedules[0].job.headers.Content-Length: is set by the HTTP client itself and cannot be given here',
      'schedules[0].job.headers.X-Cronflock-Fencing-Token: is reserved: cronflock sets the x-cronflock-* headers itself',
      'schedules[0].job.headers.x-a: is the same header as "X-A" (header names ignore case); keep one',
    ]);
  });

  it('accepts ordinary values: tokens, spaces inside, tabs inside, Latin-1', async () => {
    const r = await load('        Authorization: "Bearer abc.def-ghi"\n        X-Note: "caf\\xe9 \\t ok"\n');
    expect(r.errors).toEqual([]);
  });
});
