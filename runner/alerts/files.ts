/**
 * The shipped forms of the alert rules (runner/alerts/rules.ts) and where they live in the repository, with the
 * selector each assumes: the plain file the scrape job `cronflock`; the kustomize component the job a
 * ServiceMonitor or PodMonitor of the base's Service `cronflock-metrics` gives; the Helm chart its values.
 */
import { DEFAULT_ALERT_RULE_OPTIONS, helmPrometheusRuleTemplate, prometheusRuleResource, prometheusRulesFile } from './rules.js';

/** Selector of the kustomize component: the job label Prometheus Operator gives the base's metrics Service. */
export const KUSTOMIZE_SELECTOR = 'job="cronflock-metrics"';

export const RULE_FILES: readonly { path: string; content: () => string }[] = [
  { path: 'k8s/monitoring/cronflock-rules.yaml', content: () => prometheusRulesFile() },
  {
    path: 'k8s/deploy/components/prometheus-rule/prometheusrule.yaml',
    content: () => prometheusRuleResource({ ...DEFAULT_ALERT_RULE_OPTIONS, selector: KUSTOMIZE_SELECTOR }),
  },
  { path: 'k8s/helm/cronflock/templates/prometheusrule.yaml', content: () => helmPrometheusRuleTemplate() },
];
