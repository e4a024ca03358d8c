/**
 * The `tenant` label of per-schedule metrics (issue 19 point 5): present on the series of a schedule with a
 * tenant (run counters, lateness, the health gauges), absent on the others; labels never become metric labels.
 */
import { describe, expect, it } from 'vitest';
import type { RedisClock } from '../redis/clock.js';
import { Metrics } from './metrics.js';

describe('metrics: the tenant label', () => {
  it('is on the series of schedules with a tenant only', async () => {
    const tenants = new Map([['acme-report', 'acme']]);
    const m = new Metrics({ clock: { offsetMs: 0 } as RedisClock, activeRuns: () => 0, replica: 'r1', tenantOf: (s) => tenants.get(s) });
    try {
      for (const schedule of ['acme-report', 'plain']) {
        const base = { schedule, key: `${schedule}@x`, replica: 'r1', dueMs: 0, fireMs: 0 };
        m.onRun({ ...base, state: 'started', attempt: 1, startMs: 5 });
        m.onRun({ ...base, state: 'succeeded' });
      }
      m.onPlannedFinal({ schedule: 'acme-report', dueMs: 0, state: 'missed', reason: 'starting deadline exceeded' } as never);
      await m.setScheduleHealth(
        [
          { name: 'acme-report', nextFireMs: 1000, lastSuccessMs: undefined, overdueMs: 0, lastResult: undefined, suspended: false, tenant: 'acme' },
          { name: 'plain', nextFireMs: 1000, lastSuccessMs: undefined, overdueMs: 0, lastResult: undefined, suspended: false },
        ],
        { total: 2, overdue: 0, failing: 0, suspended: 0 },
      );
      const text = (await m.render()).body.toString('utf8');
      /** The series of `metric` for `schedule` (label order is prom-client's). */
      const series = (metric: string, schedule: string) => text.split('\n').filter((l) => l.startsWith(`${metric}{`) && l.includes(`schedule="${schedule}"`));
      for (const metric of ['cronflock_runs_total', 'cronflock_claims_total', 'cronflock_occurrences_not_run_total', 'cronflock_start_lateness_seconds_count', 'cronflock_schedule_overdue_seconds']) {
        const acme = series(metric, 'acme-report');
        expect(acme.length, metric).toBeGreaterThan(0);
        for (const l of acme) expect(l).toContain('tenant="acme"');
        for (const l of series(metric, 'plain')) expect(l).not.toContain('tenant=');
      }
      expect(series('cronflock_runs_total', 'plain')).toHaveLength(1);
    } finally {
      m.close();
    }
  });
});
