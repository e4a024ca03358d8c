import { describe, expect, it } from 'vitest';
import { eventName } from './events.js';
import { applyRunChanges, desiredSchedulePart, hasStaleHours, type RunChange, type ScheduleView } from './status.js';
import { addDefaults } from './validate.js';

const T0 = Date.parse('2026-05-01T10:00:00.000Z');
const key = (ms: number): string => `s@${new Date(ms).toISOString()}`;
const started = (dueMs: number, token: number, replica = 'r1'): RunChange => ({ type: 'started', occurrence: key(dueMs), dueMs, replica, fencingToken: token, attempt: token, startMs: dueMs + 5 });
const final = (dueMs: number, state: 'succeeded' | 'failed' | 'missed' | 'skipped', token?: number, atMs = dueMs + 100): RunChange => ({
  type: 'final',
  occurrence: key(dueMs),
  dueMs,
  state,
  ...(token !== undefined ? { fencingToken: token, startMs: dueMs + 5, endMs: dueMs + 90, latenessMs: 5 } : {}),
  replica: 'r1',
  atMs,
});

describe('runs part of a Schedule status', () => {
  it('fills in start, active and result', () => {
    const a = applyRunChanges({}, [started(T0, 1)]);
    expect(a).toMatchObject({ lastScheduleTime: '2026-05-01T10:00:00.000Z', activeCount: 1, active: [{ occurrence: key(T0), replica: 'r1', fencingToken: 1, startTime: '2026-05-01T10:00:00.005Z' }] });
    const b = applyRunChanges(a, [final(T0, 'succeeded', 1)]);
    expect(b).toMatchObject({
      activeCount: 0,
      active: [],
      lastSuccessfulTime: '2026-05-01T10:00:00.090Z',
      lastResult: { occurrence: key(T0), state: 'succeeded', fencingToken: 1, lateness: '5ms', replica: 'r1' },
      last24h: { succeeded: 1, failed: 0, missed: 0, skipped: 0 },
    });
  });

  it('never lets an older occurrence\'s result replace a newer one (a stale writer arriving late)', () => {
    const newer = applyRunChanges({}, [final(T0 + 2000, 'succeeded', 1)]);
    const late = applyRunChanges(newer, [final(T0, 'failed', 1, T0 + 5000)]);
    expect(late.lastResult).toMatchObject({ occurrence: key(T0 + 2000), state: 'succeeded' });
    expect(late.last24h).toEqual({ succeeded: 1, failed: 1, missed: 0, skipped: 0 }); // still counted
    // the same occurrence: a later claim (larger fencing token) wins, an earlier one does not
    const reclaimed = applyRunChanges({}, [final(T0, 'succeeded', 2)]);
    expect(applyRunChanges(reclaimed, [final(T0, 'failed', 1)]).lastResult).toMatchObject({ state: 'succeeded', fencingToken: 2 });
  });

  it('keeps lastScheduleTime and lastSuccessfulTime from going backwards, and ignores manual occurrences for lastScheduleTime', () => {
    const s = applyRunChanges({}, [started(T0 + 2000, 1), started(T0, 1), final(T0 + 2000, 'succeeded', 1), final(T0, 'succeeded', 1)]);
    expect(s.lastScheduleTime).toBe('2026-05-01T10:00:02.000Z');
    expect(s.lastSuccessfulTime).toBe('2026-05-01T10:00:02.090Z');
    const manual = applyRunChanges(s, [{ ...started(T0 + 9000, 1), occurrence: `${key(T0 + 9000)}~manual` } as RunChange]);
    expect(manual.lastScheduleTime).toBe('2026-05-01T10:00:02.000Z');
  });

  it('replaces an active entry only with a later claim, and removes it only for its own claim or a later one', () => {
    const first = applyRunChanges({}, [started(T0, 1, 'r1')]);
    const reclaimed = applyRunChanges(first, [started(T0, 2, 'r2')]);
    expect(reclaimed.active).toEqual([expect.objectContaining({ replica: 'r2', fencingToken: 2 })]);
    // the stale claimant's late start and its release do not touch the new claim
    expect(applyRunChanges(reclaimed, [started(T0, 1, 'r1')]).active).toEqual(reclaimed.active);
    expect(applyRunChanges(reclaimed, [{ type: 'released', occurrence: key(T0), fencingToken: 1 }]).active).toEqual(reclaimed.active);
    expect(applyRunChanges(reclaimed, [final(T0, 'failed', 1)]).active).toEqual(reclaimed.active);
    expect(applyRunChanges(reclaimed, [{ type: 'released', occurrence: key(T0), fencingToken: 2 }]).activeCount).toBe(0);
  });

  it('counts each outcome once per hour bucket and keeps 24 hours of them', () => {
    let s = applyRunChanges({}, [final(T0, 'missed'), final(T0 + 1000, 'skipped')]);
    s = applyRunChanges(s, [final(T0 + 1000, 'skipped')]); // the same outcome again (a retried write): not counted twice
    expect(s.last24h).toEqual({ succeeded: 0, failed: 0, missed: 1, skipped: 1 });
    const later = T0 + 24 * 3_600_000;
    expect(hasStaleHours(s, later)).toBe(true);
    const pruned = applyRunChanges(s, [{ type: 'tick', atMs: later }]);
    expect(pruned.recent).toEqual([]);
    expect(pruned.last24h).toEqual({ succeeded: 0, failed: 0, missed: 0, skipped: 0 });
  });
});

