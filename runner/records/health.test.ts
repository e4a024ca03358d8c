import { describe, expect, it } from 'vitest';
import { compileCron } from '../schedule/cron.js';
import { fireTimeMs } from '../schedule/occurrence.js';
import { DEFAULT_OVERDUE_GRACE_MS, overdueGraceMs, scheduleHealth, scheduleNextAndOverdue, type HealthInput } from './health.js';

const MIN = 60_000;
const t = (iso: string): number => Date.parse(iso);

/** Every minute at :00, UTC, no jitter, 30 s grace, existing since 10:00. */
function minutely(over: Partial<HealthInput> = {}): HealthInput {
  return {
    name: 'm',
    due: compileCron('* * * * *', 'UTC'),
    jitterMs: 0,
    graceMs: 30_000,
    lastSuccessMs: undefined,
    sinceMs: t('2026-12-01T10:00:00Z'),
    suspended: false,
    ...over,
  };
}

describe('scheduleHealth', () => {
  it('next fire: the first occurrence that has not fired yet, jitter included', () => {
    const h = scheduleHealth(minutely(), t('2026-12-01T10:05:10Z'));
    expect(h.nextDueMs).toBe(t('2026-12-01T10:06:00Z'));
    expect(h.nextFireMs).toBe(t('2026-12-01T10:06:00Z'));
    // With a jitter window the latest due time may still be ahead of its fire time.
    const s = minutely({ name: 'j', jitterMs: 50_000 });
    const due = t('2026-12-01T10:05:00Z');
    const fire = fireTimeMs('j', due, 50_000);
    const before = scheduleHealth(s, fire - 1);
    expect(before.nextDueMs).toBe(due);
    expect(before.nextFireMs).toBe(fire);
    expect(scheduleHealth(s, fire).nextDueMs).toBe(t('2026-12-01T10:06:00Z'));
  });

  it('not overdue while the last owed run succeeded, or before its grace has passed', () => {
    const now = t('2026-12-01T10:05:20Z');
    // Succeeded after the 10:05 fire: fine.
    expect(scheduleHealth(minutely({ lastSuccessMs: t('2026-12-01T10:05:01Z') }), now).overdueMs).toBe(0);
    // The 10:05 run has not succeeded, but its 30 s grace has not passed; 10:04's succeeded.
    expect(scheduleHealth(minutely({ lastSuccessMs: t('2026-12-01T10:04:02Z') }), now).overdueMs).toBe(0);
  });

  it('overdue from the first owed fire time plus the grace, growing until a success (no sawtooth)', () => {
    const s = minutely({ lastSuccessMs: t('2026-12-01T10:02:03Z') });
    // 10:03 was owed; its grace ended at 10:03:30.
    const h1 = scheduleHealth(s, t('2026-12-01T10:04:00Z'));
    expect(h1.overdueSinceMs).toBe(t('2026-12-01T10:03:30Z'));
    expect(h1.overdueMs).toBe(30_000);
    // Later fire times that also fail do not reset it.
    const h2 = scheduleHealth(s, t('2026-12-01T10:10:40Z'));
    expect(h2.overdueSinceMs).toBe(t('2026-12-01T10:03:30Z'));
    expect(h2.overdueMs).toBe(7 * MIN + 10_000);
    expect(h2.lastExpectedDueMs).toBe(t('2026-12-01T10:10:00Z'));
  });

  it('a schedule never successful is owed from when it exists, not from the beginning of time', () => {
    const s = minutely({ sinceMs: t('2026-12-01T10:00:30Z') });
    expect(scheduleHealth(s, t('2026-12-01T10:01:20Z')).overdueMs).toBe(0); // 10:01's grace ends 10:01:30
    expect(scheduleHealth(s, t('2026-12-01T10:01:45Z')).overdueSinceMs).toBe(t('2026-12-01T10:01:30Z'));
  });

  it('says when a schedule that is not overdue yet will be, unless a success comes first', () => {
    const s = minutely({ lastSuccessMs: t('2026-12-01T10:02:03Z') });
    const h = scheduleHealth(s, t('2026-12-01T10:03:10Z'));
    expect(h.overdueMs).toBe(0);
    expect(h.overdueFromMs).toBe(t('2026-12-01T10:03:30Z')); // 10:03 is owed; its grace ends then
    expect(scheduleHealth(s, h.overdueFromMs!).overdueSinceMs).toBe(h.overdueFromMs);
    expect(scheduleHealth(minutely({ suspended: true }), t('2026-12-01T10:03:10Z')).overdueFromMs).toBeNull();
  });

  it('a suspended schedule is never overdue', () => {
    expect(scheduleHealth(minutely({ suspended: true }), t('2026-12-01T12:00:00Z')).overdueMs).toBe(0);
  });

  it('due times a calendar excludes are not owed', () => {
    // Only even minutes are expected; the last success at 10:02:05, now 10:03:50: 10:03 is not owed.
    const s = minutely({ lastSuccessMs: t('2026-12-01T10:02:05Z'), expected: (d) => new Date(d).getUTCMinutes() % 2 === 0 });
    const h = scheduleHealth(s, t('2026-12-01T10:03:50Z'));
    expect(h.overdueMs).toBe(0);
    expect(h.nextDueMs).toBe(t('2026-12-01T10:04:00Z'));
    expect(h.lastExpectedDueMs).toBe(t('2026-12-01T10:02:00Z'));
    expect(scheduleHealth(s, t('2026-12-01T10:04:31Z')).overdueMs).toBe(1000);
  });

  it('the grace: an explicit one, else the timeout, else 5 minutes', () => {
    expect(overdueGraceMs({ timeoutMs: null })).toBe(DEFAULT_OVERDUE_GRACE_MS);
    expect(overdueGraceMs({ timeoutMs: 90_000 })).toBe(90_000);
    expect(overdueGraceMs({ timeoutMs: 90_000, overdueGraceMs: 10_000 })).toBe(10_000);
  });

  it('scheduleNextAndOverdue (the metrics\' cheaper form) gives what scheduleHealth gives, fire times from the key hash', () => {
    const every2s = (over: Partial<HealthInput>): HealthInput => minutely({ due: compileCron('*/2 * * * * *', 'UTC'), graceMs: 3_000, ...over });
    const inputs: HealthInput[] = [
      minutely(),
      minutely({ name: 'j', jitterMs: 50_000, lastSuccessMs: t('2026-12-01T10:03:30Z') }),
      minutely({ name: 'late', jitterMs: 90_000, lastSuccessMs: t('2026-12-01T10:01:10Z') }), // jitter longer than the period
      minutely({ name: 'cal', jitterMs: 20_000, expected: (d) => new Date(d).getUTCMinutes() % 3 === 0 }),
      minutely({ name: 'susp', jitterMs: 20_000, suspended: true }),
      every2s({ name: 's', jitterMs: 1_999, lastSuccessMs: t('2026-12-01T10:05:01Z') }),
    ];
    let checked = 0;
    for (const s of inputs) {
      for (let now = t('2026-12-01T10:04:00Z'); now < t('2026-12-01T10:08:00Z'); now += 7_919) {
        const full = scheduleHealth(s, now);
        const h = scheduleNextAndOverdue(s, now);
        expect(h).toEqual({ nextDueMs: full.nextDueMs, nextFireMs: full.nextFireMs, overdueFromMs: full.overdueFromMs, overdueSinceMs: full.overdueSinceMs, overdueMs: full.overdueMs });
        // Fire times as every replica computes them (not a remembered value of another due time).
        expect(h.nextFireMs).toBe(fireTimeMs(s.name, h.nextDueMs!, s.jitterMs));
        if (full.lastExpectedDueMs !== null) expect(full.lastExpectedFireMs).toBe(fireTimeMs(s.name, full.lastExpectedDueMs, s.jitterMs));
        expect(h.nextFireMs!).toBeGreaterThan(now);
        if (h.overdueFromMs !== null) {
          // The first owed occurrence's fire time plus the grace.
          const owedDue = s.due.last(h.overdueFromMs - s.graceMs);
          const candidates = [owedDue!, s.due.last(owedDue! - 1)!, s.due.last(owedDue! - 1 - MIN)!].map((d) => fireTimeMs(s.name, d, s.jitterMs));
          expect(candidates).toContain(h.overdueFromMs - s.graceMs);
        }
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(150);
  });
});
