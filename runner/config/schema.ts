/**
 * The schedule-file schema: ONE zod schema that validates a whole file, checks the fields against each other
 * (cron in its zone, unique names, jitter below the gap between due times) and outputs compiled values with
 * units in their names (`jitterMs`, `startingDeadlineMs`). The JSON Schema for editors is generated from it
 * (json-schema.ts), so the two cannot drift apart.
 *
 * Cross-field checks run even when other fields of the same schedule (or other schedules) are invalid, so that
 * one pass reports every problem of a file. Issues they raise carry `params.code` (a {@link ConfigErrorCode}).
 */
import { z } from 'zod';
import { findJobKind, jobKinds } from '../../jobs/registry.js';
import { CronError, compileCron, minGapMs, type DueTimes } from '../schedule/cron.js';
import { formatDurationMs } from '../time/duration.js';
import { blackoutSchema, calendarSchema, checkBlackouts, scheduleCalendarSchema } from './calendars-schema.js';
import type { ConfigErrorCode } from './errors.js';
import { durationMs, positiveDurationMs, timerDurationMs } from '../validate/zod-duration.js';
import { checkGroupNames, groupsSchema, rateLimitSchema, type GroupLimits } from './groups-schema.js';
import { cleanupNotifyAlias, heartbeatSchema, notifySchema, signingSchema } from '../notify/config.js';

/** DNS-1123 label: lowercase letters, digits and `-`, starting and ending with a letter or digit; ≤ 63 chars. */
export const SCHEDULE_NAME_PATTERN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/** A schedule name (it becomes part of occurrence keys, Redis keys and Kubernetes labels). */
export const scheduleNameSchema = z
  .string()
  .max(63, 'must be at most 63 characters (a DNS-1123 label)')
  .regex(
    SCHEDULE_NAME_PATTERN,
    'must be a DNS-1123 label: lowercase letters, digits and "-", starting and ending with a letter or digit',
  );

/**
 * A tenant: who a schedule belongs to (a customer, a team), for listing, metrics (the `tenant` label) and the
 * per-tenant limit on stored schedules (runner/store/). The same form as a schedule name.
 */
export const tenantSchema = z
  .string()
  .max(63, 'must be at most 63 characters (a DNS-1123 label)')
  .regex(SCHEDULE_NAME_PATTERN, 'must be a DNS-1123 label: lowercase letters, digits and "-", starting and ending with a letter or digit');

/** A label key: letters, digits, `-`, `_`, `.`, `/`, starting and ending with a letter or digit (as Kubernetes' names part). */
export const LABEL_KEY_PATTERN = /^[A-Za-z0-9]([-A-Za-z0-9_./]*[A-Za-z0-9])?$/;
/** A label value: empty, or letters, digits, `-`, `_`, `.`, starting and ending with a letter or digit. */
export const LABEL_VALUE_PATTERN = /^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$/;
/** Most labels on one schedule. */
export const MAX_LABELS = 32;

/** A schedule's labels: text → text, for listing by `label=key=value` (not metrics: they would be unbounded). */
export const labelsSchema = z
  .record(
    z.string().max(63, 'must be at most 63 characters').regex(LABEL_KEY_PATTERN, 'must be letters, digits, "-", "_", ".", "/", starting and ending with a letter or digit'),
    z.string().max(63, 'must be at most 63 characters').regex(LABEL_VALUE_PATTERN, 'must be empty, or letters, digits, "-", "_", ".", starting and ending with a letter or digit'),
  )
  .refine((m) => Object.keys(m).length <= MAX_LABELS, `must have at most ${MAX_LABELS} labels`);

/** What to do with due times that passed while no replica ran: none, only the latest, or all (bounded). */
export const catchUpSchema = z.enum(['none', 'latest', 'all']);
/** Catch-up policy after downtime; see {@link catchUpSchema}. */
export type CatchUpPolicy = z.output<typeof catchUpSchema>;

