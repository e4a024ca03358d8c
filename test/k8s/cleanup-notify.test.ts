/**
 * Notifications of a cleanup run to a real HTTP server: a signed JSON summary to a webhook (retried after a
 * 5xx), a Slack message, after success and after a failed (blast-radius) run; never object names.
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signBody, SIGNATURE_HEADER } from '../../jobs/cleanup/index.js';
import { runCleanupJob } from './cleanup-support.js';
import { configMap, createAll } from './fixtures.js';
import { clientFor, testNamespace } from './harness.js';

interface Hit {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

describe('cleanup notifications', () => {
  let server: Server;
  let url: string;
  const hits: Hit[] = [];
  let failNext = 0;
  beforeAll(async () => {
    server = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        hits.push({ path: req.url ?? '', headers: req.headers, body });
        res.statusCode = failNext-- > 0 ? 503 : 200;
        res.end('ok');
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  it('posts a signed summary (retried after a 503) and a Slack message; on failure too; never object names', async () => {
    const admin = clientFor('admin');
    const ns = await testNamespace(admin, 'cl-notify');
    await createAll(admin, ['secret-name-1', 'secret-name-2'].map((n) => configMap(ns, n)));
    process.env.CRONFLOCK_TEST_HOOK_KEY = 'k3y';
    const notify = { webhook: { url: `${url}/hook`, secretEnv: 'CRONFLOCK_TEST_HOOK_KEY' }, slack: { webhookUrl: `${url}/slack/T000/B000/XXXX` } };
    failNext = 1;
    const report = await runCleanupJob({ resources: [{ apiVersion: 'v1', kind: 'ConfigMap', namespaces: [ns] }], action: 'delete', notify });
    expect(report.acted).toBe(2);
    const hooks = hits.filter((h) => h.path === '/hook');
    const slack = hits.filter((h) => h.path.startsWith('/slack/'));
    expect(hooks.length + slack.length).toBe(3); // one of the two was answered 503 once, then retried
    const last = hooks.at(-1)!;
    expect(last.headers[SIGNATURE_HEADER]).toBe(signBody('k3y', last.body));
    expect(JSON.parse(last.body)).toMatchObject({ schedule: 'cleanup-test', state: 'succeeded', action: 'delete', scanned: 2, matched: 2, acted: 2, errored: 0, skipped: {} });
    expect(JSON.parse(slack.at(-1)!.body)).toEqual({ text: 'cronflock cleanup *cleanup-test* (delete): acted on 2 of 2 selected (2 scanned), skipped 0, errors 0' });
    for (const h of hits) expect(h.body).not.toContain('secret-name');

    hits.length = 0;
    await createAll(admin, ['a', 'b'].map((n) => configMap(ns, n)));
    await expect(
      runCleanupJob({ resources: [{ apiVersion: 'v1', kind: 'ConfigMap', namespaces: [ns] }], action: 'delete', maxCount: 1, notify: { ...notify, on: 'failure' } }),
    ).rejects.toThrow('blast radius');
    expect(JSON.parse(hits.find((h) => h.path === '/hook')!.body)).toMatchObject({
      state: 'failed',
      error: 'blast radius: 2 objects selected, more than maxCount 1; nothing was changed',
      acted: 0,
    });
    hits.length = 0;
    await runCleanupJob({ resources: [{ apiVersion: 'v1', kind: 'ConfigMap', namespaces: [ns], nameRegex: '^none$' }], action: 'delete', notify: { ...notify, on: 'changes' } });
    expect(hits).toEqual([]); // nothing changed, nothing sent
  });
});
