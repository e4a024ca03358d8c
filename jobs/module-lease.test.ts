/**
 * A module job's process and its claim's lease, with real child processes and a lease that this test renews by
 * hand (no Redis: the lease deadlines and heartbeats on fd 4 are the subject): the process acts on the deadlines
 * only once its replica's heartbeats are stale, and a heartbeat sent after the kill deadline does not count, so
 * the process is gone before the lease end whether its replica hangs or answers without renewing.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { leaseMargins, runSandboxed } from './module-sandbox.js';
import { HEARTBEAT_MS, HEARTBEAT_STALE_MS } from './module-heartbeat.js';
import type { JobContext, JobLease } from './types.js';

const TICKS = fileURLToPath(new URL('../test/fixtures/modules/ticks.mjs', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'cronflock-lease-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A lease renewed only by {@link renew}: `untilMono` is `performance.now()` based, as the ClaimHolder's. */
class HandLease implements JobLease {
  readonly ttlMs = 2000;
  untilMono = performance.now() + this.ttlMs;
  private readonly listeners = new Set<(u: number) => void>();
  onRenewed(f: (u: number) => void): () => void {
    this.listeners.add(f);
    return () => this.listeners.delete(f);
  }
  /** As a successful renewal sent now: the lease lasts ttlMs from now. */
  renew(): number {
    this.untilMono = performance.now() + this.ttlMs;
    for (const f of this.listeners) f(this.untilMono);
    return this.untilMono;
  }
}

const occurrence = { schedule: 'a', key: 'a@2026-01-01T00:00:00.000Z', dueMs: 0, fireMs: 0, startMs: 0, attempt: 1, fencingToken: 1, manual: false };
const ctx = (lease: JobLease): JobContext => ({
  occurrence,
  signal: new AbortController().signal,
  replica: 'test-replica',
  log: { info: () => undefined, warn: () => undefined, error: () => undefined, debug: () => undefined },
  lease,
});

/** Wall-clock ms of the ticks written (ticks.mjs: "<pid> <Date.now()> …" lines; it ignores its signal). */
const ticks = (file: string): number[] =>
  existsSync(file)
    ? readFileSync(file, 'utf8').split('\n').filter(Boolean).map((l) => Number(l.split(' ')[1]))
    : [];

/** Waits for the job's first tick, renewing the lease meanwhile as a healthy replica does (every ttl/3). */
async function started(file: string, lease: HandLease): Promise<void> {
  const renewing = setInterval(() => lease.renew(), lease.ttlMs / 3);
  try {
    const end = Date.now() + 30_000;
    while (ticks(file).length === 0) {
      if (Date.now() > end) throw new Error('the job did not start within 30 s');
      await new Promise((r) => setTimeout(r, 20));
    }
  } finally {
    clearInterval(renewing);
  }
}

// Room for tsx (this test runs the TypeScript host): transforming an edited source needs more than 512 MiB.
const limits = { loadTimeoutMs: 30_000, memoryLimitMb: 2048 };

/** Starts the ticking job in a process under a hand-renewed lease and waits for its first tick. */
async function startTicking(file: string): Promise<{ lease: HandLease; outcome: Promise<string> }> {
  const lease = new HandLease();
  const run = runSandboxed('process', ctx(lease), { file: TICKS, params: { ms: 6000, every: 20, file }, occurrence, replica: 'test-replica' }, limits);
  const outcome = run.then(() => 'resolved', (e: Error) => e.message);
  await Promise.race([started(file, lease), run]); // a job that fails at once says why
  return { lease, outcome };
}

describe('module job process and its lease', () => {
  it('a replica that answers but does not renew: the process waits past abortAt (heartbeats), then ends before the lease end', async () => {
    const file = join(dir, 'answers');
    const { lease, outcome } = await startTicking(file);
    const renewedMono = performance.now();
    const renewedWall = Date.now();
    const untilMono = lease.renew(); // the last renewal: none after it, but this process keeps answering
    const { marginMs, graceMs } = leaseMargins(lease.ttlMs);
    const message = await outcome;
    const endedMono = performance.now();
    expect(message).toMatch(/ended itself at the claim's lease end/);
    // Not at abortAt (lease end − margin − grace): its heartbeats came, so it left that deadline to us…
    expect(endedMono).toBeGreaterThan(untilMono - marginMs - graceMs + 200);
    // …but a heartbeat sent after killAt proves no lease: it ended once the last beat before killAt (at most one
    // period before it) was stale, before the lease end.
    expect(endedMono).toBeGreaterThanOrEqual(untilMono - marginMs + HEARTBEAT_STALE_MS - HEARTBEAT_MS - 20);
    const last = Math.max(...ticks(file));
    expect(last - renewedWall).toBeLessThan(untilMono - renewedMono);
  });

  it('a hung replica (its event loop blocked: no heartbeats): the signal fires at abortAt and the process ends at killAt', async () => {
    const file = join(dir, 'hung');
    const { lease, outcome } = await startTicking(file);
    const renewedMono = performance.now();
    const renewedWall = Date.now();
    const untilMono = lease.renew();
    const { marginMs } = leaseMargins(lease.ttlMs);
    while (performance.now() < untilMono + 200) {
      /* hung: no timer, no heartbeat, no renewal, until past the lease end */
    }
    expect(await outcome).toMatch(/ended itself at the claim's lease end/);
    const last = Math.max(...ticks(file));
    // It stopped writing at killAt (lease end − margin), with room for its own timer on a busy host.
    expect(last - renewedWall).toBeLessThan(untilMono - renewedMono - marginMs + 150);
  });
});