/** Concurrency policy across the whole flock (Kubernetes CronJob `concurrencyPolicy`). */
export const concurrencyPolicySchema = z.enum(['Allow', 'Forbid', 'Replace']);
/** See {@link concurrencyPolicySchema}. */
export type ConcurrencyPolicy = z.output<typeof concurrencyPolicySchema>;

/** What happens on resume to occurrences missed while suspended at run time (`cronflock suspend`). */
export const onResumeSchema = z.enum(['skip', 'latest']);
/** See {@link onResumeSchema}. */
export type OnResumePolicy = z.output<typeof onResumeSchema>;

/** Default of `maxCatchUpRuns` (applies with `catchUp: all`). */
export const DEFAULT_MAX_CATCH_UP_RUNS = 10;

/** Validated parameters of a job block, before the kind's `compile`: `kind` plus the kind's own fields. */
export type JobParams = { readonly kind: string } & Readonly<Record<string, unknown>>;

type Discriminable = z.core.$ZodTypeDiscriminable;

/**
 * The `job:` block: a discriminated union on `kind`, built from the registered job kinds, so a new kind in
 * jobs/registry.ts is validated (and documented in the JSON Schema) without touching this file.
 */
export const jobSchema = z
  .discriminatedUnion('kind', jobKinds.map((k) => k.schema) as unknown as [Discriminable, ...Discriminable[]])
  .describe(`What to run. \`kind\` selects the job kind: ${jobKinds.map((k) => k.kind).join(', ')}.`) as z.ZodType<
  JobParams,
  unknown
>;

/**
 * One schedule's fields as written, before the cross-field checks and the compilation of {@link scheduleSchema}
 * (for generators of other schemas from this one, e.g. the Schedule CRD).
 */
