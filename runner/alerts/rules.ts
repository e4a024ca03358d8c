/**
 * cronflock's alert rules, stated once: the plain Prometheus rules file (k8s/monitoring/cronflock-rules.yaml),
 * the Prometheus Operator PrometheusRule of the kustomize component (k8s/deploy/components/prometheus-rule/) and
 * the Helm chart's template (k8s/helm/cronflock/templates/prometheusrule.yaml) are all rendered from
 * {@link alertRuleGroups} (`npm run alert-rules` writes them; test/deploy/alert-rules.test.ts fails when one is
 * stale), and `cronflock alert-rules` prints them for another scrape job.
 *
 * Every rule reads a metric of runner/admin/metrics.ts through one label selector, the scrape job of the
 * replicas (`job="cronflock"` by default). Flock-wide gauges are the same on every replica: the rules take the
 * max over replicas (`without (instance, pod, replica)`), so an alert names the schedule, not the replica that
 * happened to be scraped.
 */
import { Document, isScalar, Scalar, visit } from 'yaml';

/** What a rendering may change. */
export interface AlertRuleOptions {
  /** Label matchers (PromQL) that select the replicas' series, e.g. `job="cronflock"` or `job="x",namespace="y"`. */
  selector: string;
  /** Consecutive failed occurrences after which CronflockScheduleFailing fires (default 3). */
  consecutiveFailures: number;
}

export const DEFAULT_ALERT_RULE_OPTIONS: AlertRuleOptions = { selector: 'job="cronflock"', consecutiveFailures: 3 };

/** One alerting rule, as Prometheus reads it. */
export interface AlertRule {
  alert: string;
  expr: string;
  for?: string;
  labels: { severity: 'critical' | 'warning' };
  annotations: { summary: string; description: string };
}

/** The labels that tell replicas of one flock apart; flock-wide values are aggregated over them. */
const PER_REPLICA = 'instance, pod, replica';

/**
 * The rules, in one group `cronflock`.
 * @throws Error when `consecutiveFailures` is not a whole number ≥ 1 or the selector is empty.
 */
