/**
 * Sending one delivery against a real local HTTP server (node:http): the per-send timeout fires every time, the
 * answer's reading included (a timer we hold: runner/time/deadline.ts); a redirect is not followed and is a
 * permanent failure; a slow, large answer is read with bounded memory and quoted briefly; the webhook's own
 * headers go along but cannot replace cronflock's signature; a URL that carries a token never appears in an error.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { verifySignatureValue } from '../../receiver/signature.js';
import type { NotifyConfig } from './config.js';
import { deliveriesFor, type OutboxOutcome } from './events.js';
import { sendDelivery } from './send.js';

const servers: Server[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
});

type Got = { path: string; headers: IncomingMessage['headers']; body: string };
async function receiver(answer: (req: IncomingMessage, res: ServerResponse) => void): Promise<{ url: string; got: Got[] }> {
  const got: Got[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      got.push({ path: req.url ?? '', headers: req.headers, body });
      answer(req, res);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  servers.push(server);
  return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}`, got };
}

const failed: OutboxOutcome = {
  kind: 'outcome', key: 's@2026-01-01T00:00:00.000Z', schedule: 's', state: 'failed', reason: 'job failed', prev: '', dueMs: 0, attempt: 1, error: 'boom', atMs: 1000,
};
const notifyOf = (over: Partial<NotifyConfig>): NotifyConfig => ({ on: ['failed'], timeoutMs: 300, rateLimit: { max: 5, perMs: 3_600_000 }, ...over });
const send = (n: NotifyConfig) => sendDelivery({ namespace: 'ns', notify: n }, failed, deliveriesFor(failed, { notify: n })[0]!, 'id-1');

describe('sending a notification', () => {
  it('gives up a send after its timeout, every time, also while the answer is being read', async () => {
    // Headers at once, then a body that never ends: only a timer that covers the read stops this.
    const r = await receiver((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('partial');
    });
    const n = notifyOf({ webhook: { url: `${r.url}/hook`, keys: [], headers: {} } });
    for (let i = 0; i < 5; i++) {
      const t0 = performance.now();
      expect(await send(n)).toEqual({ ok: false, permanent: false, error: `${r.url}: no answer within 300 ms` });
      expect(performance.now() - t0).toBeLessThan(5_000); // generous: a loaded machine
    }
    expect(r.got).toHaveLength(5);
  });

  it('does not follow a redirect: a permanent failure, nothing sent to the redirect target', async () => {
    const r = await receiver((req, res) => {
      if (req.url === '/hook') res.writeHead(307, { location: '/elsewhere' }).end();
      else res.writeHead(200).end('ok');
    });
    const n = notifyOf({ webhook: { url: `${r.url}/hook`, keys: [], headers: {} } });
    expect(await send(n)).toEqual({ ok: false, permanent: true, error: `${r.url} answered 307 (a redirect: not followed)` });
    expect(r.got.map((g) => g.path)).toEqual(['/hook']);
  });

  it('quotes a refusing answer briefly, however large it is', async () => {
    const big = 'x'.repeat(5 * 1024 * 1024);
    const r = await receiver((_req, res) => res.writeHead(400).end(`bad request ${big}`));
    const n = notifyOf({ webhook: { url: `${r.url}/hook`, keys: [], headers: {} } });
    const res = await send(n);
    expect(res).toMatchObject({ ok: false, permanent: true });
    expect(res.ok ? '' : res.error).toMatch(/answered 400: bad request x+$/);
    expect((res.ok ? '' : res.error).length).toBeLessThan(400);
  });

  it('sends the webhook\'s own headers, signs the body, and names only the origin of a URL with a token', async () => {
    process.env.CF_SEND_TEST_KEY = 'key-1';
    try {
      const r = await receiver((_req, res) => res.writeHead(200).end('ok'));
      const n = notifyOf({ webhook: { url: `${r.url}/hook`, keys: [{ env: 'CF_SEND_TEST_KEY' }], headers: { 'x-team': 'ops' } } });
      expect(await send(n)).toEqual({ ok: true });
      const g = r.got[0]!;
      expect(g.headers['x-team']).toBe('ops');
      expect(g.headers['idempotency-key']).toBe('id-1');
      expect(verifySignatureValue(String(g.headers['x-cronflock-signature']), g.body, { keys: ['key-1'] })).toMatchObject({ ok: true });
      // A Slack-style URL is a credential: an error names its origin only.
      const slack = notifyOf({ slack: { url: { value: `${r.url}/services/T0/B0/SECRET-TOKEN` } } });
      await new Promise<void>((done) => servers[0]!.close(() => done()));
      servers[0]!.closeAllConnections();
      const down = await sendDelivery({ namespace: 'ns', notify: slack }, failed, deliveriesFor(failed, { notify: slack })[0]!, 'id-2');
      expect(down).toMatchObject({ ok: false, permanent: false });
      expect(down.ok ? '' : down.error).not.toContain('SECRET-TOKEN');
      expect(down.ok ? '' : down.error.startsWith(`${r.url}: `)).toBe(true);
    } finally {
      delete process.env.CF_SEND_TEST_KEY;
    }
  });
});
