/**
 * Acceptance: a run waiting to retry keeps its place under every concurrency policy (issue 12), on real Redis
 * with two replica processes and a job that always fails. An occurrence that has started ends succeeded or
 * failed, never skipped or missed; the policy decides about *new* occurrences only:
 * - Forbid: a later occurrence is skipped (overlap) while an earlier one waits to retry;
 * - Replace: a later occurrence ends the one waiting to retry `failed: replaced` and starts;
 * - Allow with maxConcurrent: the run waiting to retry keeps its slot; later ones wait for it.
 * Attempts never overlap in time under any of the three, and the metrics count the final failures as failed.
 */
import { spawnSync } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import type { RunRecord } from '../../runner/records/runs.js';
import { Flock, sleep, until } from '../support/flock.js';
import type { Delivery } from '../support/receiver.js';
import { BIN, ROOT } from '../support/replica.js';

const OPEN = ['scheduled', 'running', 'retrying'];

/** Sums a metric's samples over scrapes, keeping lines whose labels include `labels`. */
function sum(texts: string[], name: string, labels: Record<string, string>): number {
  let total = 0;
  for (const line of texts.join('\n').split('\n')) {
    if (!line.startsWith(`${name}{`)) continue;
    if (Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`))) total += Number(line.split(' ').pop());
  }
  return total;
}

/** No two calls of the job were in progress at once (each call: received … answered). */
function expectNoOverlap(ds: Delivery[]): void {
  const spans = ds.map((d) => [d.receivedMs, d.answeredMs ?? d.abortedMs ?? Infinity] as const).sort((a, b) => a[0] - b[0]);
  for (let i = 1; i < spans.length; i++) expect(spans[i]![0], `call ${i} started before call ${i - 1} ended`).toBeGreaterThanOrEqual(spans[i - 1]![1]);
}

/** Every occurrence that started (an attempt was claimed) ended succeeded or failed, or is still open. */
function expectStartedNeverSkipped(runs: RunRecord[]): void {
  const bad = runs.filter((r) => r.attempt > 0 && (r.state === 'skipped' || r.state === 'missed'));
  expect(bad.map((r) => `${r.key} ${r.state}: ${r.reason} (attempt ${r.attempt}, error ${r.error})`)).toEqual([]);
}

describe('a run waiting to retry keeps its place', () => {
  let flock: Flock;
  afterEach(() => flock?.close());

  /** Starts two replicas on one always-failing schedule; runs it `forMs`, suspends it, waits for every record to end. */
  async function scenario(name: string, yaml: string, forMs: number): Promise<{ runs: RunRecord[]; metrics: string[] }> {
    flock = await Flock.start();
    flock.receiver.status.set(name, 500);
    flock.receiver.holdMs.set(name, 500);
    const file = flock.writeSchedules(`schedules:
  - name: ${name}
${yaml}
    job: { kind: http, url: ${flock.receiver.url}/${name} }
`);
    const rs = [await flock.startReplica({ name: 'r1', schedules: file }), await flock.startReplica({ name: 'r2', schedules: file })];
    await sleep(forMs);
    const r = spawnSync(process.execPath, [BIN, 'suspend', name, '--redis', flock.redis.url], { cwd: ROOT, encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    const suspendedAt = Date.now();
    // Retries go on after the suspension (it applies to occurrences that have not started): wait for them. (The
    // planner goes on planning later due times, which are recorded skipped when they fire.)
    const settled = (x: RunRecord): boolean => x.dueMs > suspendedAt || !OPEN.includes(x.state);
    await until(async () => (await flock.runs(name)).every(settled), 60_000, 'every record due before the suspension final');
    const metrics = await Promise.all(rs.map(async (x) => (await fetch(`${x.adminUrl}/metrics`)).text()));
    return { runs: (await flock.runs(name)).filter((x) => x.dueMs <= suspendedAt), metrics };
  }

  it('Forbid: later occurrences are skipped (overlap) while one waits to retry; the failing one ends failed', async () => {
    // The reproduction of issue 12: every 4 s, a job that takes 500 ms and always fails, two retries 3 s apart.
    const { runs, metrics } = await scenario('fb', '    cron: "*/4 * * * * *"\n    concurrencyPolicy: Forbid\n    retries: 2\n    retryBackoff: 3s', 24_000);
    expectStartedNeverSkipped(runs);
    const failed = runs.filter((r) => r.state === 'failed');
    expect(failed.length).toBeGreaterThanOrEqual(2);
    for (const r of failed) expect(r).toMatchObject({ attempt: 3, reason: 'job failed', error: 'answered 500: ok' });
    const skipped = runs.filter((r) => r.state === 'skipped' && r.reason !== 'suspended');
    expect(skipped.length).toBeGreaterThanOrEqual(2);
    for (const r of skipped) {
      expect(r.reason).toMatch(/^overlap: fb@\S+ (waiting to retry|still running) \(concurrencyPolicy Forbid\)$/);
      expect(r.attempt).toBe(0);
    }
    expect(skipped.some((r) => r.reason!.includes('waiting to retry'))).toBe(true);
    const calls = flock.receiver.of('fb');
    expect(calls.filter((d) => skipped.some((r) => r.key === d.body.occurrence))).toEqual([]);
    expectNoOverlap(calls);
    // An always-failing job shows its failures: each final failure counted once, as failed.
    expect(sum(metrics, 'cronflock_runs_total', { schedule: 'fb', state: 'failed' })).toBe(failed.length);
    expect(sum(metrics, 'cronflock_runs_total', { schedule: 'fb', state: 'retrying' })).toBe(2 * failed.length);
    expect(sum(metrics, 'cronflock_occurrences_not_run_total', { schedule: 'fb', state: 'skipped', reason: 'overlap' })).toBe(skipped.length);
  });

  it('Replace: a later occurrence ends the one waiting to retry failed (replaced), and starts', async () => {
    const { runs, metrics } = await scenario('rp', '    cron: "*/4 * * * * *"\n    concurrencyPolicy: Replace\n    retries: 3\n    retryBackoff: 4s', 22_000);
    expectStartedNeverSkipped(runs);
    const replaced = runs.filter((r) => r.state === 'failed' && r.reason === 'replaced');
    expect(replaced.length).toBeGreaterThanOrEqual(2);
    for (const r of replaced) {
      expect(r.attempt).toBeGreaterThanOrEqual(1);
      const by = /^replaced by (rp@\S+) \(concurrencyPolicy Replace\)$/.exec(r.error ?? '')?.[1];
      expect(by, r.error).toBeDefined();
      const newer = runs.find((x) => x.key === by)!;
      expect(newer.dueMs).toBeGreaterThan(r.dueMs);
      expect(newer.firstStartMs!).toBeGreaterThanOrEqual(r.endMs!); // the newer started once the older had ended
    }
    expect(runs.filter((r) => r.state === 'skipped' && r.reason !== 'suspended')).toEqual([]);
    expectNoOverlap(flock.receiver.of('rp'));
    expect(sum(metrics, 'cronflock_runs_total', { schedule: 'rp', state: 'failed' })).toBe(runs.filter((r) => r.state === 'failed').length);
  });

  it('Allow with maxConcurrent 1: the run waiting to retry keeps its slot; later ones start after it ended', async () => {
    const { runs, metrics } = await scenario('mc', '    cron: "*/2 * * * * *"\n    maxConcurrent: 1\n    retries: 2\n    retryBackoff: 2s', 14_000);
    expectStartedNeverSkipped(runs);
    const ran = runs.filter((r) => r.attempt > 0).sort((a, b) => a.firstStartMs! - b.firstStartMs!);
    expect(ran.length).toBeGreaterThanOrEqual(2);
    for (const r of ran) expect(r).toMatchObject({ state: 'failed', attempt: 3, error: 'answered 500: ok' });
    // One occurrence at a time, all its retries included: the next one's first attempt comes after its end.
    for (let i = 1; i < ran.length; i++) expect(ran[i]!.firstStartMs!).toBeGreaterThanOrEqual(ran[i - 1]!.endMs!);
    expectNoOverlap(flock.receiver.of('mc'));
    expect(sum(metrics, 'cronflock_runs_total', { schedule: 'mc', state: 'failed' })).toBe(ran.length);
  });
});
