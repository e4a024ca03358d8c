/**
 * The alert rules in their three shipped forms — the plain Prometheus file, the kustomize component's
 * PrometheusRule and the Helm chart's template — are what runner/alerts/rules.ts renders (run `npm run
 * alert-rules` after changing it), say the same thing (Helm and kustomize rendered by the real tools), and are
 * valid rules for promtool (built from the Go module proxy: test/deploy/build-tools.sh). What the rules do on a
 * real flock's series: test/integration/alert-rules.test.ts.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parse, parseAllDocuments } from 'yaml';
import { beforeAll, describe, expect, it } from 'vitest';
import { alertRuleGroups, DEFAULT_ALERT_RULE_OPTIONS } from '../../runner/alerts/rules.js';
import { KUSTOMIZE_SELECTOR, RULE_FILES } from '../../runner/alerts/files.js';
import { ROOT } from '../support/replica.js';
import { deployTools } from './tools.js';

let tools: ReturnType<typeof deployTools>;
beforeAll(() => {
  tools = deployTools();
}, 1_800_000);

function run(bin: string, args: string[], cwd = ROOT): string {
  const r = spawnSync(bin, args, { encoding: 'utf8', cwd });
  if (r.status !== 0) throw new Error(`${path.basename(bin)} ${args.join(' ')}: exit ${r.status}\n${r.stdout}${r.stderr}`);
  return r.stdout;
}

/** `promtool check rules` of `groups`, written to a temporary file. */
function promtoolCheck(groups: unknown): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'cronflock-rules-'));
  try {
    const file = path.join(dir, 'rules.yaml');
    writeFileSync(file, JSON.stringify({ groups }));
    return run(tools.promtool, ['check', 'rules', file]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function helmRule(args: string[]): { spec: { groups: unknown } } {
  const out = run(tools.helm, ['template', 'cronflock', path.join(ROOT, 'k8s/helm/cronflock'), '--namespace', 'ops', '--kube-version', '1.37.0', '--set', 'metrics.prometheusRule.enabled=true', ...args]);
  const rule = parseAllDocuments(out).map((d) => d.toJS() as { kind?: string }).find((o) => o?.kind === 'PrometheusRule');
  if (!rule) throw new Error('no PrometheusRule in the render');
  return rule as { spec: { groups: unknown } };
}

describe('shipped alert rules', () => {
  it('are what runner/alerts/rules.ts renders (npm run alert-rules writes them)', () => {
    for (const f of RULE_FILES) expect(readFileSync(path.join(ROOT, f.path), 'utf8'), `${f.path} is stale: npm run build && npm run alert-rules`).toBe(f.content());
  });

  it('plain file: the rules for job="cronflock", valid for promtool', () => {
    const plain = parse(readFileSync(path.join(ROOT, 'k8s/monitoring/cronflock-rules.yaml'), 'utf8')) as { groups: unknown };
    expect(plain.groups).toEqual(alertRuleGroups());
    expect(run(tools.promtool, ['check', 'rules', path.join(ROOT, 'k8s/monitoring/cronflock-rules.yaml')])).toMatch(/SUCCESS: 7 rules found/);
    const names = alertRuleGroups()[0]!.rules.map((r) => r.alert);
    expect(names).toEqual([
      'CronflockScheduleOverdue',
      'CronflockScheduleFailing',
      'CronflockOccurrencesMissed',
      'CronflockFlockHasNoReplicas',
      'CronflockRedisUnreachable',
      'CronflockClockSkewHigh',
      'CronflockBacklogGrowing',
    ]);
  });

  it('Helm: the same rules, for the metrics Service job in the release namespace by default, or the selector and threshold given', () => {
    const byDefault = helmRule([]);
    expect(byDefault.spec.groups).toEqual(alertRuleGroups({ ...DEFAULT_ALERT_RULE_OPTIONS, selector: 'job="cronflock-metrics", namespace="ops"' }));
    const custom = helmRule(['--set', 'metrics.prometheusRule.selector=job="cronflock"']);
    expect(custom.spec.groups).toEqual(alertRuleGroups());
    const five = helmRule(['--set', 'metrics.prometheusRule.consecutiveFailures=5']);
    expect(five.spec.groups).toEqual(alertRuleGroups({ selector: 'job="cronflock-metrics", namespace="ops"', consecutiveFailures: 5 }));
    expect(promtoolCheck(byDefault.spec.groups)).toMatch(/SUCCESS: 7 rules found/);
    // A threshold below 1 is refused by the chart's schema, before anything renders.
    const bad = spawnSync(tools.helm, ['template', 'x', path.join(ROOT, 'k8s/helm/cronflock'), '--kube-version', '1.37.0', '--set', 'metrics.prometheusRule.consecutiveFailures=0'], { encoding: 'utf8' });
    expect(bad.status).not.toBe(0);
    expect(bad.stderr).toMatch(/consecutiveFailures/);
  });

  it('kustomize: the component adds the same rules, for job="cronflock-metrics", to an overlay of the base', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'cronflock-overlay-'));
    try {
      const overlay = path.join(dir, 'overlay');
      mkdirSync(overlay);
      const rel = (p: string) => path.relative(overlay, path.join(ROOT, p)); // kustomize refuses absolute paths
      writeFileSync(
        path.join(overlay, 'kustomization.yaml'),
        `namespace: ops\nresources: [${rel('k8s/deploy/base')}]\ncomponents: [${rel('k8s/deploy/components/prometheus-rule')}]\n`,
      );
      const objs = parseAllDocuments(run(tools.kustomize, ['build', overlay])).map((d) => d.toJS() as { kind: string; metadata: { namespace?: string }; spec: { groups: unknown } });
      const rule = objs.find((o) => o.kind === 'PrometheusRule')!;
      expect(rule.metadata.namespace).toBe('ops');
      expect(rule.spec.groups).toEqual(alertRuleGroups({ ...DEFAULT_ALERT_RULE_OPTIONS, selector: KUSTOMIZE_SELECTOR }));
      expect(promtoolCheck(rule.spec.groups)).toMatch(/SUCCESS: 7 rules found/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
