/**
 * Blackout windows and the planner's window step: skip / delay / abort, windows that meet, the starting
 * deadline counted from the original fire time, and the order against the time-based decision.
 */
import { describe, expect, it } from 'vitest';
import { parseScheduleText } from '../config/load.js';
import { fireTimeMs } from '../schedule/occurrence.js';
import { offerOf } from './planner.js';
import { armBlackoutAbort, startingDeadlineForClaimMs, windowDisposition } from './windows.js';

const JOB = 'job: {kind: http, url: "http://127.0.0.1:1/"}';
const at = (s: string): number => Date.parse(s);

async function schedule(extra: string, head = '') {
  const res = await parseScheduleText(`${head}schedules:\n  - name: s\n    cron: "*/10 * * * *"\n${extra}    ${JOB}\n`, 'w.yaml');
  expect(res.errors.map((e) => e.format())).toEqual([]);
  return res.schedules[0]!;
}

describe('blackout windows', () => {
  it('skip and abort windows skip occurrences firing inside them; the window end is exclusive', async () => {
    const s = await schedule(`    blackouts:
      - {name: backup, cron: "0 2 * * *", duration: 30m, action: skip}
      - {name: deploy, cron: "0 4 * * *", duration: 10m, action: abort}
`);
    const d = (iso: string) => windowDisposition(s, at(iso), at(iso));
    expect(d('2026-03-02T01:50:00Z')).toEqual({ disposition: 'run', reason: '', fireMs: at('2026-03-02T01:50:00Z') });
    expect(d('2026-03-02T02:00:00Z')).toMatchObject({ disposition: 'skipped', reason: 'blackout backup' });
    expect(d('2026-03-02T02:20:00Z')).toMatchObject({ disposition: 'skipped', reason: 'blackout backup' });
    expect(d('2026-03-02T02:30:00Z')).toMatchObject({ disposition: 'run', reason: '' });
    expect(d('2026-03-02T04:00:00Z')).toMatchObject({ disposition: 'skipped', reason: 'blackout deploy' });
    expect(d('2026-03-02T04:10:00Z')).toMatchObject({ disposition: 'run' });
  });

  it('delay moves the fire time to the window end plus the occurrence\'s jitter offset; windows that overlap are one', async () => {
    const s = await schedule(`    jitter: 5m
    blackouts:
      - {name: maint, cron: "0 2,3 * * *", duration: 70m, action: delay}
`);
    // 02:00-03:10 and 03:00-04:10 overlap: one window until 04:10. The last due time in it runs then.
    const due = at('2026-03-02T04:00:00Z');
    const fire = fireTimeMs('s', due, s.jitterMs);
    const offset = fire - due;
    expect(windowDisposition(s, due, fire)).toEqual({
      disposition: 'run',
      reason: 'delayed: blackout maint until 2026-03-02T04:10:00.000Z',
      fireMs: at('2026-03-02T04:10:00Z') + offset,
    });
    const w = s.windows!.blackouts[0]!;
    expect(w.endOf(at('2026-03-02T02:10:00Z'))).toBe(at('2026-03-02T04:10:00Z'));
    expect(w.endOf(at('2026-03-02T04:10:00Z'))).toBeNull();
    // The earlier ones it delayed do not pile up at 04:10: they are skipped, saying why.
    const early = at('2026-03-02T02:10:00Z');
    expect(windowDisposition(s, early, fireTimeMs('s', early, s.jitterMs))).toMatchObject({
      disposition: 'skipped',
      reason: 'blackout maint (a later occurrence it delayed runs instead)',
    });
  });

  it('with catchUp: all, the latest maxCatchUpRuns occurrences a window delayed run', async () => {
    const s = await schedule(`    catchUp: all
    maxCatchUpRuns: 2
    blackouts: [{name: maint, cron: "0 2 * * *", duration: 1h, action: delay}]
`);
    const dues = ['02:00', '02:10', '02:20', '02:30', '02:40', '02:50', '03:00'].map((t) => at(`2026-03-02T${t}:00Z`));
    expect(dues.map((d) => windowDisposition(s, d, d)).map((x) => `${x.disposition} ${new Date(x.fireMs).toISOString().slice(11, 16)}`)).toEqual([
      'skipped 02:00',
      'skipped 02:10',
      'skipped 02:20',
      'skipped 02:30',
      'run 03:00',
      'run 03:00',
      'run 03:00',
    ]);
  });

  it('a delay that lands in a skip window is skipped; a delay past the starting deadline (from the original fire) is missed', async () => {
    const s = await schedule(`    startingDeadline: 45m
    blackouts:
      - {name: long, cron: "0 2 * * *", duration: 1h, action: delay}
      - {name: short, cron: "0 5 * * *", duration: 20m, action: delay}
      - {name: after, cron: "20 5 * * *", duration: 10m, action: skip}
`);
    expect(windowDisposition(s, at('2026-03-02T02:10:00Z'), at('2026-03-02T02:10:00Z'))).toEqual({
      disposition: 'missed',
      reason: 'starting deadline exceeded (delayed: blackout long until 2026-03-02T03:00:00.000Z)',
      fireMs: at('2026-03-02T02:10:00Z'),
    });
    expect(windowDisposition(s, at('2026-03-02T02:50:00Z'), at('2026-03-02T02:50:00Z'))).toMatchObject({ disposition: 'run', fireMs: at('2026-03-02T03:00:00Z') });
    expect(windowDisposition(s, at('2026-03-02T05:00:00Z'), at('2026-03-02T05:00:00Z'))).toMatchObject({ disposition: 'skipped', reason: 'blackout after' });
    // The claim script counts the deadline from the recorded (delayed) fire time: it gets what is left of it.
    expect(startingDeadlineForClaimMs(s, { dueMs: at('2026-03-02T02:20:00Z'), fireMs: at('2026-03-02T03:00:00Z') })).toBe(5 * 60_000);
    expect(startingDeadlineForClaimMs(s, { dueMs: at('2026-03-02T02:20:00Z'), fireMs: at('2026-03-02T02:20:00Z') })).toBe(45 * 60_000);
    expect(startingDeadlineForClaimMs(s, { dueMs: at('2026-03-02T02:20:00Z'), fireMs: at('2026-03-02T09:00:00Z'), origin: 'manual' })).toBe(45 * 60_000);
  });

  it('a calendar blackout lasts whole local days of its calendar\'s zone', async () => {
    const s = await schedule(
      `    blackouts: [{calendar: freeze, action: delay}]\n`,
      'calendars:\n  - {name: freeze, timeZone: Europe/Berlin, ranges: [{from: "2026-12-24", to: "2026-12-27"}]}\n',
    );
    expect(windowDisposition(s, at('2026-12-23T22:50:00Z'), at('2026-12-23T22:50:00Z'))).toMatchObject({ disposition: 'run', reason: '' });
    expect(windowDisposition(s, at('2026-12-23T23:00:00Z'), at('2026-12-23T23:00:00Z'))).toMatchObject({ disposition: 'skipped', reason: 'blackout freeze (a later occurrence it delayed runs instead)' });
    expect(windowDisposition(s, at('2026-12-27T22:50:00Z'), at('2026-12-27T22:50:00Z'))).toEqual({
      disposition: 'run',
      reason: 'delayed: blackout freeze until 2026-12-27T23:00:00.000Z',
      fireMs: at('2026-12-27T23:00:00Z'),
    });
    const w = s.windows!.blackouts[0]!;
    expect(w.nextStart(at('2026-12-01T00:00:00Z'), at('2027-01-01T00:00:00Z'))).toBe(at('2026-12-23T23:00:00Z'));
    expect(w.nextStart(at('2026-12-24T10:00:00Z'), at('2027-01-01T00:00:00Z'))).toBeNull();
  });

  it('calendar exclusions come before the time-based decision: skipped due times are fixed and take no catch-up places', async () => {
    const s = await schedule(
      `    timeZone: UTC\n    catchUp: latest\n    calendar: {exclude: sunday}\n`,
      'calendars:\n  - {name: sunday, weekdays: [SUN]}\n',
    );
    // Saturday 23:40 and 23:50, then Sunday 00:00 and 00:10 (excluded): the plan script's catch-up count looks
    // only at the Saturday ones, so if all are overdue, latest runs 23:50, not 00:10.
    const cands = ['2026-03-07T23:40:00Z', '2026-03-07T23:50:00Z', '2026-03-08T00:00:00Z', '2026-03-08T00:10:00Z'].map((x) => ({ dueMs: at(x), fireMs: at(x) }));
    const items = offerOf(s, cands);
    expect(items.map((it) => [it.fixed ?? null, it.keepFireMs])).toEqual([
      [null, at('2026-03-07T23:50:00Z')],
      [null, null],
      [{ state: 'skipped', reason: 'calendar sunday' }, null],
      [{ state: 'skipped', reason: 'calendar sunday' }, null],
    ]);
    expect(items.every((it) => it.delay === undefined && it.policy === s)).toBe(true);
  });

  it('a delayed occurrence is offered at the window end with its reason and its original fire time', async () => {
    const s = await schedule(`    timeZone: UTC\n    blackouts: [{name: maint, cron: "0 2 * * *", duration: 30m, action: delay}]\n`);
    const due = at('2026-03-02T02:20:00Z');
    expect(offerOf(s, [{ dueMs: due, fireMs: due }])[0]).toMatchObject({
      fireMs: at('2026-03-02T02:30:00Z'),
      delay: { reason: 'delayed: blackout maint until 2026-03-02T02:30:00.000Z', originalFireMs: due },
      keepFireMs: null,
    });
    expect(offerOf(s, [{ dueMs: due, fireMs: due }])[0]!.fixed).toBeUndefined();
  });

  it('arms an abort at the next abort window start, at once inside one, and not at all without abort windows', async () => {
    const s = await schedule(`    blackouts: [{name: stop, cron: "*/10 * * * *", duration: 1m, action: abort}]\n`);
    let now = at('2026-03-02T02:09:59.950Z');
    const opened: string[] = [];
    const disarm = armBlackoutAbort(s, () => now, (name) => opened.push(name));
    await new Promise((r) => setTimeout(r, 20));
    expect(opened).toEqual([]);
    now = at('2026-03-02T02:10:00.000Z');
    await new Promise((r) => setTimeout(r, 100)); // the timer was set for 51 ms
    expect(opened).toEqual(['stop']);
    disarm();
    const inside: string[] = [];
    armBlackoutAbort(s, () => at('2026-03-02T02:10:30Z'), (name) => inside.push(name))();
    expect(inside).toEqual(['stop']);
    const plain = await schedule('');
    const never: string[] = [];
    armBlackoutAbort(plain, () => at('2026-03-02T02:10:30Z'), (n) => never.push(n))();
    expect(never).toEqual([]);
  });
});
