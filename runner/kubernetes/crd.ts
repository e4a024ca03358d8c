/**
 * The Schedule CustomResourceDefinition, generated from the schedule-file zod schema (runner/config/schema.ts),
 * so that a Schedule's `spec` and a file's schedule are checked by one definition. Committed as
 * `k8s/crds/schedules.cronflock.io.yaml` (`npm run schema` writes it; a test fails when it is stale).
 *
 * What the API server checks at admission (`kubectl apply` names the field):
 * - the structural schema of every field (types, enums, required fields, bounds, patterns), converted from the
 *   JSON Schema of the zod schema by k8s/structural.ts; unknown fields are refused by clients asking for strict
 *   field validation (kubectl's default);
 * - `metadata.name`: a DNS-1123 label of at most 63 characters (it is the flock-wide schedule name);
 * - CEL rules (`x-kubernetes-validations`) for what the loader checks and CEL can express: duration syntax,
 *   the shape of a cron expression (5 or 6 fields or a macro; no `CRON_TZ=` prefix; no `@reboot`),
 *   `maxCatchUpRuns` only with `catchUp: all`, `maxConcurrent` only with `concurrencyPolicy: Allow`, and per
 *   job kind the required and allowed fields.
 * What only the loader checks (a Schedule that passes admission but not the loader gets the condition
 * `Invalid` with the loader's message, and runs nothing): cron field values, the time zone, the jitter window
 * against the gap between due times, `retryBackoffMax` ≥ `retryBackoff`, positive durations, and each job
 * kind's own load-time checks.
 */
import { z } from 'zod';
import { stringify } from 'yaml';
import { toStructural, type CelRule, type SchemaNode } from '../../k8s/structural.js';
import { scheduleObject, SCHEDULE_NAME_PATTERN } from '../config/schema.js';
import { durationMs } from '../validate/zod-duration.js';
import { API_VERSION, CRD_NAME, GROUP, KIND, PLURAL, VERSION } from './resource.js';

/** Where the generated CRD is committed, relative to the project root. */
export const CRD_PATH = 'k8s/crds/schedules.cronflock.io.yaml';

/**
 * A duration as runner/time/duration.ts parses it: `0`, or `<int><unit>` parts largest first, each unit at most
 * once (surrounding spaces are trimmed by the loader, so they are allowed here). RE2 syntax (CEL `matches`).
 */
const DURATION_RE = String.raw`^\s*(0|([0-9]+d)?([0-9]+h)?([0-9]+m)?([0-9]+s)?([0-9]+ms)?)\s*$`;

/** Longest duration text (the longest useful one, `24d23h59m59s999ms`, has 17 characters). */
const MAX_DURATION_LENGTH = 64;

const durationRule: CelRule = {
  rule: `self.matches(r'${DURATION_RE}') && self.matches('[0-9]')`,
  message: 'must be a duration: whole numbers with units ms, s, m, h, d, largest first (e.g. 250ms, 90s, 5m, 1h30m, 2d)',
};

/** Longest cron expression the CRD accepts (a bound CEL's cost estimate needs; real expressions are far shorter). */
const MAX_CRON_LENGTH = 1024;

/** The loader's cron checks that CEL can express (runner/schedule/cron.ts compileCron). */
const cronRules: CelRule[] = [
  {
    rule: String.raw`!self.matches(r'(?i)^\s*(CRON_TZ|TZ)\s*=')`,
    message: 'a CRON_TZ= or TZ= prefix is not supported: put the zone in spec.timeZone and write the cron without it',
  },
  {
    rule: String.raw`!self.matches(r'(?i)^\s*@reboot\s*$')`,
    message: '@reboot has no due time (cronflock schedules by the clock); give a time such as "@daily"',
  },
  {
    rule: String.raw`self.matches(r'^\s*(@\S*|\S+(\s+\S+){4,5})\s*$')`,
    message: 'must have 5 fields (minute hour day-of-month month day-of-week), 6 with seconds first, or be a macro such as @hourly or @daily',
  },
];

/** Cross-field rules of runner/config/schema.ts checkSchedule that CEL can express. */
const specRules: CelRule[] = [
  {
    rule: "!has(self.maxCatchUpRuns) || (has(self.catchUp) && self.catchUp == 'all')",
    message: 'only applies with catchUp: all',
    fieldPath: '.maxCatchUpRuns',
  },
  {
    rule: "!has(self.maxConcurrent) || !has(self.concurrencyPolicy) || self.concurrencyPolicy == 'Allow'",
    message: 'only applies with concurrencyPolicy: Allow (Forbid and Replace run one at a time)',
    fieldPath: '.maxConcurrent',
  },
];

