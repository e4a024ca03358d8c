/**
 * The shipped alert rules (k8s/monitoring/cronflock-rules.yaml) on series recorded from a real flock's
 * `/metrics`, judged by `promtool test rules` (promtool built from the Go module proxy by
 * test/deploy/build-tools.sh).
 *
 * A real flock — Redis, an HTTP receiver, three replicas (one with its host clock 8 s ahead) — runs schedules
 * that succeed, fail, miss their starting deadline and pile up on the backlog lane, while this test scrapes every
 * replica every {@link STEP_MS} as Prometheus would (job="cronflock", instance=<replica>; a failed scrape, or a
 * series gone from a scrape, gets a staleness marker). Redis is stopped for a while, then every replica is
 * stopped and the scrapes go on failing. The samples become promtool `input_series`, and the rules must fire
 * exactly as the flock behaved, at the steps where each phase was reached.
 *
 * Time: one scrape step stands for one minute of rule time (`interval: 1m`), so the rules' `for:` and range
 * windows (minutes) play out in about a minute and a half of real time. Values are the scraped ones; only
 * timestamp gauges (`*_timestamp_seconds`) are moved onto the same stretched axis, so that `time()` compares with
 * them as in production. Durations (overdue, skew) keep their real values.
 */
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { alertRuleGroups } from '../../runner/alerts/rules.js';
import { trigger } from '../../runner/engine/control.js';
import { closeLanes, openLanes } from '../../runner/engine/enqueue.js';
import { DEFAULT_OPTIONS } from '../../runner/engine/options.js';
import { RedisClock } from '../../runner/redis/clock.js';
import { Keyspace } from '../../runner/redis/keys.js';
import { Store } from '../../runner/redis/store.js';
import { deployTools } from '../deploy/tools.js';
import { Flock, sleep } from '../support/flock.js';
import { parseExposition } from '../support/metrics.js';
import { ROOT, type ReplicaProcess } from '../support/replica.js';

/** Real time between two scrapes of every replica. */
const STEP_MS = 2_000;
/** Rule time per real time: a step is one minute. */
const SCALE = 60_000 / STEP_MS;
const RULES = join(ROOT, 'k8s/monitoring/cronflock-rules.yaml');
/** The metrics the rules read (and only those go to promtool). */
const WANTED = new Set(alertRuleGroups()[0]!.rules.flatMap((r) => [...r.expr.matchAll(/cronflock_[a-z_]+/g)].map((m) => m[0])));

/**
 * Scrapes replicas every STEP_MS into series, as Prometheus stores them: labels plus job and instance; a series
 * that a scrape of its instance no longer has (or a failed scrape) gets one `stale` marker; missing steps `_`.
 */
class Recorder {
  readonly series = new Map<string, string[]>();
  /** Instance of each series, for staleness on a failed scrape. */
  private readonly instanceOf = new Map<string, string>();
  step = -1;
  private t0 = 0;
  private stopped = false;
  private loop: Promise<void> | undefined;

  constructor(private readonly targets: readonly ReplicaProcess[]) {}

  start(): void {
    this.t0 = Date.now();
    this.loop = (async () => {
      for (let i = 0; !this.stopped; i++) {
        await sleep(Math.max(0, this.t0 + i * STEP_MS - Date.now()));
        await this.scrapeAll(i);
        this.step = i;
      }
    })();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.loop;
  }

  /** Waits until step `n` has been recorded. */
  async until(n: number): Promise<number> {
    while (this.step < n) await sleep(50);
    return this.step;
  }

  /** A timestamp (s) on the rules' time axis: step i is minute i. */
  private axis(seconds: number): number {
    return Math.round(((seconds * 1000 - this.t0) * SCALE) / 1000);
  }