export const scheduleObject = z.strictObject({
  name: scheduleNameSchema.describe(
    'Unique name of the schedule across all schedule files: a DNS-1123 label (lowercase letters, digits and "-", starting and ending with a letter or digit, at most 63 characters).',
  ),
  cron: z
    .string()
    .min(1, 'must not be empty')
    .describe(
      'Cron expression: 5 fields (minute hour day-of-month month day-of-week), or 6 with seconds first, or a macro such as @hourly, @daily, @weekly, @monthly, @yearly. Quote it in YAML ("*/5 * * * *"). The time zone goes in timeZone, not in a CRON_TZ= prefix.',
    ),
  timeZone: z
    .string()
    .min(1, 'must not be empty')
    .default('UTC')
    .describe('IANA time zone the cron expression is read in, e.g. Europe/Berlin (default UTC).'),
  jitter: durationMs
    .prefault('0')
    .describe(
      'Length of the jitter window [due, due + jitter): each occurrence fires at a deterministic offset inside it. Must be shorter than the gap between due times. A duration such as 500ms, 30s, 5m (default 0).',
    ),
  startingDeadline: positiveDurationMs
    .optional()
    .describe(
      'How late after its fire time an occurrence may still start; later ones are recorded as missed. A duration such as 30s or 5m (default: no limit).',
    ),
  suspend: z.boolean().default(false).describe('When true, no new occurrences are started (default false).'),
  tenant: tenantSchema
    .optional()
    .describe('Who the schedule belongs to (a customer, a team): listed and filtered by it, carried by its metrics as the tenant label, counted against the per-tenant limit of stored schedules (cronflock tenants set-limit). A DNS-1123 label (default: none).'),
  labels: labelsSchema
    .optional()
    .describe('Labels (key: value, at most 32) to list and filter schedules by (label=key=value); not put on metrics (default: none).'),
  catchUp: catchUpSchema
    .default('latest')
    .describe(
      'Due times that passed while no replica ran: none = skip them, latest = run only the latest, all = run each, up to maxCatchUpRuns (default latest).',
    ),
  maxCatchUpRuns: z
    .int('must be a whole number')
    .min(1, 'must be at least 1')
    .optional()
    .meta({
      description: `With catchUp: all, the most missed due times that are run after downtime (default ${DEFAULT_MAX_CATCH_UP_RUNS}).`,
      default: DEFAULT_MAX_CATCH_UP_RUNS,
    }),
  concurrencyPolicy: concurrencyPolicySchema
    .default('Allow')
    .describe(
      'When an occurrence is due while an earlier one of this schedule still runs on any replica: Allow = run both (up to maxConcurrent), Forbid = record the new one skipped (overlap), Replace = abort the running one and start the new one (default Allow, as Kubernetes CronJob).',
    ),
  maxConcurrent: z
    .int('must be a whole number')
    .min(1, 'must be at least 1')
    .optional()
    .describe('With concurrencyPolicy: Allow, the most runs of this schedule at once across the flock; later ones wait for a free slot, within their starting deadline (default: no limit).'),
  timeout: timerDurationMs
    .optional()
    .describe('Longest a run may take: its AbortSignal fires and the attempt is recorded failed: timeout. A duration such as 30s or 10m (default: no limit).'),
  overdueGrace: positiveDurationMs
    .optional()
    .describe(
      'How long after a fire time a success may come before the schedule counts as overdue (cronflock_schedule_overdue_seconds, the ScheduleOverdue alert). A duration such as 30s or 1h (default: the timeout, else 5m).',
    ),
  retries: z
    .int('must be a whole number')
    .min(0, 'must be 0 or more')
    .max(100, 'must be at most 100')
    .default(0)
    .describe('How many times a failed attempt (error, non-2xx, timeout) is retried, with exponential backoff and jitter (default 0).'),
  retryBackoff: timerDurationMs.prefault('1s').describe('Delay before the first retry; it doubles with each retry, with jitter (default 1s).'),
  retryBackoffMax: timerDurationMs.prefault('5m').describe('Longest delay between retries (default 5m).'),
  onResume: onResumeSchema
    .default('latest')
    .describe(
      'After `cronflock resume`: skip = occurrences missed while suspended stay skipped, latest = the most recent of them runs once, within its starting deadline (default latest, as Kubernetes CronJob).',
    ),
  notify: notifySchema.optional(),
  heartbeat: heartbeatSchema.optional(),
  signing: signingSchema.optional(),
  calendar: scheduleCalendarSchema.optional(),
  blackouts: z
    .array(blackoutSchema)
    .optional()
    .describe('Windows in which this schedule starts no run: skip, delay to the window\'s end, or abort (see README "Calendars and blackout windows").'),
  group: z
    .string()
    .min(1, 'must not be empty')
    .optional()
    .describe('The concurrency group (a name under groups: of this file) whose limits this schedule shares with the other schedules in it.'),
  rateLimit: rateLimitSchema.optional(),
  job: jobSchema,
});

type RawSchedule = Partial<Record<keyof z.output<typeof scheduleObject>, unknown>>;

/** Due times compiled by the cross-field check, handed to the transform so each cron is compiled once. */
const compiledDue = new WeakMap<object, DueTimes>();

function issueParams(code: ConfigErrorCode, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { code, ...extra };
}

