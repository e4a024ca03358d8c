/**
 * The short chaos soak (issue 4): five replica processes on one Redis, an HTTP receiver, and every kind of
 * fault — SIGKILL, SIGSTOP past the lock, Redis restarts on its AOF, host clock offsets, jobs held past their
 * timeout — for 90 s. Every occurrence of the audited window must end in exactly one final state, consistent with
 * what the receiver and the replicas saw: 0 duplicates, 0 misses, 0 unaccounted (definitions in
 * bench/soak/soak.ts). The long version is `npm run soak -- --minutes N`.
 */
import { describe, expect, it } from 'vitest';
import { FAULT_KINDS, runSoak, soakRows } from '../../bench/soak/soak.js';

describe('chaos soak (short)', () => {
  it('loses, duplicates and leaves unaccounted no occurrence under faults', { timeout: 240_000 }, async () => {
    const r = await runSoak({ minutes: 1.5, lock: '2s', log: (l) => process.stdout.write(`${l}\n`) });
    const table = soakRows(r)
      .map(([k, v]) => `${k}: ${v}`)
      .join('\n');
    const detail = `${table}\n${r.examples.join('\n')}`;
    process.stdout.write(`${detail}\n`);
    for (const k of FAULT_KINDS) expect(r.faults[k] ?? 0, `${k} faults\n${detail}`).toBeGreaterThanOrEqual(1);
    expect(r.expected, detail).toBeGreaterThan(5000);
    expect(r.crashes, detail).toEqual([]);
    expect(r.duplicates, detail).toMatchObject({ total: 0 });
    expect(r.misses, detail).toMatchObject({ total: 0 });
    expect(r.unaccounted, detail).toMatchObject({ total: 0 });
  });
});
