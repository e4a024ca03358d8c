/**
 * Issue 17 points 1-2 end to end, on a real redis-server and a real replica process, with second-level crons:
 * a calendar-excluded occurrence is recorded `skipped: calendar <name>`, a blackout with `delay` runs the
 * occurrence when its window ends (and says so in the record), and `abort` fires the AbortSignal of a running
 * job when its window opens (recorded `failed: blackout <name>`, not retried).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Flock, until } from '../support/flock.js';
import { readEvents } from '../support/events.js';
import { BIN, ROOT } from '../support/replica.js';

const SLOW = new URL('../fixtures/jobs/slow.mjs', import.meta.url).pathname;
const day = (offsetDays: number): string => new Date(Date.now() + offsetDays * 86_400_000).toISOString().slice(0, 10);

describe('calendars and blackout windows on a running flock', () => {
  let flock: Flock;
  afterEach(() => flock?.close());

  it('records calendar skips, delays runs to the window end, and aborts runs when an abort window opens', async () => {
    flock = await Flock.start();
    const events = join(flock.dir, 'events.jsonl');
    const file = flock.writeSchedules(`calendars:
  - name: today
    timeZone: UTC
    dates: ["${day(-1)}", "${day(0)}", "${day(1)}"]
schedules:
  - name: cal-skip
    cron: "* * * * * *"
    calendar: {exclude: today}
    job: { kind: http, url: ${flock.receiver.url}/skip }
  - name: bo-delay
    cron: "* * * * * *"
    blackouts:
      - {name: pause, cron: "*/10 * * * * *", duration: 4s, action: delay}
    job: { kind: http, url: ${flock.receiver.url}/delay }
  - name: bo-abort
    cron: "*/10 * * * * *"
    retries: 2
    blackouts:
      - {name: stop, cron: "5,15,25,35,45,55 * * * * *", duration: 1s, action: abort}
    job: { kind: module, path: ${SLOW}, params: { ms: 8000, events: ${events} } }
`);
    await flock.startReplica({ name: 'r1', schedules: file });

    // Delay: wait for a delayed occurrence that has run.
    await until(async () => (await flock.runs('bo-delay')).some((r) => r.state === 'succeeded' && r.reason?.startsWith('delayed:')), 30_000, 'a delayed run');
    // Abort: wait for a run stopped by its blackout.
    await until(async () => (await flock.runs('bo-abort')).some((r) => r.state === 'failed'), 30_000, 'an aborted run');

    const skipped = await flock.runs('cal-skip');
    expect(skipped.length).toBeGreaterThanOrEqual(5);
    for (const r of skipped) expect(r, r.key).toMatchObject({ state: 'skipped', reason: 'calendar today', attempt: 0 });
    expect(flock.receiver.deliveries.filter((c) => c.path === '/skip')).toEqual([]);

    const delayAll = await flock.runs('bo-delay');
    const delayRuns = delayAll.filter((r) => r.state === 'succeeded');
    const delayed = delayRuns.filter((r) => r.reason?.startsWith('delayed:'));
    const onTime = delayRuns.filter((r) => !r.reason);
    expect(delayed.length).toBeGreaterThanOrEqual(1);
    expect(onTime.length).toBeGreaterThanOrEqual(1);
    for (const r of delayed) {
      const windowEnd = Math.floor(r.dueMs / 10_000) * 10_000 + 4_000;
      expect(r.dueMs % 10_000, r.key).toBe(3_000); // the latest due time in the window; the others do not pile up
      expect(r.fireMs, r.key).toBe(windowEnd);
      expect(r.reason).toBe(`delayed: blackout pause until ${new Date(windowEnd).toISOString()}`);
      expect(r.startMs!, r.key).toBeGreaterThanOrEqual(windowEnd);
      expect(r.latenessMs!, r.key).toBeLessThan(2_000); // lateness counts from the delayed fire time
    }
    const superseded = delayAll.filter((r) => r.state === 'skipped');
    expect(superseded.length).toBeGreaterThanOrEqual(1); // 3 per window; the first window may have begun before the replica
    for (const r of superseded) {
      expect(r.dueMs % 10_000, r.key).toBeLessThan(3_000);
      expect(r.reason).toBe('blackout pause (a later occurrence it delayed runs instead)');
    }
    for (const r of onTime) {
      expect(r.dueMs % 10_000, r.key).toBeGreaterThanOrEqual(4_000);
      expect(r.fireMs).toBe(r.dueMs);
    }

    const aborted = (await flock.runs('bo-abort')).find((r) => r.state === 'failed')!;
    expect(aborted).toMatchObject({ reason: 'blackout stop', error: 'blackout stop', attempt: 1 });
    const abort = readEvents(events).find((e) => e.key === aborted.key && e.event === 'abort');
    expect(abort, 'the job saw its AbortSignal fire').toBeDefined();
    // The window opened 5 s after the due time; the signal fired then (generous bound for a loaded machine).
    expect(abort!.at - aborted.dueMs).toBeGreaterThanOrEqual(4_900);
    expect(abort!.at - aborted.dueMs).toBeLessThan(7_500);
    expect(aborted.endMs! - aborted.dueMs).toBeLessThan(7_500); // recorded at the abort, not when the job ended (8 s)
  });
});

describe('cronflock next with calendars', () => {
  it('prints the issue\'s payroll example: holidays hidden with --hide-skipped, marked without it', () => {
    const dir = mkdtempSync(join(tmpdir(), 'cronflock-next-'));
    try {
      const file = join(dir, 'payroll.yaml');
      writeFileSync(
        file,
        `calendars:
  - name: holidays
    timeZone: Europe/Berlin
    dates: ["2026-12-25", "2026-12-26", "2027-01-01"]
  - name: business-days
    timeZone: Europe/Berlin
    weekdays: [MON, TUE, WED, THU, FRI]
    exclude: [holidays]