/** Runs even when sibling fields failed: every check looks at the types it needs and skips otherwise. */
function checkSchedule(value: unknown, ctx: z.RefinementCtx): void {
  if (typeof value !== 'object' || value === null) return;
  const v = value as RawSchedule;
  let due: DueTimes | undefined;
  if (typeof v.cron === 'string' && v.cron !== '' && typeof v.timeZone === 'string' && v.timeZone !== '') {
    try {
      due = compileCron(v.cron, v.timeZone, { hashSeed: typeof v.name === 'string' ? v.name : '' });
      compiledDue.set(value, due);
    } catch (err) {
      if (!(err instanceof CronError)) throw err;
      ctx.addIssue({ code: 'custom', path: [err.field], message: err.message, params: issueParams(err.code) });
      // A bad cron stops the compile before the zone is looked at: check the zone on its own, so that every error
      // of the schedule is said at once (found by a user: a bad zone showed only after the cron was fixed).
      if (err.field !== 'timeZone') {
        try {
          compileCron('0 0 * * *', v.timeZone);
        } catch (zoneErr) {
          if (!(zoneErr instanceof CronError)) throw zoneErr;
          if (zoneErr.field === 'timeZone') ctx.addIssue({ code: 'custom', path: ['timeZone'], message: zoneErr.message, params: issueParams(zoneErr.code) });
        }
      }
    }
  }
  checkBlackouts(v.blackouts, v.timeZone, ctx);
  if (v.maxCatchUpRuns !== undefined && v.catchUp !== 'all') {
    ctx.addIssue({
      code: 'custom',
      path: ['maxCatchUpRuns'],
      message: `only applies with catchUp: all (catchUp is ${String(v.catchUp)})`,
      params: issueParams('SCHEMA_INVALID'),
    });
  }
  if (v.maxConcurrent !== undefined && v.concurrencyPolicy !== undefined && v.concurrencyPolicy !== 'Allow') {
    ctx.addIssue({
      code: 'custom',
      path: ['maxConcurrent'],
      message: `only applies with concurrencyPolicy: Allow (concurrencyPolicy is ${String(v.concurrencyPolicy)}, which runs one at a time)`,
      params: issueParams('SCHEMA_INVALID'),
    });
  }
  if (typeof v.retryBackoff === 'number' && typeof v.retryBackoffMax === 'number' && v.retryBackoffMax < v.retryBackoff) {
    ctx.addIssue({
      code: 'custom',
      path: ['retryBackoffMax'],
      message: 'must not be shorter than retryBackoff',
      params: issueParams('SCHEMA_INVALID'),
    });
  }
  const job = v.job as { kind?: unknown } | undefined;
  checkNotifyFields(v, ctx);
  const kind = typeof job?.kind === 'string' ? findJobKind(job.kind) : undefined;
  for (const issue of kind?.checkSchedule?.(v as Record<string, unknown>) ?? []) {
    ctx.addIssue({ code: 'custom', path: issue.path, message: issue.message, params: issueParams('SCHEMA_INVALID') });
  }
  // A finite number only: a bare 1e400 (Infinity) is refused as no duration already, not as a window too long.
  if (due && typeof v.jitter === 'number' && Number.isFinite(v.jitter) && v.jitter > 0) {
    const gap = sampledMinGapMs(due, Date.now());
    if (v.jitter >= gap) {
      const g = readableDuration(gap);
      ctx.addIssue({
        code: 'custom',
        path: ['jitter'],
        message: `jitter ${readableDuration(v.jitter)} reaches the next due time (due times can be ${g} apart); use a jitter below ${g}`,
        params: issueParams('JITTER_TOO_LONG', { gapMs: gap }),
      });
    }
  }
}

/** How long one sample of an expression's smallest gap is reused (ms): an hour. */
const GAP_SAMPLE_MS = 3_600_000;
/** The last sample of each compiled expression's smallest gap (compiled due times are shared per (cron, zone)). */
const gapSamples = new WeakMap<DueTimes, { hour: number; gapMs: number }>();

/**
 * {@link minGapMs} sampled from the start of the current hour and kept per compiled expression for that hour:
 * schedules that share a cron and zone (10,000 customers at `0 8 * * *`) pay the ~1 ms walk over 2,000 due
 * times once per hour, not once per schedule (it was 60 % of validating a stored definition, which every
 * replica does for every change it applies).
 */
function sampledMinGapMs(due: DueTimes, nowMs: number): number {
  const hour = Math.floor(nowMs / GAP_SAMPLE_MS);
  const have = gapSamples.get(due);
  if (have?.hour === hour) return have.gapMs;
  const gapMs = minGapMs(due, hour * GAP_SAMPLE_MS);
  gapSamples.set(due, { hour, gapMs });
  return gapMs;
}