export function alertRuleGroups(o: AlertRuleOptions = DEFAULT_ALERT_RULE_OPTIONS): { name: string; rules: AlertRule[] }[] {
  if (!o.selector.trim()) throw new Error('the selector must not be empty: name the scrape job of the replicas, e.g. job="cronflock"');
  if (!Number.isInteger(o.consecutiveFailures) || o.consecutiveFailures < 1) throw new Error('consecutiveFailures must be a whole number ≥ 1');
  const sel = (extra = ''): string => `{${o.selector}${extra ? `, ${extra}` : ''}}`;
  const perSchedule = (metric: string, extra = ''): string => `max without (${PER_REPLICA}) (${metric}${sel(extra)})`;
  const lastKnown = (metric: string): string => `max without (${PER_REPLICA}) (last_over_time(${metric}${sel()}[1d]))`;
  // Annotations name labels only ({{ $labels.x }}), never {{ $value }}: the value is the alert's own, and the
  // texts stay checkable word for word (test/integration/alert-rules.test.ts).
  const rules: AlertRule[] = [
    {
      alert: 'CronflockScheduleOverdue',
      // records/health.ts: past the first owed fire time plus the schedule's grace, without a success since.
      // While no replica is scraped at all, the replicas cannot say so: then a schedule whose last known next
      // fire time is more than 5 minutes (the default grace) past counts as overdue, unless it was suspended.
      expr:
        `${perSchedule('cronflock_schedule_overdue_seconds')} > 0\n` +
        `or\n` +
        `(\n` +
        `  time() - ${lastKnown('cronflock_schedule_next_fire_timestamp_seconds')} > 300\n` +
        `  unless ${lastKnown('cronflock_schedule_suspended')} == 1\n` +
        `)\n` +
        `and on () absent(cronflock_active_runs${sel()})`,
      for: '2m',
      labels: { severity: 'warning' },
      annotations: {
        summary: 'Schedule {{ $labels.schedule }} is overdue: a run it was owed has not succeeded.',
        description:
          'No success of {{ $labels.schedule }} since an occurrence whose fire time plus grace has passed (grace: overdueGrace, else the timeout, else 5m), or no replica is scraped and its next fire time is 5 minutes past. How long: cronflock_schedule_overdue_seconds. Look at `cronflock runs --schedule {{ $labels.schedule }}` and `cronflock status`.',
      },
    },
    {
      alert: 'CronflockScheduleFailing',
      expr: `${perSchedule('cronflock_schedule_consecutive_failures')} >= ${o.consecutiveFailures}`,
      for: '1m',
      labels: { severity: 'warning' },
      annotations: {
        summary: `Schedule {{ $labels.schedule }} failed ${o.consecutiveFailures} or more times in a row.`,
        description: `At least the last ${o.consecutiveFailures} occurrences of {{ $labels.schedule }} that ran ended failed (after their retries), none succeeded since (how many: cronflock_schedule_consecutive_failures). The errors are in \`cronflock runs --schedule {{ $labels.schedule }}\`.`,
      },
    },
    {
      alert: 'CronflockOccurrencesMissed',
      expr: `sum without (${PER_REPLICA}) (increase(cronflock_occurrences_not_run_total${sel('state="missed"')}[15m])) > 0`,
      labels: { severity: 'warning' },
      annotations: {
        summary: 'Schedule {{ $labels.schedule }} missed occurrences: {{ $labels.reason }}.',
        description:
          'Occurrences of {{ $labels.schedule }} were recorded missed in the last 15 minutes ({{ $labels.reason }}): they could not start within their starting deadline or the catch-up horizon, or catch-up left them out after downtime.',
      },
    },
    {
      alert: 'CronflockFlockHasNoReplicas',
      // Every replica exports cronflock_active_runs from start-up, before it reaches Redis: no series at all
      // means no replica is scraped (all down, or the scrape job does not match the selector).
      expr: `absent(cronflock_active_runs${sel()})`,
      for: '2m',
      labels: { severity: 'critical' },
      annotations: {
        summary: 'No cronflock replica is scraped: no schedule runs.',
        description:
          "Prometheus has no series of cronflock_active_runs for the replicas' scrape job: every replica is down, or none is scraped under the rule's selector. Nothing inside cronflock can say so, hence this rule.",
      },
    },
    {
      alert: 'CronflockRedisUnreachable',
      expr: `count without (${PER_REPLICA}) (cronflock_redis_up${sel()} == 0) > 0`,
      for: '1m',
      labels: { severity: 'critical' },
      annotations: {
        summary: 'cronflock replicas cannot reach Redis.',
        description:
          'The PING of one or more replicas to Redis has gone unanswered for over 3 s (how many: the alert value): they neither plan nor claim, and /readyz says why. Occurrences due meanwhile run late or follow their starting deadline and catch-up policy when Redis is back.',
      },
    },
    {
      alert: 'CronflockClockSkewHigh',
      // The engine's own bound: beyond ±5 s a replica is not ready (runner/redis/clock.ts MAX_HOST_SKEW_MS).
      expr: `abs(cronflock_clock_skew_seconds${sel()}) > 5`,
      for: '5m',
      labels: { severity: 'warning' },
      annotations: {
        summary: 'The host clock of replica {{ $labels.replica }} is more than 5 s off the Redis clock.',
        description:
          'Decisions use the Redis clock, so runs stay correct, but the replica is not ready while its clock is more than 5 s off, and its logs carry wrong times (by how much: cronflock_clock_skew_seconds). Fix the host time synchronisation.',
      },
    },
    {
      alert: 'CronflockBacklogGrowing',
      // Jobs whose fire time has come wait for a free worker slot on every replica, and more of them than 10
      // minutes ago: the flock runs slower than occurrences come.
      expr:
        `${perSchedule('cronflock_queue_jobs', 'state="waiting"')} > 0\n` +
        `and\n` +
        `max without (${PER_REPLICA}) (delta(cronflock_queue_jobs${sel('state="waiting"')}[10m])) > 0`,
      for: '10m',
      labels: { severity: 'warning' },
      annotations: {
        summary: 'Work on the {{ $labels.lane }} lane waits for a free slot, and more of it every minute.',
        description:
          'Jobs of the {{ $labels.lane }} lane are ready and wait for a worker slot on every replica, more of them than 10 minutes ago (how many: the alert value). Add replicas, raise --concurrency (live) or --backlog-concurrency (backlog), or find the runs that hold the slots.',
      },
    },
  ];
  return [{ name: 'cronflock', rules }];
}

