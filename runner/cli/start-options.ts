/**
 * The flags of `cronflock start`, each defined once: its flag, the runner option (engine/options.ts) it sets or
 * the start setting it is, the unit its value is read in, and its help text with the default. The command's
 * options, the mapping from flags to runner options, and the flag names in error messages all come from
 * {@link START_FLAGS}. Only the flags shared with other commands are defined beside them: the Redis target and
 * `--namespace` (cli/redis-target.ts) and the dashboard API's `--listen` and `--api-token-file` (cli/ui-command.ts).
 */
import { Option } from 'commander';
import { DEFAULT_OPTIONS, OptionsError, type RunnerOptions } from '../engine/options.js';
import { DEFAULT_HISTORY_MS } from '../history/config.js';
import { formatDurationMs } from '../time/duration.js';
import { durationArg, nonNegativeIntArg, positiveIntArg } from './arg-parsers.js';

/**
 * How a flag's value is read: a duration (`500ms`, `4s`, `1h`; → ms), a whole number ≥ 0 or ≥ 1, a name or other
 * text, a comma-separated list (→ string[]), one of `choices`, or no value at all (a switch: true, or false for
 * a `--no-…` flag).
 */
export type FlagUnit = 'duration' | 'count' | 'positive count' | 'name' | 'text' | 'list' | 'choice' | 'switch';

/** One flag of `cronflock start`. */
export interface StartFlag {
  /** The runner option it sets; absent for the start command's own settings (read by commander's name). */
  option?: keyof RunnerOptions;
  /** As users type it, with its value's name, e.g. `--lock <duration>`. */
  flag: string;
  unit: FlagUnit;
  /** What it does; the default is added to it. */
  help: string;
  /** The default in words, when it is not the option's value in DEFAULT_OPTIONS (shown as `(default: …)`). */
  defaultText?: string;
  /** An environment variable that sets it too. */
  env?: string;
  /** The value when neither the flag nor `env` is given (commander's default, shown by it in `--help`). */
  defaultValue?: string;
  /** With unit `choice`: the values it takes. */
  choices?: readonly string[];
}