  private async scrapeAll(i: number): Promise<void> {
    await Promise.all(
      this.targets.map(async (r) => {
        let text: string | undefined;
        try {
          const res = await fetch(`${r.adminUrl}/metrics`, { signal: AbortSignal.timeout(STEP_MS - 200) });
          if (res.ok) text = await res.text();
        } catch {
          /* a failed scrape: up would be 0; its series go stale */
        }
        const seen = new Set<string>();
        for (const s of text === undefined ? [] : parseExposition(text)) {
          if (!WANTED.has(s.name)) continue;
          const labels = { ...s.labels, job: 'cronflock', instance: r.name };
          const key = `${s.name}{${Object.entries(labels)
            .sort(([a], [b]) => (a < b ? -1 : 1))
            .map(([k, v]) => `${k}=${JSON.stringify(v)}`)
            .join(',')}}`;
          const values = this.series.get(key) ?? [];
          this.series.set(key, values);
          this.instanceOf.set(key, r.name);
          values[i] = String(s.name.endsWith('_timestamp_seconds') ? this.axis(s.value) : s.value);
          seen.add(key);
        }
        for (const [key, values] of this.series) {
          if (this.instanceOf.get(key) !== r.name || seen.has(key)) continue;
          const last = values.findLast((v) => v !== undefined);
          if (last !== undefined && last !== 'stale') values[i] = 'stale';
        }
      }),
    );
  }

  /** promtool input_series. */
  inputSeries(): { series: string; values: string }[] {
    return [...this.series].map(([series, values]) => ({ series, values: Array.from({ length: this.step + 1 }, (_, i) => values[i] ?? '_').join(' ') }));
  }
}

