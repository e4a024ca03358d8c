/**
 * The store scenario's time from an upsert to every replica applying it (bench/lib/apply-latency.ts): read from
 * the replicas' `stored schedule changes applied` log lines, the latest replica counts, a change no replica log
 * covers is counted missing, not taken for instant.
 */
import { describe, expect, it } from 'vitest';
import { appliedMark, applyLatencies } from '../../bench/lib/apply-latency.js';

const line = (version: number, iso: string): string =>
  JSON.stringify({ level: 30, time: iso, replica: 'r1', upToVersion: version, changes: 3, msg: 'stored schedule changes applied' });

describe('time from an upsert to every replica applying it', () => {
  it('reads a replica log line, and nothing else', () => {
    expect(appliedMark(line(42, '2026-12-01T10:00:00.250Z'))).toEqual({ version: 42, atMs: Date.parse('2026-12-01T10:00:00.250Z') });
    expect(appliedMark(JSON.stringify({ time: '2026-12-01T10:00:00.250Z', msg: 'stored schedules applied', added: 1 }))).toBeUndefined();
    expect(appliedMark('not json "stored schedule changes applied"')).toBeUndefined();
  });

  it('takes the first mark at or past the version on each replica, and the latest replica', () => {
    const marks = [
      [
        { version: 5, atMs: 1_010 },
        { version: 9, atMs: 1_020 },
      ],
      [
        { version: 4, atMs: 1_005 },
        { version: 7, atMs: 1_030 },
        { version: 12, atMs: 1_050 },
      ],
    ];
    const r = applyLatencies(
      [
        { version: 5, sentAtMs: 1_000 }, // replica 1 at 1,010, replica 2 at 1,030 → 30
        { version: 9, sentAtMs: 1_001 }, // 1,020 and 1,050 → 49
        { version: 10, sentAtMs: 1_002 }, // replica 1 never got there → missing
      ],
      marks,
    );
    expect(r).toEqual({ latenciesMs: [30, 49], missing: 1 });
  });
});
