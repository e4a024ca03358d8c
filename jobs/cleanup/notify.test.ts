/**
 * Cleanup notifications against a real local HTTP server: signed when the key is there, not sent (and logged as an
 * error) when `secretEnv` names an unset variable, and their timeout fires.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import type { JobContext } from '../types.js';
import { notify, signBody, SIGNATURE_HEADER } from './notify.js';
import { cleanupJobSchema } from './schema.js';

const servers: Server[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
});

async function receiver(holdMs = 0): Promise<{ url: string; got: { headers: IncomingMessage['headers']; body: string }[] }> {
  const got: { headers: IncomingMessage['headers']; body: string }[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      got.push({ headers: req.headers, body });
      setTimeout(() => res.end('ok'), holdMs);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  servers.push(server);
  return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}`, got };
}

function context(): { ctx: JobContext; logs: { level: string; obj: unknown; msg?: string }[] } {
  const logs: { level: string; obj: unknown; msg?: string }[] = [];
  const at = (level: string) => (obj: object | string, msg?: string) => void logs.push({ level, obj, msg });
  return {
    logs,
    ctx: {
      occurrence: { schedule: 'clean', key: 'clean@2026-01-01T00:00:00.000Z', dueMs: 0, fireMs: 0, startMs: 0, attempt: 1, fencingToken: 1, manual: false },
      signal: new AbortController().signal,
      replica: 'r',
      log: { info: at('info'), warn: at('warn'), error: at('error'), debug: at('debug') },
    },
  };
}

const params = (webhook: Record<string, unknown>) =>
  cleanupJobSchema.parse({ kind: 'cleanup', resources: [{ preset: 'finished-jobs', olderThan: '1h' }], notify: { webhook } });

describe('cleanup webhook notifications', () => {
  it('signs the body with the key from secretEnv', async () => {
    const r = await receiver();
    process.env.CRONFLOCK_TEST_NOTIFY_KEY = 'k-1';
    try {
      const { ctx, logs } = context();
      await notify(ctx, params({ url: `${r.url}/hook`, secretEnv: 'CRONFLOCK_TEST_NOTIFY_KEY' }), { error: 'boom' });
      expect(logs).toEqual([]);
      expect(r.got).toHaveLength(1);
      expect(r.got[0]!.headers[SIGNATURE_HEADER]).toBe(signBody('k-1', r.got[0]!.body));
    } finally {
      delete process.env.CRONFLOCK_TEST_NOTIFY_KEY;
    }
  });

  it('does not send unsigned when secretEnv names an unset variable: it fails, logged as an error', async () => {
    const r = await receiver();
    delete process.env.CRONFLOCK_TEST_UNSET_KEY;
    const { ctx, logs } = context();
    await notify(ctx, params({ url: `${r.url}/hook`, secretEnv: 'CRONFLOCK_TEST_UNSET_KEY' }), { error: 'boom' });
    expect(r.got).toEqual([]);
    expect(logs).toEqual([
      {
        level: 'error',
        obj: {
          error: "not sent: secretEnv names CRONFLOCK_TEST_UNSET_KEY, which is not set (or empty) in this replica's environment; an unsigned notification is not sent",
        },
        msg: 'cleanup notification not delivered',
      },
    ]);
  });

  it('gives up an attempt after its timeout, every time', async () => {
    const r = await receiver(15_000);
    const { ctx, logs } = context();
    const t0 = Date.now();
    await notify(ctx, params({ url: `${r.url}/hook`, retries: 0 }), { error: 'boom' });
    expect(Date.now() - t0).toBeLessThan(13_000);
    expect(logs[0]!.obj).toEqual({ error: `notification to ${r.url} failed: timed out after 10000 ms` });
  }, 30_000);
});
