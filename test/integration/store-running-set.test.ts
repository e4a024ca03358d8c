/**
 * What a replica reports as the schedules it runs follows each batch of stored changes (engine/replica.ts
 * `applyChanges`, which changes its set of names and its schedules by name in place instead of copying every
 * schedule per batch: at 100,000 stored schedules the copies were most of a replica's time while following
 * 1,000 changes a second). Checked on a real replica process's /metrics after an add, a change and a removal:
 * - the flock-wide counts (`cronflock_schedules{health="total"}`) and the per-schedule series: the added one has
 *   series, the removed one none (the schedules the health board walks);
 * - the added schedule's series and run counters carry its tenant (the metrics' tenant lookup by name);
 * - the added schedule's last success appears once it succeeded (the names the flock-wide cache keeps values for).
 */
import { afterEach, expect, it } from 'vitest';
import { connectFlock, type Flock as Library } from '../../runner/library/index.js';
import { Flock, until } from '../support/flock.js';
import { samplesOf } from '../support/metrics.js';

const NS = 'runset';
const get = async (url: string): Promise<string> => (await fetch(url, { signal: AbortSignal.timeout(5000) })).text();

let flock: Flock | undefined;
let lib: Library | undefined;
afterEach(async () => {
  await lib?.close();
  await flock?.close();
});

it('a replica following stored changes reports the schedules it runs after each batch (totals, series, tenant, last success)', async () => {
  flock = await Flock.start();
  lib = await connectFlock({ redis: flock.redis.url, namespace: NS, by: 'test' });
  const rare = (name: string, extra: Record<string, unknown> = {}) => ({ name, cron: '0 3 * * *', job: { kind: 'http', url: `${flock!.receiver.url}/${name}` }, ...extra });
  for (const name of ['a', 'b', 'c']) expect((await lib.schedules.upsert(rare(name) as never)).ok).toBe(true);
  const r = await flock.startReplica({ name: 'r1', schedules: '', namespace: NS });
  const metrics = () => get(`${r.adminUrl}/metrics`);
  const total = (t: string) => samplesOf(t, 'cronflock_schedules', { health: 'total' })[0]?.value;
  const series = (t: string, s: string) => samplesOf(t, 'cronflock_schedule_next_fire_timestamp_seconds', { schedule: s });
  await until(async () => total(await metrics()) === 3, 20_000, '3 schedules reported');

  // One batch: add d (tenant beta, every second: it runs and succeeds), change c, remove b.
  const applied = r.lines.filter((l) => l.msg === 'stored schedules applied').length;
  expect((await lib.schedules.upsert(rare('d', { cron: '* * * * * *', tenant: 'beta' }) as never)).ok).toBe(true);
  expect((await lib.schedules.upsert(rare('c', { cron: '0 4 * * *' }) as never)).ok).toBe(true);
  expect((await lib.schedules.remove('b')).ok).toBe(true);
  await until(() => r.lines.filter((l) => l.msg === 'stored schedules applied').length > applied, 15_000, 'the changes applied');

  await until(
    async () => {
      const t = await metrics();
      return total(t) === 3 && series(t, 'd').length === 1 && series(t, 'b').length === 0 && samplesOf(t, 'cronflock_schedule_last_success_timestamp_seconds', { schedule: 'd' }).length === 1;
    },
    20_000,
    'd reported with a last success, b gone, 3 in all',
  );
  const t = await metrics();
  expect(series(t, 'd')[0]!.labels.tenant).toBe('beta');
  // The run counters take the tenant from the replica's schedules by name (the health rows carry their own).
  const runs = samplesOf(t, 'cronflock_runs_total', { schedule: 'd' });
  expect(runs.length).toBeGreaterThan(0);
  for (const s of runs) expect(s.labels.tenant).toBe('beta');
  expect(series(t, 'a')[0]!.labels.tenant).toBeUndefined();
  // c's next fire time is its new cron's (04:00 UTC).
  expect(new Date(series(t, 'c')[0]!.value * 1000).getUTCHours()).toBe(4);
  expect(samplesOf(t, 'cronflock_schedule_last_success_timestamp_seconds', { schedule: 'b' })).toEqual([]);
}, 90_000);
