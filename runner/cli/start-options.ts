/**
 * The runner options `cronflock start` takes, each defined once: its flag, the runner option (engine/options.ts)
 * it sets, the unit its value is read in, and its help text with the default. The command's options, the
 * mapping from flags to options, and the flag names in error messages all come from {@link START_FLAGS}.
 */
import { Option } from 'commander';
import { DEFAULT_OPTIONS, type RunnerOptions } from '../engine/options.js';
import { formatDurationMs } from '../time/duration.js';
import { durationArg, nonNegativeIntArg, positiveIntArg } from './arg-parsers.js';

/** How a flag's value is read: a duration (`500ms`, `4s`, `1h`; → ms), a whole number ≥ 0 or ≥ 1, or a name. */
export type FlagUnit = 'duration' | 'count' | 'positive count' | 'name';

/** One flag of `cronflock start` that sets a runner option. */
export interface StartFlag {
  /** The runner option it sets. */
  option: keyof RunnerOptions;
  /** As users type it, with its value's name, e.g. `--lock <duration>`. */
  flag: string;
  unit: FlagUnit;
  /** What it does; the default is added to it. */
  help: string;
  /** The default in words, when it is not the option's value in DEFAULT_OPTIONS (shown as `(default: …)`). */
  defaultText?: string;
  /** An environment variable that sets it too. */
  env?: string;
}

/** Every runner option `start` takes, in the order `--help` lists them. */
export const START_FLAGS: readonly StartFlag[] = [
  { option: 'replica', flag: '--replica <name>', unit: 'name', help: 'name of this replica', defaultText: 'host-pid-random', env: 'CRONFLOCK_REPLICA' },
  { option: 'lockMs', flag: '--lock <duration>', unit: 'duration', help: 'claim lease; failover takes about lock + lock/2' },
  { option: 'stalledIntervalMs', flag: '--stalled-interval <duration>', unit: 'duration', help: 'stall check period', defaultText: 'lock/2' },
  { option: 'shutdownGraceMs', flag: '--grace <duration>', unit: 'duration', help: 'on SIGTERM, time for running runs to finish before hand-over' },
  { option: 'horizonMs', flag: '--horizon <duration>', unit: 'duration', help: 'how far back occurrences are accounted for' },
  { option: 'retentionMs', flag: '--retention <duration>', unit: 'duration', help: 'how long run records are kept' },
  { option: 'lookaheadMs', flag: '--lookahead <duration>', unit: 'duration', help: 'how far ahead occurrences are planned' },
  { option: 'tickMs', flag: '--tick <duration>', unit: 'duration', help: 'planner period' },
  { option: 'maxStalls', flag: '--max-stalls <n>', unit: 'count', help: 're-claims after stalls before an occurrence fails' },
  { option: 'concurrency', flag: '--concurrency <n>', unit: 'positive count', help: 'live occurrences held at once by this replica' },
  {
    option: 'backlogConcurrency',
    flag: '--backlog-concurrency <n>',
    unit: 'positive count',
    help: 'runs of triggers, resume runs, catch-up runs and backfill held at once by this replica',
  },
  { option: 'backfillConcurrency', flag: '--backfill-concurrency <n>', unit: 'positive count', help: 'backfill occurrences running at once across the whole flock' },
];

/** Runner options without a `start` flag of their own, as messages name them. */
const OTHER_NAMES: Partial<Record<keyof RunnerOptions, string>> = {
  namespace: '--namespace', // a flag of every command that reads the flock (cli/redis-target.ts)
  prefetchMs: 'prefetch',
};

const PARSERS: Record<FlagUnit, ((v: string) => number) | undefined> = {
  duration: durationArg,
  count: nonNegativeIntArg,
  'positive count': positiveIntArg,
  name: undefined,
};

/** The commander option of a flag, with its parser, default in its help text, and environment variable. */
export function flagOption(f: StartFlag): Option {
  const dflt = f.defaultText !== undefined ? `: ${f.defaultText}` : ` ${defaultText(f)}`;
  const o = new Option(f.flag, `${f.help} (default${dflt})`);
  const parse = PARSERS[f.unit];
  if (parse) o.argParser(parse);
  if (f.env) o.env(f.env);
  return o;
}

function defaultText(f: StartFlag): string {
  const v = (DEFAULT_OPTIONS as Partial<RunnerOptions>)[f.option];
  return f.unit === 'duration' ? formatDurationMs(v as number) : String(v);
}

/**
 * The runner options a user set, from commander's parsed options (`start`'s action): flags not given (and
 * empty names) are left out, so compileOptions fills in their defaults.
 */
export function optionsFromFlags(parsed: Record<string, unknown>): Partial<RunnerOptions> {
  const user: Partial<RunnerOptions> = {};
  for (const f of START_FLAGS) {
    const v = parsed[flagOption(f).attributeName()];
    if (v !== undefined && v !== '') (user as Record<string, unknown>)[f.option] = v;
  }
  return user;
}

/** Option names as users type them: `lockMs` → `--lock`. */
const FLAG_NAMES: Record<string, string> = {
  ...Object.fromEntries(START_FLAGS.map((f) => [f.option, f.flag.split(' ')[0]!])),
  ...OTHER_NAMES,
};

/** Replaces runner option names in a message (compileOptions' errors) with the flags users type. */
export function flagNames(message: string): string {
  return message.replace(new RegExp(`\\b(${Object.keys(FLAG_NAMES).join('|')})\\b`, 'g'), (m) => FLAG_NAMES[m] ?? m);
}
