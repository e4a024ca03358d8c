/**
 * A shutdown is not an outage (found by a user: with `--lookahead 2h` a planning pass outlived the stop's planner
 * step, the stop closed the connections under it, and the replica logged `planning failed: Redis is not
 * reachable` while Redis was up). Here a real redis-server holds writes (CLIENT PAUSE … WRITE) so that a
 * planning pass is in flight when the replica stops; Redis answers throughout.
 */
import { writeFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startReplica } from '../../runner/library/index.js';
import { RedisServerProcess } from '../../runner/redis/server-process.js';
import { sleep } from '../../runner/time/wait.js';

let srv: RedisServerProcess;
let work: string;
beforeAll(async () => {
  srv = await RedisServerProcess.start({ appendOnly: false });
  work = mkdtempSync(join(tmpdir(), 'cronflock-stop-'));
});
afterAll(async () => {
  await srv?.cleanup();
  if (work) rmSync(work, { recursive: true, force: true });
});

describe('stopping while a planning pass is in flight', () => {
  it('logs that the pass was cut short by the shutdown, not that Redis is unreachable', async () => {
    const file = join(work, 's.yaml');
    writeFileSync(file, `schedules:\n${['a', 'b', 'c'].map((n) => `  - name: ${n}\n    cron: "* * * * * *"\n    job: { kind: handler, handler: noop }\n`).join('')}`);
    const lines: { level: number; msg: string }[] = [];
    const logger = pino({ level: 'info' }, { write: (s: string) => void lines.push(JSON.parse(s) as { level: number; msg: string }) });
    const replica = await startReplica({ redis: srv.url, namespace: 'stop', schedulesDir: file, jobs: { noop: async () => undefined }, logger });
    const admin = new Redis(srv.url);
    try {
      await sleep(1_500);
      await admin.call('CLIENT', 'PAUSE', '8000', 'WRITE'); // Redis answers, but holds every write: the next pass waits
      await sleep(1_000);
      await replica.stop(0);
      await sleep(300);
    } finally {
      await admin.call('CLIENT', 'UNPAUSE').catch(() => undefined);
      admin.disconnect();
    }
    const msgs = lines.map((l) => l.msg);
    expect(msgs.filter((m) => /planning failed/.test(m))).toEqual([]);
    expect(msgs).toContain('planning pass cut short: the replica is stopping; what it did not plan, the other replicas plan');
  }, 60_000);
});