/** Every flag of `start` but the shared ones (see the module docs), in the order `--help` lists them. */
export const START_FLAGS: readonly StartFlag[] = [
  { option: 'replica', flag: '--replica <name>', unit: 'name', help: 'name of this replica', defaultText: 'host-pid-random', env: 'CRONFLOCK_REPLICA' },
  { option: 'lockMs', flag: '--lock <duration>', unit: 'duration', help: 'claim lease; failover takes about lock + lock/2' },
  { option: 'stalledIntervalMs', flag: '--stalled-interval <duration>', unit: 'duration', help: 'stall check period', defaultText: 'lock/2' },
  { option: 'shutdownGraceMs', flag: '--grace <duration>', unit: 'duration', help: 'on SIGTERM, time for running runs to finish before hand-over' },
  { option: 'horizonMs', flag: '--horizon <duration>', unit: 'duration', help: 'how far back occurrences are accounted for' },
  { option: 'retentionMs', flag: '--retention <duration>', unit: 'duration', help: 'how long run records are kept' },
  { option: 'lookaheadMs', flag: '--lookahead <duration>', unit: 'duration', help: 'how far ahead occurrences are planned' },
  { option: 'tickMs', flag: '--tick <duration>', unit: 'duration', help: 'planner period' },
  {
    option: 'planBudgetMs',
    flag: '--plan-budget <duration>',
    unit: 'duration',
    help: 'how long one planner tick may record occurrences before the rest goes to a tick that starts at once; 0: 500 occurrences per tick',
    defaultText: 'a quarter of the membership TTL, max(2 × tick, lookahead − prefetch − tick): 500ms',
  },
  { option: 'maxStalls', flag: '--max-stalls <n>', unit: 'count', help: 're-claims after stalls before an occurrence fails' },
  { option: 'concurrency', flag: '--concurrency <n>', unit: 'positive count', help: 'live occurrences held at once by this replica' },
  {
    option: 'batchSize',
    flag: '--batch-size <n>',
    unit: 'positive count',
    help: 'most on-time occurrences of one fire-time slot delivered as one queue job (each still claimed on its own); 1: one job each',
    env: 'CRONFLOCK_BATCH_SIZE',
  },
  {
    option: 'backlogConcurrency',
    flag: '--backlog-concurrency <n>',
    unit: 'positive count',
    help: 'runs of triggers, resume runs, catch-up runs and backfill held at once by this replica',
  },
  { option: 'backfillConcurrency', flag: '--backfill-concurrency <n>', unit: 'positive count', help: 'backfill occurrences running at once across the whole flock' },
  // ---- durability across a Redis failover (runner/redis/store.ts ReplicaWait) ----
  {
    option: 'redisWaitReplicas',
    flag: '--redis-wait-replicas <n>',
    unit: 'count',
    help: 'Redis replicas that must acknowledge each claim before its run starts, and each final state (Redis WAIT); 0: off',
  },
  {
    option: 'redisWaitTimeoutMs',
    flag: '--redis-wait-timeout <duration>',
    unit: 'duration',
    help: 'how long each WAIT waits for them; a claim they do not acknowledge in time is given back, its run not started',
  },
  {
    option: 'redisTurnMs',
    flag: '--redis-turn <duration>',
    unit: 'duration',
    help: 'send on-time claims and finishes to Redis at multiples of this on the Redis clock, together with the other replicas: fewer Redis wake-ups (less Redis CPU per occurrence), runs start up to this much later; 0: at once',
  },
  // ---- sources (runner/sources/): schedule files and the cluster's Schedule resources ----
  { flag: '--no-watch', unit: 'switch', help: 'do not reload when the schedule files change (SIGHUP still reloads)' },
  {
    flag: '--watch-schedules <mode>',
    unit: 'choice',
    choices: ['auto', 'on', 'off'],
    help: 'Schedule resources of the cluster: auto (in a pod, when the CRD is installed), on, off',
    env: 'CRONFLOCK_WATCH_SCHEDULES',
    defaultValue: 'auto',
  },
  { flag: '--watch-namespaces <list>', unit: 'list', help: 'comma-separated namespaces whose Schedules run here', defaultText: 'all it may list' },
  { flag: '--schedule-selector <labels>', unit: 'text', help: 'only Schedules with these labels, e.g. cronflock.io/flock=a' },
  { flag: '--kubeconfig <path>', unit: 'text', help: 'kubeconfig for watching Schedules', defaultText: 'KUBECONFIG, ~/.kube/config, in-cluster' },
  { flag: '--kube-context <name>', unit: 'name', help: 'kubeconfig context' },
  { flag: '--kube-qps <n>', unit: 'positive count', help: 'requests per second to the API server (status, Events, watches)' },
  // ---- what the replica serves and reports ----
  { flag: '--admin <host:port|off>', unit: 'text', help: 'serve /metrics, /healthz, /readyz here', env: 'CRONFLOCK_ADMIN', defaultValue: '127.0.0.1:9464' },
  {
    flag: '--schedule-metrics <on|off|top:N>',
    unit: 'text',
    help: 'per-schedule health series: all schedules, none, or the N most overdue or failing',
    env: 'CRONFLOCK_SCHEDULE_METRICS',
    defaultValue: 'on',
  },
  {
    flag: '--otel [endpoint]',
    unit: 'text',
    help: 'send OpenTelemetry traces (one per occurrence) over OTLP/HTTP; on by itself when OTEL_EXPORTER_OTLP_ENDPOINT is set (default endpoint: that, else http://localhost:4318)',
  },
  // ---- dashboard (runner/api/replica-extras.ts) ----
  {
    flag: '--history <duration>',
    unit: 'duration',
    help: `how long finished occurrences, their log lines and the audit log are kept (default ${formatDurationMs(DEFAULT_HISTORY_MS)})`,
  },
  { flag: '--ui', unit: 'switch', help: 'also serve the dashboard and the HTTP API (see cronflock ui)' },
];

