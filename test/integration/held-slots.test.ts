/**
 * Deliveries whose claim is held back (a concurrency group full, a rate limit, the concurrency policy) must not
 * take every worker slot of a replica: found by a user whose group of every-second schedules, one slot wide,
 * stopped an unrelated schedule of the same replica for good (all slots waited for the group's slot). A replica
 * keeps at most a quarter of its slots waiting; the rest go back to the delayed set, keeping their place in Redis.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Flock, sleep } from '../support/flock.js';

describe('held-back claims and worker slots', () => {
  let flock: Flock;
  const hogs = Array.from({ length: 6 }, (_, i) => `hog${i}`);

  beforeAll(async () => {
    flock = await Flock.start();
    const yaml = `groups:
  slow: {maxConcurrent: 1}
schedules:
${hogs
  .map(
    (n) => `  - name: ${n}
    cron: "* * * * * *"
    group: slow
    job: { kind: http, url: ${flock.receiver.url}/hog, timeout: 20s }
`,
  )
  .join('')}  - name: canary
    cron: "*/2 * * * * *"
    job: { kind: http, url: ${flock.receiver.url}/canary }
`;
    // Each hog run holds the group's only slot for 1.5 s: six schedules every second queue up behind it.
    flock.receiver.holdFor = (b) => (b.schedule.startsWith('hog') ? 1500 : undefined);
    const file = flock.writeSchedules(yaml);
    await flock.startReplica({ name: 'r1', schedules: file, args: ['--concurrency', '8'] });
  });
  afterAll(() => flock?.close());

  it('an unrelated schedule keeps starting on time while a group holds many deliveries back', async () => {
    await sleep(20_000);
    // The group really was backed up: far more hog occurrences were due than its one slot could run.
    const hogRuns = flock.receiver.deliveries.filter((d) => d.body.schedule.startsWith('hog'));
    expect(hogRuns.length).toBeLessThan(6 * 20 * 0.2);
    // The canary's starts after the first seconds (the backlog builds within a second or two): none late by more
    // than a generous 2 s. Without the bound, all 8 slots wait for the group and the canary stops for good.
    const cutoff = Date.now() - 16_000;
    const canary = flock.receiver.of('canary').filter((d) => Date.parse(d.body.fireAt) > cutoff - 2000 && Date.parse(d.body.fireAt) < Date.now() - 4000);
    expect(canary.length).toBeGreaterThanOrEqual(5);
    const late = canary.map((d) => d.receivedMs - Date.parse(d.body.fireAt));
    expect(Math.max(...late)).toBeLessThan(2000);
  });
});
