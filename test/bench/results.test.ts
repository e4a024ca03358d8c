/**
 * The bench's result writers (bench/lib/results.ts, the throughput table of bench/scenarios/throughput.ts): given
 * figures, the tables have the rows named as before, one column per system and the ratios to BullMQ, and the
 * results page judges each of issue 16's targets met / missed / not measured from the current records. And the
 * Redis counters a bench measures are refused across two server processes.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { counterDelta, redisCounters, type RedisCounters } from '../../bench/lib/redis-stats.js';
import { BenchRedis } from '../../bench/lib/redis.js';
import { historyFile, mergeCurrent, renderRecord, renderResultsPage, targetsTable, type BenchRecord, type RunConditions } from '../../bench/lib/results.js';
import { cellFigures, compareRows, type PhaseResult } from '../../bench/scenarios/throughput.js';

const conditions = (atIso: string): RunConditions => ({
  atIso,
  machine: 'vm (2 × Test CPU)',
  load: { avg: [0.4, 0.3, 0.2], when: 'start' },
  busyBeforePct: 7,
  software: 'Node v24 · Redis 7',
  commit: 'abc1234',
});

/** A phase of `started` occurrences over 10 s with the given Redis cost. */
function phase(system: PhaseResult['system'], o: { started: number; cpuMs: number; calls: number; lateness: number[]; setupMs: number }): PhaseResult {
  return {
    system,
    setupMs: o.setupMs,
    setupCpuMs: o.setupMs / 2,
    started: o.started,
    windowMs: 10_000,
    lateness: o.lateness,
    redis: { runId: 'r', calls: o.calls, scripts: 0, cpuMs: o.cpuMs, byCommand: new Map(), wakeups: o.started },
    cpuMsByProc: [1000, 1000],
    peakRssKbByProc: [100 * 1024, 120 * 1024],
    ...(system === 'bullmq' ? {} : { backlog: 3, states: { succeeded: o.started - 2, running: 2 } }),
  };
}

/** A throughput record of 3 replicas at `offered`/s from per-system figures. */
function throughputRecord(offered: number, atIso: string, cell: Parameters<typeof cellFigures>[0]): BenchRecord {
  return {
    key: `throughput 3×${offered}`,
    table: { title: `throughput ${offered}`, header: ['figure'], rows: compareRows(cell, offered) },
    conditions: conditions(atIso),
    figures: cellFigures(cell, offered, 3),
  };
}

/** The verdict cell of the targets row whose measure starts with `measure`. */
function verdict(page: string, measure: string): string {
  const row = page.split('\n').find((l) => l.startsWith(`| ${measure}`));
  if (!row) throw new Error(`no targets row "${measure}" in:\n${page}`);
  return row.split('|').at(-2)!.trim();
}

describe('throughput table', () => {
  const cell = {
    cronflock: phase('cronflock', { started: 10_000, cpuMs: 500, calls: 300_000, lateness: [1, 2, 3, 40], setupMs: 1500 }),
    cronflock0: phase('cronflock0', { started: 10_000, cpuMs: 800, calls: 400_000, lateness: [5, 6, 7, 90], setupMs: 1500 }),
    bullmq: phase('bullmq', { started: 10_000, cpuMs: 2000, calls: 450_000, lateness: [300, 400, 500, 800], setupMs: 1000 }),
  };
  const rows = compareRows(cell, 1000);
  const byName = new Map(rows.map((r) => [r[0], r.slice(1)]));

  it('keeps the rows named as before, adds final states and set-up CPU, and has one column per system plus two ratios', () => {
    expect(rows.map((r) => r[0])).toEqual([
      'offered occurrences / s',
      'occurrences started / s',
      'start lateness after fire p50 / p99 / max (ms); ratio of p99',
      'Redis commands per occurrence (incl. inside Lua)',
      'Redis CPU per occurrence (µs)',
      'Redis wake-ups per occurrence (voluntary context switches)',
      'Redis CPU (% of one core)',
      'replica / worker CPU, all processes (% of one core)',
      'replica / worker CPU per 1,000 occurrences (ms)',
      'peak RSS of one process (MB)',
      'set-up until running (s)',
      'set-up CPU, all processes (s)',
      'open backlog at the end (fired > 1 s ago, not started)',
      'final states of the occurrences started in the window',
    ]);
    for (const r of rows) expect(r).toHaveLength(6);
  });

  it('computes each system\'s figures per occurrence and each cronflock column\'s ratio to BullMQ', () => {
    // cronflock (jittered) | cronflock (jitter 0) | BullMQ | jittered / BullMQ | jitter 0 / BullMQ
    expect(byName.get('occurrences started / s')).toEqual(['1000', '1000', '1000', '1.00×', '1.00×']);
    expect(byName.get('Redis CPU per occurrence (µs)')).toEqual(['50', '80', '200', '0.25×', '0.40×']);
    expect(byName.get('Redis commands per occurrence (incl. inside Lua)')).toEqual(['30.0', '40.0', '45.0', '0.67×', '0.89×']);
    expect(byName.get('start lateness after fire p50 / p99 / max (ms); ratio of p99')).toEqual(['2 / 40 / 40', '6 / 90 / 90', '400 / 800 / 800', '0.05×', '0.11×']);
    expect(byName.get('final states of the occurrences started in the window')!.slice(0, 2)).toEqual(['succeeded 9998, running 2', 'succeeded 9998, running 2']);
  });

  it('names the figures per system for the targets', () => {
    const f = cellFigures(cell, 1000, 3);
    expect(f['cronflock.redisUsPerOcc']).toBe(50);
    expect(f['cronflock0.redisUsPerOcc']).toBe(80);
    expect(f['bullmq.redisUsPerOcc']).toBe(200);
    expect(f['cronflock0.latenessP99Ms']).toBe(90);
    expect(f['bullmq.setupS']).toBe(1);
    expect(f.offeredPerS).toBe(1000);
  });

  it('shows a system that did not run as "–", and no ratio against it', () => {
    const r = compareRows({ cronflock: cell.cronflock }, 1000);
    expect(r.find((x) => x[0] === 'Redis CPU per occurrence (µs)')).toEqual(['Redis CPU per occurrence (µs)', '50', '–', '–', '–', '–']);
  });
});