/** The structural schema of `spec`: the schedule object without `name` (see the module docs). */
export function specSchema(): SchemaNode {
  const object = scheduleObject.omit({ name: true });
  const durationOut = (durationMs as unknown as { _zod: { def: { out: unknown } } })._zod.def.out;
  const json = z.toJSONSchema(object, {
    io: 'input',
    target: 'openapi-3.0',
    unrepresentable: 'throw',
    override: (ctx) => {
      const def = (ctx.zodSchema as unknown as { _zod: { def: { type: string; out?: unknown } } })._zod.def;
      // Every duration field (durationMs and its refinements share the transform): its syntax, as a CEL rule
      // with a readable message (inside lists a pattern, see withoutRulesInLists).
      if (def.type === 'pipe' && def.out === durationOut) {
        const node = ctx.jsonSchema as SchemaNode;
        node.maxLength = MAX_DURATION_LENGTH;
        node['x-kubernetes-validations'] = [durationRule];
      }
      delete (ctx.jsonSchema as SchemaNode).format;
    },
  }) as SchemaNode;
  delete json.$schema;
  const spec = toStructural(json);
  // Keep only the defaults zod applies (`.default`/`.prefault`); others are documentation (e.g. maxCatchUpRuns,
  // whose default applies only with catchUp: all, and which the loader refuses otherwise).
  const props = spec.properties as Record<string, SchemaNode>;
  for (const [name, field] of Object.entries(object.shape)) {
    const t = (field as unknown as { _zod: { def: { type: string } } })._zod.def.type;
    if (t !== 'default' && t !== 'prefault') delete props[name]?.default;
  }
  props.cron = { ...props.cron, maxLength: MAX_CRON_LENGTH, 'x-kubernetes-validations': cronRules };
  withoutRulesInLists(spec, false);
  spec['x-kubernetes-validations'] = [...((spec['x-kubernetes-validations'] as CelRule[] | undefined) ?? []), ...specRules];
  spec.description = 'One schedule, exactly as in a cronflock schedule file (without name: the name is metadata.name).';
  return spec;
}

/**
 * The API server estimates a CEL rule's cost for the longest list a schema allows, and the schedule schema's
 * lists have no bound: rules inside lists would exceed the CRD's cost budget. There, a duration keeps its
 * syntax as a `pattern` and other rules are left to the loader.
 */
function withoutRulesInLists(node: SchemaNode, inList: boolean): void {
  const rules = node['x-kubernetes-validations'] as CelRule[] | undefined;
  if (inList && rules) {
    if (rules.some((r) => r.rule === durationRule.rule)) node.pattern = DURATION_RE;
    delete node['x-kubernetes-validations'];
  }
  for (const child of Object.values((node.properties as Record<string, SchemaNode> | undefined) ?? {})) withoutRulesInLists(child, inList);
  if (node.items) withoutRulesInLists(node.items as SchemaNode, true);
  if (node.additionalProperties && typeof node.additionalProperties === 'object') withoutRulesInLists(node.additionalProperties as SchemaNode, true);
}

const time = (description: string): SchemaNode => ({ type: 'string', format: 'date-time', description });
const int = (description: string): SchemaNode => ({ type: 'integer', format: 'int64', description });
const str = (description: string): SchemaNode => ({ type: 'string', description });

/** The structural schema of `status` (written by the replicas; see runner/kubernetes/status.ts). */
export function statusSchema(): SchemaNode {
  const counts = {
    succeeded: int('runs that succeeded'),
    failed: int('runs that failed'),
    missed: int('occurrences recorded missed (starting deadline, catch-up)'),
    skipped: int('occurrences recorded skipped (suspended, overlap, superseded, schedule changed)'),
  };
  return {
    type: 'object',
    description: 'What the flock last did with this schedule, written by the replica that did it.',
    properties: {
      observedGeneration: int('the spec generation the flock has loaded (or refused, see conditions)'),
      lastScheduleTime: time('due time of the latest occurrence that started'),
      lastSuccessfulTime: time('when the latest successful run ended'),
      nextDueTime: time('the next due time'),
      nextFireTime: time('the next fire time (due time plus its offset in the jitter window)'),
      activeCount: int('runs holding a claim now'),
      active: {
        type: 'array',
        description: 'runs holding a claim now',
        'x-kubernetes-list-type': 'map',
        'x-kubernetes-list-map-keys': ['occurrence'],
        items: {
          type: 'object',
          required: ['occurrence'],
          properties: {
            occurrence: str('occurrence key <schedule>@<due time>'),
            dueTime: time('due time'),
            replica: str('the claimant'),
            fencingToken: int('fencing token of the claim'),
            attempt: int('attempt number'),
            startTime: time('when the attempt started (Redis clock)'),
          },
        },
      },
      lastResult: {
        type: 'object',
        description: 'the final outcome of the latest occurrence (by due time) that has one',
        properties: {
          occurrence: str('occurrence key'),
          dueTime: time('due time'),
          state: { type: 'string', enum: ['succeeded', 'failed', 'missed', 'skipped'], description: 'final state' },
          reason: str('why it failed, was missed or was skipped'),
          replica: str('the replica that recorded it'),
          fencingToken: int('fencing token of the claim that recorded it'),
          attempt: int('attempt number'),
          lateness: str('first start minus fire time, e.g. 12ms'),
          startTime: time('start of the attempt'),
          endTime: time('end of the attempt'),
        },
      },
      last24h: { type: 'object', description: 'outcomes recorded in the last 24 hours (sum of recent)', properties: counts },
      recent: {
        type: 'array',
        description: 'outcomes per hour, for last24h (at most 25 hours)',
        maxItems: 25,
        'x-kubernetes-list-type': 'map',
        'x-kubernetes-list-map-keys': ['hour'],
        items: { type: 'object', required: ['hour'], properties: { hour: time('start of the hour'), ...counts } },
      },
      conditions: {
        type: 'array',
        description: 'Ready (the flock runs this generation), Invalid (the loader refused the spec), Suspended',
        'x-kubernetes-list-type': 'map',
        'x-kubernetes-list-map-keys': ['type'],
        items: {
          type: 'object',
          required: ['type', 'status', 'lastTransitionTime', 'reason', 'message'],
          properties: {
            type: str('Ready, Invalid or Suspended'),
            status: { type: 'string', enum: ['True', 'False', 'Unknown'] },
            observedGeneration: int('the generation the condition is about'),
            lastTransitionTime: time('when status last changed'),
            reason: str('CamelCase reason'),
            message: str('human-readable details'),
          },
        },
      },
    },
  };
}