describe('schedule part of a Schedule status', () => {
  const view: ScheduleView = { generation: 3, state: 'runs', messages: [], nextDueMs: T0 + 2000, nextFireMs: T0 + 2150, specSuspended: false, suspendedByCommand: false };

  it('says Ready, not Invalid, not Suspended, with the next due and fire times', () => {
    const p = desiredSchedulePart(view, {}, T0);
    expect(p).toMatchObject({ observedGeneration: 3, nextDueTime: '2026-05-01T10:00:02.000Z', nextFireTime: '2026-05-01T10:00:02.150Z' });
    expect(p.conditions!.map((c) => [c.type, c.status, c.reason])).toEqual([
      ['Ready', 'True', 'Running'],
      ['Invalid', 'False', 'Valid'],
      ['Suspended', 'False', 'NotSuspended'],
    ]);
  });

  it('carries the loader\'s message in Invalid, and keeps lastTransitionTime while a status does not change', () => {
    const before = desiredSchedulePart(view, {}, T0);
    const refused = desiredSchedulePart({ ...view, generation: 4, state: 'kept', reason: 'SpecInvalid', messages: ['spec.jitter: too long'], runningGeneration: 3 }, before, T0 + 5000);
    const byType = Object.fromEntries(refused.conditions!.map((c) => [c.type, c]));
    expect(byType.Invalid).toMatchObject({ status: 'True', reason: 'SpecInvalid', message: 'spec.jitter: too long', lastTransitionTime: '2026-05-01T10:00:05.000Z', observedGeneration: 4 });
    expect(byType.Ready).toMatchObject({ status: 'False', reason: 'PreviousGenerationRunning', message: expect.stringContaining('generation 3 goes on running') });
    expect(byType.Suspended!.lastTransitionTime).toBe('2026-05-01T10:00:00.000Z');
    expect(desiredSchedulePart({ ...view, state: 'refused', messages: ['x'], nextDueMs: undefined, nextFireMs: undefined }, {}, T0).nextFireTime).toBeUndefined();
  });

  it('says Suspended for spec.suspend and for cronflock suspend', () => {
    const c = (v: Partial<ScheduleView>) => desiredSchedulePart({ ...view, ...v }, {}, T0).conditions!.find((x) => x.type === 'Suspended');
    expect(c({ specSuspended: true })).toMatchObject({ status: 'True', reason: 'SpecSuspended' });
    expect(c({ suspendedByCommand: true })).toMatchObject({ status: 'True', reason: 'SuspendedByCommand' });
  });
});

describe('Schedule Events and job defaults', () => {
  it('names an Event by Schedule uid, occurrence, reason and discriminator: the same on every replica', () => {
    const ref = { namespace: 'ns', name: 'tick', uid: 'u1' };
    const a = eventName({ ref, occurrence: key(T0), reason: 'Started', discriminator: 'start-0' });
    expect(a).toMatch(/^tick\.[0-9a-f]{16}$/);
    expect(eventName({ ref, occurrence: key(T0), reason: 'Started', discriminator: 'start-0' })).toBe(a);
    expect(eventName({ ref, occurrence: key(T0), reason: 'Started', discriminator: 'start-1' })).not.toBe(a);
    expect(eventName({ ref: { ...ref, uid: 'u2' }, occurrence: key(T0), reason: 'Started', discriminator: 'start-0' })).not.toBe(a);
  });

  it('gives job kinds with namespace and owner fields the Schedule\'s namespace and the Schedule as owner', () => {
    const ref = { namespace: 'team', name: 'backup', uid: 'u1' };
    expect(addDefaults({ kind: 'job' }, ['kind', 'namespace', 'owner'], ref)).toEqual({
      kind: 'job',
      namespace: 'team',
      owner: { apiVersion: 'cronflock.io/v1alpha1', kind: 'Schedule', name: 'backup', uid: 'u1' },
    });
    // elsewhere: no owner (an owner must live in the namespace of what it owns)
    expect(addDefaults({ kind: 'job', namespace: 'other' }, ['kind', 'namespace', 'owner'], ref)).toEqual({ kind: 'job', namespace: 'other' });
    expect(addDefaults({ kind: 'http', url: 'x' }, ['kind', 'url'], ref)).toEqual({ kind: 'http', url: 'x' });
  });
});