/** `signing` only for http jobs; cleanup's deprecated job-level `notify` not beside the schedule-level one. */
function checkNotifyFields(v: RawSchedule, ctx: z.RefinementCtx): void {
  const job = v.job as { kind?: unknown } | undefined;
  if (v.signing !== undefined && typeof job?.kind === 'string' && job.kind !== 'http') {
    ctx.addIssue({
      code: 'custom',
      path: ['signing'],
      message: `signs an http job's request body; this schedule's job is kind ${job.kind}`,
      params: issueParams('SCHEMA_INVALID'),
    });
  }
  const alias = cleanupNotifyAlias(v.job);
  if (!alias) return;
  if (v.notify !== undefined) {
    ctx.addIssue({
      code: 'custom',
      path: ['job', 'notify'],
      message: 'the schedule has notify: too; cleanup\'s job-level notify is its deprecated alias: keep the schedule-level one only',
      params: issueParams('SCHEMA_INVALID'),
    });
    return;
  }
  // The job block's own schema checks its shape; what the alias adds is the schedule-level secret check.
  const parsed = notifySchema.safeParse(alias);
  for (const issue of parsed.success ? [] : parsed.error.issues) {
    if (String(issue.path[issue.path.length - 1]).endsWith('Env')) {
      ctx.addIssue({ code: 'custom', path: ['job', 'notify', ...issue.path.map(String)], message: issue.message, params: issueParams('SCHEMA_INVALID') });
    }
  }
}

/** Durations in messages: seconds below two minutes (`90s`, `60s`), else the shortest form (`5m`, `1h30m`). */
function readableDuration(ms: number): string {
  if (ms < 1000 || ms % 1000 !== 0 || ms >= 120_000) return formatDurationMs(ms);
  return `${ms / 1000}s`;
}

const always = (): boolean => true;

/**
 * One schedule. Output: the compiled fields with units in their names, defaults applied, and `due` (the
 * compiled cron in its zone). Cross-field issues: `cron`/`timeZone` (CronError codes), `maxCatchUpRuns`
 * without `catchUp: all`, `jitter` not below the minimum gap between due times (`JITTER_TOO_LONG`).
 */
export const scheduleSchema = scheduleObject
  .superRefine(checkSchedule, { when: always })
  .transform((v) => ({
    name: v.name,
    cron: v.cron,
    timeZone: v.timeZone,
    jitterMs: v.jitter,
    startingDeadlineMs: v.startingDeadline ?? null,
    suspend: v.suspend,
    // Left out when not set (definition hashes of schedules without them stay as they were).
    ...(v.tenant !== undefined ? { tenant: v.tenant } : {}),
    ...(v.labels !== undefined ? { labels: v.labels } : {}),
    catchUp: v.catchUp,
    maxCatchUpRuns: v.maxCatchUpRuns ?? DEFAULT_MAX_CATCH_UP_RUNS,
    concurrencyPolicy: v.concurrencyPolicy,
    maxConcurrent: v.maxConcurrent ?? null,
    timeoutMs: v.timeout ?? null,
    // Only when set: an absent field leaves the definition hash of existing schedules as it was.
    ...(v.overdueGrace !== undefined ? { overdueGraceMs: v.overdueGrace } : {}),
    retries: v.retries,
    retryBackoffMs: v.retryBackoff,
    retryBackoffMaxMs: v.retryBackoffMax,
    onResume: v.onResume,
    notify: v.notify ?? aliasNotify(v.job),
    heartbeat: v.heartbeat,
    signing: v.signing,
    // Left out (undefined) when not set, so that definition hashes of schedules without them do not change.
    calendar: v.calendar,
    blackouts: v.blackouts,
    // Left out when not set (definition hashes); the group's limits are filled in by the file's transform.
    ...(v.group !== undefined ? { group: v.group } : {}),
    ...(v.rateLimit !== undefined ? { rateLimit: { max: v.rateLimit.max, perMs: v.rateLimit.per } } : {}),
    job: v.job,
    due: compiledDue.get(v) ?? compileCron(v.cron, v.timeZone, { hashSeed: v.name }),
  }));

/** cleanup's deprecated job-level notify as the schedule-level block (checked by checkNotifyFields). */
function aliasNotify(job: unknown): z.output<typeof notifySchema> | undefined {
  const alias = cleanupNotifyAlias(job);
  return alias ? notifySchema.parse(alias) : undefined;
}

/** A schedule after validation (before its job is compiled by the job kind). */
export type ValidatedSchedule = z.output<typeof scheduleSchema>;

