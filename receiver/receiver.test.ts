/**
 * cronflock/receiver: the signature check refuses a bad signature, a stale or malformed header and accepts the
 * previous key during a rotation; the replay guard refuses a second use; the fencing guard refuses a lower
 * token (in memory and in a real Redis); the node:http adapter answers 401/409 for each refusal.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisServerProcess } from '../runner/redis/server-process.js';
import {
  acceptFencingToken,
  createReplayGuard,
  memoryFencingStore,
  receiveCronflockCall,
  redisFencingStore,
  signatureHeaderValue,
  SIGNATURE_HEADER,
  verifySignature,
  verifySignatureValue,
} from './index.js';

const body = JSON.stringify({ occurrence: 'nightly@2026-01-01T02:00:00.000Z', fencingToken: 3 });

describe('the cronflock/receiver entry', () => {
  it('imports only node: built-ins and its own folder (users load it in their receivers: no runner/, no script loader)', () => {
    const dir = new URL('./', import.meta.url);
    const sources = readdirSync(dir).filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts'));
    expect(sources).toContain('fencing.ts');
    for (const f of sources) {
      const from = [...readFileSync(new URL(f, dir), 'utf8').matchAll(/^(?:import|export)\b[^;]*?from '([^']+)'/gm)].map((m) => m[1]!);
      for (const spec of from) expect(spec, `${f} imports ${spec}`).toMatch(/^(node:|\.\/[\w-]+\.js$)/);
    }
  });
});

describe('verifySignature', () => {
  const now = 1_800_000_000;
  it('accepts the body signed with a key the receiver has, now or within the tolerance', () => {
    const h = signatureHeaderValue(['k1'], body, now);
    expect(verifySignatureValue(h, body, { keys: ['k1'], nowS: now })).toMatchObject({ ok: true, timestampS: now });
    expect(verifySignatureValue(h, body, { keys: ['k1'], nowS: now + 299 }).ok).toBe(true);
    expect(verifySignature({ headers: { [SIGNATURE_HEADER]: h }, body: Buffer.from(body) }, { keys: ['k1'], nowS: now }).ok).toBe(true);
  });
  it('during a rotation, a receiver with either key accepts (two v1 signatures)', () => {
    const h = signatureHeaderValue(['new', 'old'], body, now);
    expect(h.match(/v1=/g)).toHaveLength(2);
    expect(verifySignatureValue(h, body, { keys: ['old'], nowS: now }).ok).toBe(true);
    expect(verifySignatureValue(h, body, { keys: ['new'], nowS: now }).ok).toBe(true);
  });
  it('refuses another key, a changed body, an old timestamp, a missing or malformed header', () => {
    const h = signatureHeaderValue(['k1'], body, now);
    expect(verifySignatureValue(h, body, { keys: ['k2'], nowS: now })).toMatchObject({ ok: false, reason: 'mismatch' });
    expect(verifySignatureValue(h, body.replace('3', '4'), { keys: ['k1'], nowS: now })).toMatchObject({ ok: false, reason: 'mismatch' });
    expect(verifySignatureValue(h, body, { keys: ['k1'], nowS: now + 301 })).toMatchObject({ ok: false, reason: 'expired' });
    expect(verifySignatureValue(h, body, { keys: ['k1'], nowS: now + 60, toleranceS: 30 })).toMatchObject({ ok: false, reason: 'expired' });
    expect(verifySignatureValue(undefined, body, { keys: ['k1'] })).toMatchObject({ ok: false, reason: 'missing' });
    expect(verifySignatureValue('sha256=abc', body, { keys: ['k1'] })).toMatchObject({ ok: false, reason: 'malformed' });
    // Moving the timestamp breaks the signature: t is signed.
    const moved = h.replace(`t=${now}`, `t=${now + 100}`);
    expect(verifySignatureValue(moved, body, { keys: ['k1'], nowS: now + 100 })).toMatchObject({ ok: false, reason: 'mismatch' });
  });
  it('the replay guard refuses a signature the second time', () => {
    const g = createReplayGuard();
    const t = Math.floor(Date.now() / 1000);
    expect(g.firstUse('a'.repeat(64), t)).toBe(true);
    expect(g.firstUse('a'.repeat(64), t)).toBe(false);
    expect(g.firstUse('b'.repeat(64), t)).toBe(true);
  });
});

describe('acceptFencingToken', () => {
  let redis: RedisServerProcess;
  let client: Redis;
  beforeAll(async () => {
    redis = await RedisServerProcess.start();
    client = new Redis(redis.url);
  });
  afterAll(async () => {
    client?.disconnect();
    await redis?.cleanup();
  });

  for (const [name, make] of [
    ['memory', () => memoryFencingStore()],
    ['redis', () => redisFencingStore(client, { prefix: `t${Math.random()}:` })],
  ] as const) {
    it(`${name}: accepts equal and higher tokens, refuses a lower one, per key`, async () => {
      const s = make();
      expect(await acceptFencingToken(s, 'occ-a', 2)).toBe(true);
      expect(await acceptFencingToken(s, 'occ-a', 2)).toBe(true);
      expect(await acceptFencingToken(s, 'occ-a', 1)).toBe(false);
      expect(await acceptFencingToken(s, 'occ-a', 5)).toBe(true);
      expect(await acceptFencingToken(s, 'occ-a', 4)).toBe(false);
      expect(await acceptFencingToken(s, 'occ-b', 1)).toBe(true);
    });
  }
  it('refuses nonsense tokens and keys with a TypeError', async () => {
    await expect(acceptFencingToken(memoryFencingStore(), 'k', -1)).rejects.toThrow(TypeError);
    await expect(acceptFencingToken(memoryFencingStore(), '', 1)).rejects.toThrow(TypeError);
    await expect(acceptFencingToken(memoryFencingStore(), 'k', 1.5)).rejects.toThrow(TypeError);
  });
  it('the memory store forgets the oldest keys beyond maxKeys', async () => {
    const s = memoryFencingStore({ maxKeys: 2 });
    await s.acceptIfNotLower('a', 5);
    await s.acceptIfNotLower('b', 5);
    await s.acceptIfNotLower('c', 5);
    expect(await s.acceptIfNotLower('a', 1)).toBe(true); // forgotten
    expect(await s.acceptIfNotLower('c', 1)).toBe(false);
  });
});

describe('receiveCronflockCall on a node:http server', () => {
  let server: Server;
  let url: string;
  const accepted: unknown[] = [];
  beforeAll(async () => {
    const opts = { keys: ['k1'], replay: createReplayGuard(), fencing: memoryFencingStore() };
    server = createServer((req, res) => {
      void receiveCronflockCall(req, opts).then((r) => {
        if (!r.ok) return res.writeHead(r.status).end(r.reason);
        accepted.push(r.body);
        res.writeHead(200).end('ok');
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  const post = async (text: string, sig: string | undefined): Promise<{ status: number; text: string }> => {
    const res = await fetch(url, { method: 'POST', body: text, headers: sig ? { [SIGNATURE_HEADER]: sig } : {} });
    return { status: res.status, text: await res.text() };
  };

  it('accepts a signed call, then refuses its replay, a bad signature and a stale fencing token', async () => {
    const call = (token: number): string => JSON.stringify({ occurrence: 'o@1', fencingToken: token });
    const sig5 = signatureHeaderValue(['k1'], call(5));
    expect(await post(call(5), sig5)).toEqual({ status: 200, text: 'ok' });
    expect(await post(call(5), sig5)).toEqual({ status: 409, text: 'replayed' });
    expect(await post(call(6), signatureHeaderValue(['other'], call(6)))).toEqual({ status: 401, text: 'mismatch' });
    expect(await post(call(6), undefined)).toEqual({ status: 401, text: 'missing' });
    expect(await post(call(4), signatureHeaderValue(['k1'], call(4)))).toEqual({ status: 409, text: 'stale-fencing-token' });
    expect(await post(call(6), signatureHeaderValue(['k1'], call(6)))).toEqual({ status: 200, text: 'ok' });
    expect(accepted).toEqual([{ occurrence: 'o@1', fencingToken: 5 }, { occurrence: 'o@1', fencingToken: 6 }]);
  });
});