/** The printer columns of `kubectl get schedules` (CronJob-like; `-o wide` adds JITTER and REPLICA). */
export const PRINTER_COLUMNS = [
  { name: 'Schedule', type: 'string', jsonPath: '.spec.cron', description: 'cron expression' },
  { name: 'Timezone', type: 'string', jsonPath: '.spec.timeZone', description: 'time zone of the cron expression' },
  { name: 'Suspend', type: 'boolean', jsonPath: '.spec.suspend', description: 'suspended in the spec' },
  { name: 'Active', type: 'integer', jsonPath: '.status.activeCount', description: 'runs holding a claim now' },
  { name: 'Last Schedule', type: 'date', jsonPath: '.status.lastScheduleTime', description: 'due time of the latest started occurrence' },
  // A string, not a date: kubectl prints future dates as <invalid>.
  { name: 'Next Fire', type: 'string', jsonPath: '.status.nextFireTime', description: 'next fire time (UTC)' },
  { name: 'Last Result', type: 'string', jsonPath: '.status.lastResult.state', description: 'final state of the latest finished occurrence' },
  { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
  { name: 'Jitter', type: 'string', jsonPath: '.spec.jitter', priority: 1, description: 'jitter window length' },
  { name: 'Replica', type: 'string', jsonPath: '.status.lastResult.replica', priority: 1, description: 'replica of the latest finished run' },
  { name: 'Ready', type: 'string', jsonPath: '.status.conditions[?(@.type=="Ready")].status', priority: 1, description: 'the flock runs this generation' },
] as const;

/** The CustomResourceDefinition (apiextensions.k8s.io/v1) of Schedule, as an object. Deterministic. */
export function scheduleCrd(): SchemaNode {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: CRD_NAME, labels: { 'app.kubernetes.io/name': 'cronflock' } },
    spec: {
      group: GROUP,
      scope: 'Namespaced',
      names: { kind: KIND, listKind: `${KIND}List`, plural: PLURAL, singular: KIND.toLowerCase(), categories: ['cronflock'] },
      versions: [
        {
          name: VERSION,
          served: true,
          storage: true,
          subresources: { status: {} },
          additionalPrinterColumns: PRINTER_COLUMNS,
          schema: {
            openAPIV3Schema: {
              type: 'object',
              description: `A cronflock schedule (${API_VERSION}): a cron expression in a time zone, a jitter window, run policies and the job, run by a leaderless flock of replicas.`,
              required: ['spec'],
              properties: {
                apiVersion: { type: 'string' },
                kind: { type: 'string' },
                metadata: {
                  type: 'object',
                  properties: {
                    name: { type: 'string', maxLength: 63, pattern: SCHEDULE_NAME_PATTERN.source },
                  },
                },
                spec: specSchema(),
                status: statusSchema(),
              },
            },
          },
        },
      ],
    },
  };
}

/** {@link scheduleCrd} as the YAML committed at {@link CRD_PATH}. */
export function scheduleCrdYaml(): string {
  return `# Generated from runner/config/schema.ts by runner/kubernetes/crd.ts (npm run schema). Do not edit.\n${stringify(scheduleCrd(), { lineWidth: 0 })}`;
}