/** The annotations of `alert` for an alert with `labels`: the rules' texts name labels only. */
function annotationsOf(alert: string, labels: Record<string, string>): Record<string, string> {
  const rule = alertRuleGroups()[0]!.rules.find((r) => r.alert === alert)!;
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(rule.annotations)) {
    out[k] = v.replace(/\{\{ \$labels\.([a-z_]+) \}\}/g, (_, l: string) => labels[l] ?? '');
    expect(out[k], `${alert} ${k} uses only {{ $labels.x }}`).not.toMatch(/\{\{/);
  }
  return out;
}

/** One promtool alert check: at step `step`, `alert` fires exactly for these label sets. */
function expectAlerts(step: number, alert: string, fired: Record<string, string>[]) {
  const rule = alertRuleGroups()[0]!.rules.find((r) => r.alert === alert)!;
  return {
    eval_time: `${step}m`,
    alertname: alert,
    exp_alerts: fired.map((l) => {
      const labels = { ...l, ...rule.labels };
      return { exp_labels: labels, exp_annotations: annotationsOf(alert, { ...labels, alertname: alert }) };
    }),
  };
}

describe('alert rules on a real flock', () => {
  let flock: Flock;
  afterEach(() => flock?.close());

  it('fire as the flock behaves: overdue, failing, missed, backlog, Redis, clock skew; all stopped: no replicas and every schedule overdue', async () => {
    const { promtool } = deployTools();
    flock = await Flock.start();
    flock.receiver.status.set('bad', 500);
    flock.receiver.holdMs.set('late', 2500);
    flock.receiver.holdMs.set('slow', 15_000);
    const url = flock.receiver.url;
    // catchUp: all everywhere, so that only the starting deadline of `late` records anything missed.
    const file = flock.writeSchedules(`schedules:
  - { name: ok, cron: "*/2 * * * * *", catchUp: all, job: { kind: http, url: ${url}/ok } }
  - { name: bad, cron: "*/2 * * * * *", catchUp: all, overdueGrace: 2s, job: { kind: http, url: ${url}/bad } }
  - { name: late, cron: "* * * * * *", catchUp: all, maxConcurrent: 1, startingDeadline: 500ms, job: { kind: http, url: ${url}/late } }
  - { name: paused, cron: "* * * * * *", suspend: true, job: { kind: http, url: ${url}/paused } }
  - { name: slow, cron: "0 0 1 1 *", job: { kind: http, url: ${url}/slow } }
`);
    const args = ['--backlog-concurrency', '1', '--grace', '1s'];
    const replicas = [
      await flock.startReplica({ name: 'r1', schedules: file, args }),
      await flock.startReplica({ name: 'r2', schedules: file, args }),
      await flock.startReplica({ name: 'r3', schedules: file, args, clockOffsetMs: 8_000 }),
    ];
    const keys = new Keyspace();
    const redis = flock.redisClient;
    const lanes = openLanes(redis, keys);
    const control = {
      redis,
      keys,
      store: new Store(redis, keys),
      lanes,
      clock: new RedisClock(redis, undefined, keys.ns),
      options: { retentionMs: DEFAULT_OPTIONS.retentionMs, prefetchMs: DEFAULT_OPTIONS.prefetchMs },
      by: 'alert-rules-test',
    };
    const rec = new Recorder(replicas);
    rec.start();
    let steps: { backlog: number; redisDown: number; beforeStop: number; end: number };
    try {
      // Backlog: a trigger of `slow` (15 s a run) every 1.5 s, for 3 backlog slots: the backlog lane grows.
      await rec.until(2);
      while (rec.step < 22) {
        await trigger(control, 'slow');
        await sleep(1500);
      }
      const backlog = rec.step;
      // Redis hangs (SIGSTOP) for six steps.
      process.kill(flock.redis.pid!, 'SIGSTOP');
      let redisDown: number;
      try {
        redisDown = await rec.until(backlog + 6);
      } finally {
        process.kill(flock.redis.pid!, 'SIGCONT');
      }
      // Recovered; then every replica stops, and the scrapes go on failing.
      const beforeStop = await rec.until(redisDown + 6);
      await Promise.all(replicas.map((r) => r.stop()));
      const end = await rec.until(beforeStop + 13);
      steps = { backlog, redisDown, beforeStop, end };
    } finally {
      await rec.stop();
      await closeLanes(lanes);
    }

    const job = { job: 'cronflock' };
    const tests = {
      rule_files: [RULES],
      evaluation_interval: '1m',
      tests: [
        {
          interval: '1m',
          input_series: rec.inputSeries(),
          alert_rule_test: [
            // While the flock runs: only bad is overdue and failing; late misses its starting deadline; r3's
            // clock is 8 s ahead; work piles up on the backlog lane; nothing says the flock is gone.
            expectAlerts(steps.backlog, 'CronflockScheduleOverdue', [{ ...job, schedule: 'bad' }]),
            expectAlerts(steps.backlog, 'CronflockScheduleFailing', [{ ...job, schedule: 'bad' }]),
            expectAlerts(steps.backlog, 'CronflockOccurrencesMissed', [{ ...job, schedule: 'late', state: 'missed', reason: 'starting deadline exceeded' }]),
            expectAlerts(steps.backlog, 'CronflockBacklogGrowing', [{ ...job, lane: 'backlog', state: 'waiting' }]),
            expectAlerts(steps.backlog, 'CronflockClockSkewHigh', [{ ...job, instance: 'r3', replica: 'r3' }]),
            expectAlerts(steps.backlog, 'CronflockRedisUnreachable', []),
            expectAlerts(steps.backlog, 'CronflockFlockHasNoReplicas', []),
            // Redis hangs: every replica says so.
            expectAlerts(steps.redisDown, 'CronflockRedisUnreachable', [job]),
            // Back, and about to stop: Redis is fine again, ok still is not overdue.
            expectAlerts(steps.beforeStop, 'CronflockRedisUnreachable', []),
            expectAlerts(steps.beforeStop, 'CronflockScheduleOverdue', [{ ...job, schedule: 'bad' }]),
            expectAlerts(steps.beforeStop, 'CronflockFlockHasNoReplicas', []),
            // Every replica stopped: no replica, and every schedule that should have run is overdue (the
            // suspended one and the yearly one are not).
            expectAlerts(steps.end, 'CronflockFlockHasNoReplicas', [job]),
            expectAlerts(steps.end, 'CronflockScheduleOverdue', ['ok', 'bad', 'late'].map((schedule) => ({ ...job, schedule }))),
            expectAlerts(steps.end, 'CronflockScheduleFailing', []),
            expectAlerts(steps.end, 'CronflockClockSkewHigh', []),
          ],
        },
      ],
    };
    const testFile = join(flock.dir, 'cronflock-rules.test.yaml');
    writeFileSync(testFile, stringify(tests, { lineWidth: 0 }));
    const r = spawnSync(promtool, ['test', 'rules', testFile], { encoding: 'utf8' });
    const out = `${r.stdout}${r.stderr}`;
    console.log(`alert rules: steps ${JSON.stringify(steps)}, ${rec.series.size} series; promtool: ${out.trim().split('\n').slice(-1)[0]}`);
    expect(r.status, out).toBe(0);
    expect(out).toMatch(/SUCCESS/);
  }, 420_000);
});
