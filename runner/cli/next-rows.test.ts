/** `cronflock next` rows of a schedule in a concurrency group or with a rate limit: the NOTE says what it may wait for. */
import { describe, expect, it } from 'vitest';
import { parseScheduleText } from '../config/load.js';
import { nextRows, noteOf } from './next-rows.js';

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
