/** `cronflock next` rows: the --hide-skipped limit note, and what a start in a group or under a rate limit may wait for. */
import { describe, expect, it } from 'vitest';
import { parseScheduleText } from '../config/load.js';
import { MAX_SCANNED, nextRows, noteOf, truncationNote } from './next-rows.js';

describe('next with skipped occurrences hidden', () => {
  it('says the limit it stopped at and the --from that looks further, which finds the rest', async () => {
    const res = await parseScheduleText(
      `calendars:
  - {name: sundays, weekdays: [SUN]}
schedules:
  - name: s
    cron: "* * * * * *"
    calendar: {include: [sundays]}
    job: {kind: http, url: "http://127.0.0.1:1/"}
`,
      'f.yaml',
    );
    expect(res.errors).toEqual([]);
    const monday = Date.parse('2026-11-30T00:00:00Z');
    const first = nextRows(res.schedules[0]!, monday, 3, true);
    expect(first).toMatchObject({ rows: [], truncated: true, scannedToMs: monday + MAX_SCANNED * 1000 });
    expect(truncationNote('s', 0, 3, first.scannedToMs!)).toBe(
      's: only 0 of the 3 occurrences asked for (-n) run among its next 100,000 due times, the most next looks at per schedule ' +
        '(its calendar and blackouts skip the others); to see further, run it again with --from 2026-12-01T03:46:40.000Z',
    );
    let from = first.scannedToMs!;
    let more = nextRows(res.schedules[0]!, from, 3, true);
    for (let i = 0; more.truncated && i < 10; i++) more = nextRows(res.schedules[0]!, (from = more.scannedToMs!), 3, true);
    expect(more.rows.map((r) => r.dueAt)).toEqual(['2026-12-06T00:00:00.000Z', '2026-12-06T00:00:01.000Z', '2026-12-06T00:00:02.000Z']);
  });
});

describe('cronflock next with groups and rate limits', () => {
  it('notes the group and rate limits a start may wait for; a schedule without them has no note', async () => {
    const res = await parseScheduleText(
      `groups:
  cluster-prod: {maxConcurrent: 2, rateLimit: {max: 10, per: 1s}}
schedules:
  - name: a
    cron: "0 9 * * *"
    group: cluster-prod
    rateLimit: {max: 1, per: 10m}
    job: {kind: http, url: "http://127.0.0.1:1/"}
  - name: b
    cron: "0 9 * * *"
    job: {kind: http, url: "http://127.0.0.1:1/"}
`,
      'f.yaml',
    );
    expect(res.errors).toEqual([]);
    const [a, b] = res.schedules;
    const from = Date.parse('2026-12-01T00:00:00Z');
    const rowA = nextRows(a!, from, 1, false).rows[0]!;
    expect(rowA.mayWait).toBe('group cluster-prod: 2 at once, 10 per 1s; rate limit 1 per 10m');
    expect(noteOf(rowA)).toBe('may wait: group cluster-prod: 2 at once, 10 per 1s; rate limit 1 per 10m');
    const rowB = nextRows(b!, from, 1, false).rows[0]!;
    expect(rowB).not.toHaveProperty('mayWait');
    expect(noteOf(rowB)).toBe('');
  });
});