/** Runner options without a `start` flag of their own, as messages name them. */
const OTHER_NAMES: Partial<Record<keyof RunnerOptions, string>> = {
  namespace: '--namespace', // a flag of every command that reads the flock (cli/redis-target.ts)
  prefetchMs: 'prefetch',
};

const PARSERS: Record<FlagUnit, ((v: string) => unknown) | undefined> = {
  duration: durationArg,
  count: nonNegativeIntArg,
  'positive count': positiveIntArg,
  name: undefined,
  text: undefined,
  list: (v) =>
    v
      .split(',')
      .map((x) => x.trim())
      .filter(Boolean),
  choice: undefined,
  switch: undefined,
};

/**
 * The commander option of a flag, with its parser, choices, default (in its help text, or commander's own for a
 * `defaultValue`), and environment variable.
 */
export function flagOption(f: StartFlag): Option {
  const dflt = f.defaultText !== undefined ? ` (default: ${f.defaultText})` : f.option !== undefined ? ` (default ${defaultText(f.option, f.unit)})` : '';
  const o = new Option(f.flag, `${f.help}${dflt}`);
  const parse = PARSERS[f.unit];
  if (parse) o.argParser(parse);
  if (f.choices) o.choices(f.choices);
  if (f.env) o.env(f.env);
  if (f.defaultValue !== undefined) o.default(f.defaultValue);
  return o;
}

function defaultText(option: keyof RunnerOptions, unit: FlagUnit): string {
  const v = (DEFAULT_OPTIONS as Partial<RunnerOptions>)[option];
  return unit === 'duration' ? formatDurationMs(v as number) : String(v);
}

/**
 * The runner options a user set, from commander's parsed options (`start`'s action): flags not given (and
 * empty names) are left out, so compileOptions fills in their defaults.
 * @throws OptionsError for flags that only mean something with another one: `--redis-wait-timeout` without
 *   `--redis-wait-replicas` of 1 or more (WAIT is off, so the timeout would be ignored without a word).
 */
export function optionsFromFlags(parsed: Record<string, unknown>): Partial<RunnerOptions> {
  const user: Partial<RunnerOptions> = {};
  for (const f of START_FLAGS) {
    if (f.option === undefined) continue;
    const v = parsed[flagOption(f).attributeName()];
    if (v !== undefined && v !== '') (user as Record<string, unknown>)[f.option] = v;
  }
  if (user.redisWaitTimeoutMs !== undefined && !((user.redisWaitReplicas ?? 0) > 0)) {
    throw new OptionsError(
      `--redis-wait-timeout ${formatDurationMs(user.redisWaitTimeoutMs)} has no effect without --redis-wait-replicas of 1 or more ` +
        `(${user.redisWaitReplicas === undefined ? 'not given' : 'got 0'}: claims are not waited for): add --redis-wait-replicas <n>, ` +
        'the Redis replicas that must acknowledge each claim, or leave out --redis-wait-timeout',
    );
  }
  return user;
}

/** Option names as users type them: `lockMs` → `--lock`. */
const FLAG_NAMES: Record<string, string> = {
  ...Object.fromEntries(START_FLAGS.filter((f) => f.option !== undefined).map((f) => [f.option, f.flag.split(' ')[0]!])),
  ...OTHER_NAMES,
};

/** Replaces runner option names in a message (compileOptions' errors) with the flags users type. */
export function flagNames(message: string): string {
  return message.replace(new RegExp(`\\b(${Object.keys(FLAG_NAMES).join('|')})\\b`, 'g'), (m) => FLAG_NAMES[m] ?? m);
}
