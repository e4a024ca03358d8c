/**
 * `cronflock alert-rules`: prints cronflock's alert rules (runner/alerts/rules.ts) for the scrape job the
 * replicas are scraped under: a plain Prometheus rules file, or a Prometheus Operator PrometheusRule. The same
 * rules ship in k8s/monitoring/, the kustomize component and the Helm chart, for their default jobs.
 */
import { Option, type Command } from 'commander';
import { DEFAULT_ALERT_RULE_OPTIONS, prometheusRuleResource, prometheusRulesFile } from '../alerts/rules.js';
import { positiveIntArg } from './arg-parsers.js';
import { CliError } from './redis-target.js';

/** Adds `alert-rules` to the program. */
export function addAlertRulesCommand(program: Command): void {
  program
    .command('alert-rules')
    .description("print cronflock's alert rules for your scrape job: a Prometheus rules file or a PrometheusRule")
    .addOption(new Option('--format <format>', 'prometheus (a rule_files file) or prometheusrule (Prometheus Operator)').choices(['prometheus', 'prometheusrule']).default('prometheus'))
    .option('--selector <matchers>', "PromQL label matchers of the replicas' series", DEFAULT_ALERT_RULE_OPTIONS.selector)
    .option('--consecutive-failures <n>', 'failed occurrences in a row before CronflockScheduleFailing fires', positiveIntArg, DEFAULT_ALERT_RULE_OPTIONS.consecutiveFailures)
    .option('--name <name>', 'metadata.name of the PrometheusRule', 'cronflock')
    .action((o: { format: string; selector: string; consecutiveFailures: number; name: string }) => {
      // A selector is label matchers, as inside {…}: refuse what would break every expression.
      if (!/^\s*[a-zA-Z_][a-zA-Z0-9_]*\s*(=|!=|=~|!~)\s*"/.test(o.selector) || /[{}]/.test(o.selector)) {
        throw new CliError(`--selector "${o.selector}" must be label matchers without braces, e.g. job="cronflock" or job="cronflock",namespace="prod"`);
      }
      const options = { selector: o.selector, consecutiveFailures: o.consecutiveFailures };
      process.stdout.write(o.format === 'prometheusrule' ? prometheusRuleResource(options, { name: o.name }) : prometheusRulesFile(options));
    });
}