/**
 * Names must be unique in the file's `schedules` (or `calendars`) list; the duplicate's issue carries
 * `params.list` and `params.firstIndex` (index of the first).
 */
function uniqueNames(list: 'schedules' | 'calendars'): (value: unknown, ctx: z.RefinementCtx) => void {
  const what = list === 'schedules' ? 'name' : 'calendar name';
  return (value, ctx) => {
    const items = (value as Record<string, unknown> | null)?.[list];
    if (!Array.isArray(items)) return;
    const first = new Map<string, number>();
    items.forEach((item: unknown, i) => {
      const name = (item as { name?: unknown } | null)?.name;
      if (typeof name !== 'string') return;
      const j = first.get(name);
      if (j === undefined) {
        first.set(name, i);
        return;
      }
      ctx.addIssue({
        code: 'custom',
        path: [list, i, 'name'],
        message: `${what} "${name}" is already used by ${list}[${j}]`,
        params: issueParams('NAME_DUPLICATE', { list, firstIndex: j }),
      });
    });
  };
}

/** Title of the schedule-file JSON Schema. */
export const SCHEDULE_FILE_TITLE = 'cronflock schedule file';

/** A file must define something: schedules, or calendars (a calendar file), or both. */
function checkDefinesSomething(value: unknown, ctx: z.RefinementCtx): void {
  const v = value as { schedules?: unknown; calendars?: unknown } | null;
  if (v === null || typeof v !== 'object' || Array.isArray(v) || v.schedules !== undefined || v.calendars !== undefined) return;
  ctx.addIssue({ code: 'custom', path: ['schedules'], message: 'the file defines no schedules', params: issueParams('NO_SCHEDULES') });
}

/**
 * A whole schedule file: `{ calendars?: [...], schedules?: [...] }` with at least one of the two (a file of
 * calendars only is a calendar file), unique names. Input is what YAML parsing gives (durations as strings);
 * output is `{ calendars: CalendarEntry[], schedules: ValidatedSchedule[] }` (empty lists when absent).
 */
export const scheduleFileSchema = z
  .strictObject({
    calendars: z
      .array(calendarSchema)
      .optional()
      .describe('Calendars (named sets of days) this file defines. Names must be unique across all schedule files; schedules of every file of the flock can use them.'),
    schedules: z
      .array(scheduleSchema)
      .min(1, 'must list at least one schedule')
      .optional()
      .describe('The schedules this file defines. Names must be unique across all schedule files.'),
    groups: groupsSchema.optional(),
  })
  .superRefine(uniqueNames('schedules'), { when: always })
  .superRefine(uniqueNames('calendars'), { when: always })
  .superRefine(checkDefinesSomething, { when: always })
  .superRefine(checkGroupNames, { when: always })
  .transform((f) => ({
    calendars: f.calendars ?? [],
    schedules: (f.schedules ?? []).map((s) => (s.group === undefined ? s : { ...s, groupLimits: groupLimits(s.group, f.groups?.[s.group]) })),
  }))
  .meta({
    title: SCHEDULE_FILE_TITLE,
    description:
      'Schedules for cronflock, the leaderless cron runner. A file (or each *.yaml / *.yml file of a directory) holds a list of named schedules: a cron expression in a time zone, a jitter window, catch-up and deadline policies, calendars and blackout windows, and the job to run; and optionally calendars shared by the whole flock.',
  });

/** A group's limits as the engine takes them (the file check makes sure the group is defined). */
function groupLimits(name: string, g: { maxConcurrent?: number; rateLimit?: { max: number; per: number } } | undefined): GroupLimits {
  return { name, maxConcurrent: g?.maxConcurrent ?? null, rateLimit: g?.rateLimit ? { max: g.rateLimit.max, perMs: g.rateLimit.per } : null };
}

/** A schedule file as written (durations as strings, defaults not yet applied). */
export type ScheduleFileInput = z.input<typeof scheduleFileSchema>;
/** A schedule file after validation. */
export type ValidatedScheduleFile = z.output<typeof scheduleFileSchema>;
