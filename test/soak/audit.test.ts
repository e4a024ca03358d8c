/**
 * The soak's audit must be able to fail: synthetic occurrences with each kind of violation, and the cases that
 * look alike but are not violations (a frozen stale claimant, a re-run after a lost claim).
 */
import { describe, expect, it } from 'vitest';
import type { RunRecord } from '../../runner/records/runs.js';
import { judge, type JudgeInput, type LogFinal } from '../../bench/soak/soak.js';
import type { DeliveryRecord } from '../../bench/soak/receiver.js';

const KEY = 'long-000@2026-01-01T00:00:00.000Z';
const DUE = Date.parse('2026-01-01T00:00:00.000Z');

const rec = (o: Partial<RunRecord> = {}): RunRecord => ({
  key: KEY,
  schedule: 'long-000',
  state: 'succeeded',
  dueMs: DUE,
  fireMs: DUE,
  manual: false,
  fencingToken: 1,
  attempt: 1,
  stalls: 0,
  handovers: 0,
  refused: 0,
  ...o,
});

/** A delivery: claim at +start, received 2 ms later, closed at +close. */
const dl = (token: number, replica: string, start: number, close: number | undefined, how: DeliveryRecord['how'] = 'answered', status = 200): DeliveryRecord => ({
  occurrence: KEY,
  schedule: 'long-000',
  token,
  attempt: token,
  replica,
  startedMs: DUE + start,
  fireMs: DUE,
  dueMs: DUE,
  receivedMs: DUE + start + 2,
  closedMs: close === undefined ? undefined : DUE + close,
  how,
  status: how === 'answered' ? status : undefined,
});

const base = (o: Partial<JudgeInput>): JudgeInput => ({
  key: KEY,
  rec: rec(),
  deliveries: [dl(1, 'r1', 0, 10)],
  finals: [{ state: 'succeeded', token: 1, replica: 'r1' }],
  frozen: () => [],
  epsilonMs: 250,
  endMs: DUE + 60_000,
  ...o,
});

describe('soak audit', () => {
  it('passes a plain success', () => {
    expect(judge(base({}))).toEqual({ problems: [], reRun: false, liveOverlapsMs: [] });
  });

  it('counts a re-run after a lost claim (first call closed before the next claim) as no problem', () => {
    const v = judge(base({ rec: rec({ fencingToken: 2 }), deliveries: [dl(1, 'r1', 0, 10), dl(2, 'r2', 5000, 5010)], finals: [{ state: 'succeeded', token: 2, replica: 'r2' }] }));
    expect(v).toEqual({ problems: [], reRun: true, liveOverlapsMs: [] });
  });

  it('flags two live claimants: the older call stays open, its process running, after the newer claim', () => {
    const v = judge(base({ rec: rec({ fencingToken: 2 }), deliveries: [dl(1, 'r1', 0, 7000), dl(2, 'r2', 5000, 8000)], finals: [{ state: 'succeeded', token: 2, replica: 'r2' }] }));
    expect(v.problems).toEqual(['liveClaimants']);
    expect(v.liveOverlapsMs).toEqual([2000]);
  });

  it('does not flag a stale claimant that was frozen through the overlap and aborted when it resumed', () => {
    const frozen = (r: string): [number, number][] => (r === 'r1' ? [[DUE + 1000, DUE + 6900]] : []);
    const v = judge(base({ rec: rec({ fencingToken: 2 }), deliveries: [dl(1, 'r1', 0, 7000, 'aborted'), dl(2, 'r2', 5000, 8000)], frozen, finals: [{ state: 'succeeded', token: 2, replica: 'r2' }] }));
    expect(v.problems).toEqual([]);
    expect(v.liveOverlapsMs).toEqual([100]);
  });

  it('flags a stale call that reaches the receiver after the newer claim while its process runs', () => {
    const v = judge(base({ rec: rec({ fencingToken: 2 }), deliveries: [dl(2, 'r2', 5000, 5010), dl(1, 'r1', 5600, 5602, 'answered', 409)], finals: [{ state: 'succeeded', token: 2, replica: 'r2' }] }));
    expect(v.problems).toEqual(['liveClaimants']);
  });

  it('flags two accepted successes, the same token twice, and two different final states', () => {
    const two: LogFinal[] = [
      { state: 'succeeded', token: 1, replica: 'r1' },
      { state: 'succeeded', token: 2, replica: 'r2' },
    ];
    expect(judge(base({ finals: two })).problems).toContain('twoSuccesses');
    expect(judge(base({ deliveries: [dl(1, 'r1', 0, 10), dl(1, 'r1', 20, 30)] })).problems).toContain('sameToken');
    expect(judge(base({ finals: [{ state: 'failed', replica: 'r1' }, { state: 'succeeded', token: 1, replica: 'r2' }] })).problems).toContain('twoFinalStates');
  });

  it('flags misses and records that contradict the deliveries', () => {
    expect(judge(base({ rec: null, deliveries: [], finals: [] })).problems).toEqual(['noRecord']);
    expect(judge(base({ rec: null })).problems).toEqual(['ranWithoutRecord', 'noRecord']);
    expect(judge(base({ rec: rec({ state: 'running' }) })).problems).toEqual(['open']);
    expect(judge(base({ rec: rec({ state: 'missed' }), finals: [] })).problems).toEqual(['ranButNotRun']);
    expect(judge(base({ rec: rec({ fencingToken: 3 }) })).problems).toEqual(['successWithoutDelivery']);
    expect(judge(base({ rec: rec({ state: 'failed' }) })).problems).toEqual(['disagree']);
  });
});
