/** A schedule row as the API answers it (summarize): pure, no Redis. */
import { describe, expect, it } from 'vitest';
import type { PublishedDefinition } from '../engine/definitions.js';
import type { ScheduleHealth } from '../records/health.js';
import type { ScheduleRow } from './schedule-index.js';
import { summarize } from './schedule-list.js';

const def: PublishedDefinition = {
  cron: '*/2 * * * * *', timeZone: 'UTC', jitterMs: 0, startingDeadlineMs: null, concurrencyPolicy: 'Allow', onResume: 'skip',
  definitionHash: 'h', replica: 'r1', loadedAtMs: 0,
} as PublishedDefinition;
const health = (overdueMs: number): ScheduleHealth => ({
  nextDueMs: null, nextFireMs: null, lastExpectedDueMs: null, lastExpectedFireMs: null,
  overdueFromMs: overdueMs > 0 ? 1 : null, overdueSinceMs: overdueMs > 0 ? 1 : null, overdueMs,
});
const row = (overdueMs: number): ScheduleRow => ({ name: 's', def, cronText: 'every 2 s', due: null, health: health(overdueMs) });
const counts = { succeeded: 0, failed: 0, missed: 0, skipped: 0 };

describe('summarize', () => {
  it('shows a schedule overdue for less than half a second as overdue (overdueSeconds > 0 exactly when overdue)', () => {
    expect(summarize(row(0), counts).overdueSeconds).toBe(0);
    expect(summarize(row(1), counts).overdueSeconds).toBe(1);
    expect(summarize(row(300), counts).overdueSeconds).toBe(1);
    expect(summarize(row(1_000), counts).overdueSeconds).toBe(1);
    expect(summarize(row(61_500), counts).overdueSeconds).toBe(62);
  });
});
