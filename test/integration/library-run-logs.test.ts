/**
 * A replica started with the library's `startReplica` (in this process, on a real redis-server) keeps its runs'
 * log lines as `cronflock start` replicas do: a handler's `log.info` line is in `GET /api/v1/occurrences/{key}`'s
 * `logs` (it was `[]`: the log capture was wired only in the CLI's start command); and its `schedules.runs`
 * refuses a range whose from is after its to.
 */
/* eslint-disable @typescript-eslint/no-explicit-any -- JSON answers: their shape is what the assertions check */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDashboard, type Dashboard } from '../../runner/api/dashboard.js';
import { LibraryArgumentError } from '../../runner/library/arguments.js';
import { connectFlock, startReplica, type Flock as LibFlock, type ReplicaHandle } from '../../runner/library/index.js';
import { RedisServerProcess } from '../../runner/redis/server-process.js';
import { until } from '../support/flock.js';

let srv: RedisServerProcess;
let api: Dashboard;
let lib: LibFlock;
let replica: ReplicaHandle;

async function get(path: string): Promise<any> {
  const r = await fetch(new URL(path, api.url));
  return JSON.parse(await r.text());
}

beforeAll(async () => {
  srv = await RedisServerProcess.start();
  api = await startDashboard({ redisUrl: srv.url, namespace: 'cronflock', listen: { host: '127.0.0.1', port: 0 }, version: 'test' });
  lib = await connectFlock({ redis: srv.url, by: 'test' });
  replica = await startReplica({
    redis: srv.url,
    replica: 'lib-1',
    jobs: {
      talk: async ({ log }) => {
        log.info({ step: 1 }, 'talking from the handler');
        return { ok: true };
      },
    },
  });
}, 60_000);
afterAll(async () => {
  await replica?.stop(1_000);
  await lib?.close();
  await api?.close();
  await srv?.cleanup();
});

describe('startReplica', () => {
  it("keeps a run's log lines: GET /api/v1/occurrences/{key} shows the handler's line", async () => {
    const up = await lib.schedules.upsert({ name: 'talker', cron: '0 0 1 1 *', job: { kind: 'handler', handler: 'talk' } });
    expect(up.ok).toBe(true);
    await until(() => replica.schedules().includes('talker'), 30_000, 'the replica runs talker');
    await until(async () => (await get('/api/v1/schedules/talker')).published === true, 30_000, 'talker published');
    await lib.schedules.trigger('talker');
    let key = '';
    await until(
      async () => {
        const page = await get('/api/v1/schedules/talker/occurrences');
        key = (page.items ?? []).find((o: any) => o.state === 'succeeded')?.key ?? '';
        return key !== '';
      },
      30_000,
      'the triggered occurrence succeeded',
    );
    let logs: unknown[] = [];
    // lines are written to Redis every second
    await until(async () => (logs = (await get(`/api/v1/occurrences/${encodeURIComponent(key)}`)).logs ?? []).length > 0, 15_000, 'log lines kept');
    expect(JSON.stringify(logs)).toContain('talking from the handler');
  }, 90_000);

  it('schedules.runs refuses a from after to (LibraryArgumentError naming from and to), instead of answering []', async () => {
    const to = Date.parse('2026-12-01T00:00:00Z');
    const err = await lib.schedules.runs('talker', { from: to + 1, to }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(LibraryArgumentError);
    expect((err as Error).message).toMatch(/^runs options\.from: .* is after runs options\.to/);
    expect(await lib.schedules.runs('talker', { from: to, to })).toEqual([]); // equal is a range of one instant
  });
});