schedules:
  - name: payroll
    cron: "0 9 * * *"
    timeZone: Europe/Berlin
    calendar: {include: business-days}
    job: {kind: http, url: "http://127.0.0.1:1/"}
  - name: month-end-close
    cron: "0 18 * * *"
    timeZone: Europe/Berlin
    calendar: {include: business-days, nth: -1}
    job: {kind: http, url: "http://127.0.0.1:1/"}
`,
      );
      const run = (...args: string[]): string => {
        const r = spawnSync(process.execPath, [BIN, 'next', file, ...args], { cwd: ROOT, encoding: 'utf8', timeout: 30_000 });
        expect(r.stderr).toBe('');
        expect(r.status).toBe(0);
        return r.stdout;
      };
      // Table rows without the header, runs of spaces as one.
      const next = (...args: string[]): string[] => run(...args).trim().split('\n').slice(1).map((l) => l.replace(/\s+/g, ' '));
      const hidden = next('--schedule', 'payroll', '-n', '4', '--from', '2026-12-23T00:00:00Z', '--hide-skipped');
      expect(hidden.map((l) => l.split(' ')[1])).toEqual([
        '2026-12-23T08:00:00.000Z',
        '2026-12-24T08:00:00.000Z',
        '2026-12-28T08:00:00.000Z',
        '2026-12-29T08:00:00.000Z',
      ]);
      const marked = next('--schedule', 'payroll', '-n', '4', '--from', '2026-12-23T00:00:00Z');
      expect(marked[2]).toBe('payroll 2026-12-25T08:00:00.000Z - 2026-12-25T08:00:00.000Z - Europe/Berlin skipped: calendar holidays');
      expect(marked[3]).toBe('payroll 2026-12-26T08:00:00.000Z - 2026-12-26T08:00:00.000Z - Europe/Berlin skipped: calendar holidays');
      const close = JSON.parse(run('--schedule', 'month-end-close', '-n', '3', '--from', '2026-12-01T00:00:00Z', '--hide-skipped', '--json')) as { dueAt: string }[];
      expect(close.map((r) => r.dueAt)).toEqual([
        '2026-12-31T17:00:00.000Z',
        '2027-01-29T17:00:00.000Z',
        '2027-02-26T17:00:00.000Z',
      ]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('.ics calendars on a running flock', () => {
  let flock: Flock;
  afterEach(() => flock?.close());

  it('reloads when an .ics file beside the schedule files changes: its new days apply', async () => {
    flock = await Flock.start();
    const ics = (events: string): string => `BEGIN:VCALENDAR\nVERSION:2.0\nPRODID:-//cronflock//test//EN\n${events}END:VCALENDAR\n`;
    flock.writeSchedules(ics(''), 'days-off.ics');
    flock.writeSchedules(`calendars:
  - {name: days-off, timeZone: UTC, ics: ./days-off.ics}
schedules:
  - name: every-second
    cron: "* * * * * *"
    calendar: {exclude: days-off}
    job: { kind: http, url: ${flock.receiver.url}/ics }
`);
    await flock.startReplica({ name: 'r1', schedules: flock.dir });
    await until(async () => (await flock.runs('every-second')).some((r) => r.state === 'succeeded'), 20_000, 'a run');
    const compact = (offsetDays: number): string => day(offsetDays).replaceAll('-', '');
    // Today (and the days around it, for a test that runs at midnight) become days off.
    const changedAt = Date.now();
    flock.writeSchedules(ics(`BEGIN:VEVENT\nUID:off\nDTSTART;VALUE=DATE:${compact(-1)}\nDTEND;VALUE=DATE:${compact(2)}\nEND:VEVENT\n`), 'days-off.ics');
    await until(async () => (await flock.runs('every-second')).some((r) => r.state === 'skipped'), 20_000, 'a skipped occurrence');
    const runs = await flock.runs('every-second');
    const skipped = runs.filter((r) => r.state === 'skipped');
    for (const r of skipped) expect(r.reason).toBe('calendar days-off');
    expect(Math.min(...skipped.map((r) => r.dueMs))).toBeGreaterThan(changedAt);
  });
});