/** YAML with each `expr` as a literal block (PromQL quotes stay as written; multi-line exprs read as such). */
function toYaml(value: unknown): string {
  const doc = new Document(value);
  visit(doc, {
    Pair(_, pair) {
      if (isScalar(pair.key) && pair.key.value === 'expr' && isScalar(pair.value)) pair.value.type = Scalar.BLOCK_LITERAL;
    },
  });
  return doc.toString({ lineWidth: 0 });
}

const GENERATED = '# Generated from runner/alerts/rules.ts by `npm run alert-rules` (or `cronflock alert-rules`); do not edit.\n';

/** A plain Prometheus rules file (`rule_files:`). */
export function prometheusRulesFile(o: AlertRuleOptions = DEFAULT_ALERT_RULE_OPTIONS): string {
  return `${GENERATED}# The replicas' series are selected by ${o.selector}.\n${toYaml({ groups: alertRuleGroups(o) })}`;
}

/** A Prometheus Operator PrometheusRule (monitoring.coreos.com/v1) with the same rules. */
export function prometheusRuleResource(o: AlertRuleOptions = DEFAULT_ALERT_RULE_OPTIONS, meta: { name: string; labels?: Record<string, string> } = { name: 'cronflock' }): string {
  const resource = {
    apiVersion: 'monitoring.coreos.com/v1',
    kind: 'PrometheusRule',
    metadata: { name: meta.name, labels: { 'app.kubernetes.io/name': 'cronflock', ...meta.labels } },
    spec: { groups: alertRuleGroups(o) },
  };
  return `${GENERATED}# The replicas' series are selected by ${o.selector}.\n${toYaml(resource)}`;
}

/** Placeholders of the Helm template, replaced by template actions after the YAML is written. */
const HELM_SELECTOR = 'HELM_SELECTOR_PLACEHOLDER';
const HELM_FAILURES = 987654321;

/**
 * The Helm chart's template: the same rules, with the selector from `metrics.prometheusRule.selector` (default:
 * the metrics Service's scrape job in the release's namespace, as a ServiceMonitor names it) and the failure
 * threshold from `metrics.prometheusRule.consecutiveFailures`. Prometheus' own `{{ … }}` are escaped for Helm.
 */
export function helmPrometheusRuleTemplate(): string {
  const body = toYaml({ groups: alertRuleGroups({ selector: HELM_SELECTOR, consecutiveFailures: HELM_FAILURES }) })
    .replace(/^#.*\n/gm, '')
    .replace(/\{\{([^}]*)\}\}/g, (m) => `{{\`${m}\`}}`)
    // `{` + selector: an action can follow `{` only through printf (`{{{` would open the action one brace early).
    .replaceAll(`{${HELM_SELECTOR}`, '{{ printf "{%s" $selector }}')
    .replaceAll(String(HELM_FAILURES), '{{ $failures }}')
    .split('\n')
    .map((l) => (l ? `  ${l}` : l))
    .join('\n');
  if (body.includes(HELM_SELECTOR)) throw new Error('the selector may appear in expressions only (after a "{")');
  return `{{- /* Generated from runner/alerts/rules.ts by \`npm run alert-rules\`; do not edit. */ -}}
{{- if .Values.metrics.prometheusRule.enabled }}
{{- $selector := .Values.metrics.prometheusRule.selector | default (printf "job=%q, namespace=%q" (printf "%s-metrics" (include "cronflock.fullname" .)) .Release.Namespace) }}
{{- $failures := int .Values.metrics.prometheusRule.consecutiveFailures }}
# Prometheus Operator: cronflock's alerts on its own metrics (README: "Health metrics and alerts").
apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata:
  name: {{ include "cronflock.fullname" . }}
  labels:
    {{- include "cronflock.labels" . | nindent 4 }}
    {{- with .Values.metrics.prometheusRule.labels }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
spec:
${body.trimEnd()}
{{- end }}
`;
}