describe('results page', () => {
  const good = {
    cronflock: phase('cronflock', { started: 10_000, cpuMs: 500, calls: 300_000, lateness: [1, 2, 3, 20], setupMs: 1200 }),
    cronflock0: phase('cronflock0', { started: 10_000, cpuMs: 800, calls: 300_000, lateness: [1, 2, 3, 24], setupMs: 1400 }),
    bullmq: phase('bullmq', { started: 10_000, cpuMs: 2000, calls: 450_000, lateness: [300, 400, 500, 800], setupMs: 1000 }),
  };

  it('judges a target met when every cronflock column meets it, and names the runs', () => {
    const cur = [throughputRecord(1000, '2026-12-01T04:00:00.000Z', good), throughputRecord(4000, '2026-12-01T04:05:00.000Z', good)];
    const page = renderResultsPage(cur);
    expect(verdict(page, 'Redis CPU per occurrence, 3 replicas')).toBe('met');
    expect(verdict(page, 'start lateness p99 at 1,000/s')).toBe('met');
    expect(verdict(page, 'set-up until running')).toBe('met');
    const row = page.split('\n').find((l) => l.startsWith('| Redis CPU per occurrence, 3 replicas'))!;
    expect(row).toContain('jittered 50 µs vs 200 µs (0.25×)');
    expect(row).toContain('jitter 0 80 µs vs 200 µs (0.40×)');
    expect(row).toContain('throughput 3×1000 (2026-12-01 04:00)');
  });

  it('judges it missed when only the jitter 0 column misses', () => {
    const cell = { ...good, cronflock0: phase('cronflock0', { started: 10_000, cpuMs: 1200, calls: 300_000, lateness: [1, 2, 3, 24], setupMs: 1400 }) };
    const cur = [throughputRecord(1000, '2026-12-01T04:00:00.000Z', cell), throughputRecord(4000, '2026-12-01T04:05:00.000Z', good)];
    expect(verdict(renderResultsPage(cur), 'Redis CPU per occurrence, 3 replicas')).toBe('missed'); // 0.60× > 0.5×
  });

  it('judges lateness missed when p99 is above 25 ms even at ≤ 0.1× BullMQ', () => {
    const cell = { ...good, cronflock: phase('cronflock', { started: 10_000, cpuMs: 500, calls: 300_000, lateness: [1, 2, 3, 30], setupMs: 1200 }) };
    expect(verdict(renderResultsPage([throughputRecord(1000, '2026-12-01T04:00:00.000Z', cell)]), 'start lateness p99 at 1,000/s')).toBe('missed');
  });

  it('says "not measured" without the runs a target needs, and "missed" as soon as a measured part misses', () => {
    const only1000 = [throughputRecord(1000, '2026-12-01T04:00:00.000Z', good)];
    expect(verdict(renderResultsPage(only1000), 'Redis CPU per occurrence, 3 replicas')).toBe('not measured'); // no 4,000 run
    expect(verdict(renderResultsPage([]), 'failover p99 after SIGKILL')).toBe('not measured');
    const bad4000 = { ...good, cronflock: phase('cronflock', { started: 10_000, cpuMs: 1500, calls: 300_000, lateness: [1], setupMs: 1 }) };
    expect(verdict(renderResultsPage([throughputRecord(4000, '2026-12-01T04:05:00.000Z', bad4000)]), 'Redis CPU per occurrence, 3 replicas')).toBe('missed');
  });

  it('judges overload against the saturation rate and the unloaded commands per occurrence', () => {
    const at = (started: number, calls: number): typeof good => ({
      cronflock: phase('cronflock', { started, cpuMs: 1, calls, lateness: [1], setupMs: 1 }),
      cronflock0: phase('cronflock0', { started, cpuMs: 1, calls, lateness: [1], setupMs: 1 }),
      bullmq: phase('bullmq', { started: 10_000, cpuMs: 1, calls: 1, lateness: [1], setupMs: 1 }),
    });
    const base = throughputRecord(1000, '2026-12-01T04:00:00.000Z', at(10_000, 300_000)); // 1,000/s, 30 per occurrence
    const sat = throughputRecord(4000, '2026-12-01T04:05:00.000Z', at(40_000, 1_200_000)); // 4,000/s
    const overloadOk = throughputRecord(8000, '2026-12-01T04:10:00.000Z', at(38_000, 1_300_000)); // 0.95×, 34.2 per occ (1.14×)
    const collapse = throughputRecord(8000, '2026-12-01T04:10:00.000Z', at(20_000, 600_000)); // 0.5×
    const costly = throughputRecord(8000, '2026-12-01T04:10:00.000Z', at(38_000, 1_520_000)); // 40 per occ (1.33×)
    const overload = 'started/s when offered 2×';
    expect(verdict(renderResultsPage([base, sat, overloadOk]), overload)).toBe('met');
    expect(verdict(renderResultsPage([base, sat, collapse]), overload)).toBe('missed');
    expect(verdict(renderResultsPage([base, sat, costly]), overload)).toBe('missed');
    expect(verdict(renderResultsPage([base, sat]), overload)).toBe('not measured'); // 4,000 offered < 2 × 4,000
  });

  it('judges memory, failover and the soak from their figures', () => {
    const rec = (key: string, figures: Record<string, number>): BenchRecord => ({ key, table: { title: key, header: ['x'], rows: [] }, conditions: conditions('2026-12-01T04:00:00.000Z'), figures });
    const page = renderResultsPage([
      rec('failover 500ms', { 'lock500ms.p99Ms': 842 }),
      rec('idle 100000 registered', { '100000.rssMb': 190, '100000.peakRssMb': 310 }),
      rec('idle 1000000 registered', { '0.cpuPct': 3, '1000000.cpuPct': 4, '1000000.rssMb': 900, '1000000.loadS': 25 }),
      rec('soak', { occurrences: 1_000_001, duplicates: 0, misses: 0, unaccounted: 0 }),
    ]);
    expect(verdict(page, 'failover p99 after SIGKILL')).toBe('met');
    expect(verdict(page, 'RSS per replica, 100k')).toBe('missed'); // peak 310 > 300
    expect(verdict(page, 'RSS per replica, 1M')).toBe('met');
    expect(verdict(page, 'soak')).toBe('not measured'); // no cluster / Sentinel failovers yet
    expect(verdict(page, '3-master Redis Cluster')).toBe('not measured');
    expect(verdict(renderResultsPage([rec('failover 500ms', { 'lock500ms.p99Ms': 1001 })]), 'failover p99 after SIGKILL')).toBe('missed');
    expect(verdict(renderResultsPage([rec('soak', { occurrences: 2_000_000, duplicates: 1, misses: 0, unaccounted: 0 })]), 'soak')).toBe('missed');
  });

  it('lists every current record with its conditions, and a later run replaces the one of its key', () => {
    const a = throughputRecord(1000, '2026-12-01T04:00:00.000Z', good);
    const b = { ...throughputRecord(1000, '2026-12-02T09:30:00.000Z', good), table: { title: 'the newer one', header: ['figure'], rows: [] } };
    const cur = mergeCurrent(mergeCurrent([], a), b);
    expect(cur).toHaveLength(1);
    const page = renderResultsPage(cur);
    expect(page).toContain('### the newer one');
    expect(page).toContain('_2026-12-02 09:30 UTC · vm (2 × Test CPU) · load 0.4 0.3 0.2 at the start · machine 7 % busy in the second before · Node v24 · Redis 7 · commit abc1234_');
    expect(targetsTable(cur).rows).toHaveLength(10);
    expect(historyFile(b.conditions)).toBe('bench/history/2026-12-02.md');
    expect(renderRecord(b)).toMatch(/^### the newer one\n\n_2026-12-02 09:30 UTC/);
  });
});

describe('bench Redis counters', () => {
  let redis: BenchRedis;
  let probe: Redis;
  beforeAll(async () => {
    redis = await BenchRedis.start({ appendOnly: false });
    probe = new Redis(redis.url, { maxRetriesPerRequest: 1 });
  });
  afterAll(async () => {
    probe?.disconnect();
    await redis?.cleanup();
  });

  it('reads the server it started and refuses another server process', async () => {
    const info = await probe.info('server');
    expect(redis.runId).toBe(/^run_id:(\w+)/m.exec(info)?.[1]);
    expect(Number(/^process_id:(\d+)/m.exec(info)?.[1])).toBe(redis.pid);
    const a = await redisCounters(probe, redis.runId);
    await probe.set('k', 'v');
    const b = await redisCounters(probe, redis.runId);
    expect(counterDelta(a, b).byCommand.get('set')).toBe(1);
    await expect(redisCounters(probe, 'f'.repeat(40))).rejects.toThrow(/not the one the bench started/);
    const other: RedisCounters = { ...b, runId: 'e'.repeat(40) };
    expect(() => counterDelta(a, other)).toThrow(/two server processes/);
  });
});
