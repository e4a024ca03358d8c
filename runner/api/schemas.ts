/**
 * The shapes of the HTTP API (`/api/v1`), as zod schemas: the handlers check queries and bodies with them, build
 * their answers to them, and the OpenAPI document (openapi.ts) is generated from them. Times are UTC ms on the
 * Redis clock; durations carry their unit in the name.
 */
import { z } from 'zod';
import { AUDIT_API_SCAN, auditEntrySchema, NO_REASON } from '../history/audit.js';
import { apiSchemas, FINAL_STATES, logLineSchema, occurrenceSchema, runStateSchema } from '../history/model.js';

const ms = z.number().describe('UTC ms (Redis clock)');
const boolParam = z.enum(['true', 'false']);

export const definitionProblemSchema = z
  .object({
    field: z.string().describe('dotted path inside the definition, e.g. `job.url`; empty: the whole definition'),
    reason: z.string(),
    hint: z.string().optional().describe('how to fix it'),
  })
  .register(apiSchemas, { id: 'DefinitionProblem' });

export const errorSchema = z
  .object({
    error: z.object({
      code: z.string().describe('BAD_PARAMETER, BAD_BODY, BODY_TOO_DEEP, DUPLICATE_KEY, UNSAFE_INTEGER, BAD_CURSOR, UNAUTHORIZED, FORBIDDEN, NOT_FOUND, REDIS_UNAVAILABLE …'),
      message: z.string().describe('what is wrong and what to do; for a refused field "<field>: <what is wrong>; allowed: <what is allowed>", several joined by " · "'),
      field: z.string().optional().describe('the (first) refused field, e.g. `body.reason` or `query.limit`'),
      problems: z
        .array(definitionProblemSchema)
        .optional()
        .describe('422 SCHEDULE_INVALID: every problem of the refused definition; 400 DUPLICATE_KEY: every key given twice in one object of the body; 400 UNSAFE_INTEGER: every integer outside ±(2^53−1) (nothing was stored)'),
      version: z.number().int().optional().describe("412 VERSION_CONFLICT: the schedule's current version (0: it does not exist)"),
      source: z.string().optional().describe('409 NAME_OWNED: the source that owns the name (file:line, Schedule <namespace>/<name>)'),
      tenant: z.string().optional().describe('409 TENANT_LIMIT: the tenant at its limit'),
      limit: z.number().int().optional().describe("409 TENANT_LIMIT: the tenant's limit"),
      count: z.number().int().optional().describe("409 TENANT_LIMIT: the tenant's stored schedules"),
    }),
  })
  .register(apiSchemas, { id: 'Error' });

export const countsSchema = z
  .object({ succeeded: z.number().int(), failed: z.number().int(), missed: z.number().int(), skipped: z.number().int() })
  .describe('outcomes recorded in the last 24 h (hourly buckets)')
  .register(apiSchemas, { id: 'Counts24h' });

export const suspensionSchema = z
  .object({ sinceMs: ms, by: z.string(), note: z.string().optional().describe('why (the reason given)') })
  .register(apiSchemas, { id: 'Suspension' });

export const lastResultSchema = z
  .object({ key: z.string(), state: runStateSchema, reason: z.string().optional(), error: z.string().optional(), dueMs: ms, endMs: ms.optional() })
  .register(apiSchemas, { id: 'LastResult' });

export const scheduleSummarySchema = z
  .object({
    name: z.string(),
    source: z.string().describe('where it is defined: file:line, or Schedule <namespace>/<name>'),
    cron: z.string(),
    cronText: z.string().describe('the cron in words'),
    timeZone: z.string(),
    jitterMs: z.number(),
    concurrencyPolicy: z.enum(['Allow', 'Forbid', 'Replace']),
    jobKind: z.string(),
    job: z.string().describe('a one-line summary of the job, secrets left out (URL credentials and query values, header values)'),
    publishedBy: z.string().describe('the replica whose definition is published'),
    tenant: z.string().nullable().describe('who it belongs to (its tenant field); null: none'),
    labels: z.record(z.string(), z.string()).describe('its labels (empty: none)'),
    nextDueMs: ms.nullable(),
    nextFireMs: ms.nullable(),
    lastExpectedDueMs: ms.nullable().describe('the latest due time a success was owed for'),
    last: lastResultSchema.nullable(),
    lastSuccessMs: ms.nullable(),
    overdueSeconds: z.number().describe('how long it is overdue (runner/records/health.ts), whole seconds rounded up; 0 when it is not'),
    suspended: z.boolean().describe('suspended at run time (cronflock suspend) or in its file'),
    suspension: suspensionSchema.nullable(),
    counts24h: countsSchema,
  })
  .register(apiSchemas, { id: 'ScheduleSummary' });
export type ScheduleSummary = z.infer<typeof scheduleSummarySchema>;

export const scheduleListSchema = z
  .object({ items: z.array(scheduleSummarySchema), next: z.string().nullable().describe('cursor of the next page; null at the end'), total: z.number().int().describe('schedules matching the filters') })
  .register(apiSchemas, { id: 'ScheduleList' });

export const SORTS = ['name', 'attention', 'next', 'last'] as const;
export const listQuerySchema = z.object({
  limit: z.coerce.number().int().min(1).max(500).default(50).describe('page size (1–500)'),
  cursor: z.string().optional().describe("a page's `next`"),
  prefix: z.string().optional().describe('names starting with this'),
  q: z.string().optional().describe('names containing this'),
  // Only final states are ever a latest result (redis/lua/includes/history.lua): an open state (running …) would
  // be accepted and match nothing, so it is refused with the allowed values instead.
  state: z.enum([...FINAL_STATES, 'none']).optional().describe("the latest result's state (none: no result yet)"),
  suspended: boolParam.optional(),
  overdue: boolParam.optional().describe('true: only schedules whose last expected occurrence has no success'),
  sort: z.enum(SORTS).default('name').describe('name; attention (overdue, then failing, first); next (next fire time); last (latest result first)'),
  tenant: z.string().optional().describe('only this tenant\'s schedules'),
  label: z.string().optional().describe('key=value: only schedules with this label; repeat for several (all must match)'),
});
export type ListQuery = z.infer<typeof listQuerySchema> & { /** every `label` parameter, parsed */ labels?: Record<string, string> };

export const upcomingSchema = z.object({ dueMs: ms, fireMs: ms, windowEndMs: ms }).register(apiSchemas, { id: 'Upcoming' });

/** A stored schedule's stored part, as GET /schedules/{name} shows it. */
const storedPartSchema = z.object({
  version: z.number().describe('its version (the ETag of GET and PUT)'),
  definition: z.record(z.string(), z.unknown()).describe('the definition as stored (one entry of a schedule file), secrets left out as in `job`: a url without user info and with query values ***, header values ***, inline credentials (secret, token, password, a Slack webhookUrl …) ***'),
  updatedAtMs: ms,
  by: z.string(),
  refusals: z
    .array(z.object({ replica: z.string(), version: z.number(), reason: z.string(), atMs: ms }))
    .describe('live replicas that refused this version (it does not compile there, e.g. a module file they cannot find), with their reason'),
});

export const scheduleDetailSchema = scheduleSummarySchema
  .extend({
    startingDeadlineMs: z.number().nullable(),
    timeoutMs: z.number().nullable(),
    onResume: z.enum(['skip', 'latest']),
    definitionHash: z.string(),
    loadedAtMs: ms,
    upcoming: z.array(upcomingSchema).describe('the next due times, with their fire times and jitter windows'),
    running: z.array(z.string()).describe('occurrences started and not final (running, or waiting to retry)'),
    historyMs: z.number().describe('how long finished occurrences are kept (--history)'),
    published: z.literal(true).describe('a live replica runs it (published its definition)'),
    stored: storedPartSchema.nullable().describe('for a stored schedule: its stored definition and version (null: a schedule file or Schedule resource defines it)'),
  })
  .register(apiSchemas, { id: 'ScheduleDetail' });

/** GET /schedules/{name} of a stored schedule no replica has picked up yet (see server.ts). */
export const storedOnlySchema = z
  .object({
    name: z.string(),
    source: z.literal('store'),
    published: z.literal(false).describe('no live replica has published it yet'),
    status: z.string().describe('says so in words, and what to do'),
    tenant: z.string().nullable(),
    stored: storedPartSchema,
  })
  .register(apiSchemas, { id: 'StoredNotApplied' });

export const occurrencesQuerySchema = z.object({
  from: z.string().optional().describe('ISO 8601 time or UTC ms (0 to 8640000000000000) (default: 24 h before to)'),
  to: z.string().optional().describe('ISO 8601 time or UTC ms (0 to 8640000000000000) (default: now)'),
  limit: z.coerce.number().int().min(1).max(5000).default(1000).describe('most occurrences (the newest)'),
});

export const occurrenceListSchema = z
  .object({ items: z.array(occurrenceSchema), truncated: z.boolean(), fromMs: ms, toMs: ms, jitterMs: z.number() })
  .register(apiSchemas, { id: 'OccurrenceList' });

export const occurrenceDetailSchema = occurrenceSchema
  .extend({ logs: z.array(logLineSchema).describe('the last 200 lines / 64 KiB per attempt; attempt 0: engine lines outside attempts'), jitterMs: z.number().nullable() })
  .register(apiSchemas, { id: 'OccurrenceDetail' });

export const replicaSchema = z
  .object({
    name: z.string(),
    definitions: z.string().describe('digest of the schedule definitions it runs'),
    version: z.string().nullable(),
    host: z.string().nullable(),
    startedAtMs: ms.nullable(),
    clockSkewMs: z.number().nullable().describe('host clock minus Redis clock'),
    activeRuns: z.number().nullable(),
    membershipExpiresInMs: z.number(),
    plans: z.number().int().describe('schedules whose occurrences it plans (rendezvous hashing)'),
  })
  .register(apiSchemas, { id: 'Replica' });

export const flockSchema = z
  .object({
    nowMs: ms,
    replicas: z.array(replicaSchema),
    planning: z.enum(['divided', 'each-plans-all', 'none']).describe('divided: the replicas agree on the definitions and share the planning'),
    schedules: z.number().int(),
    redis: z.object({ version: z.string(), role: z.string(), usedMemoryBytes: z.number(), maxMemoryBytes: z.number(), maxMemoryPolicy: z.string(), connectedClients: z.number(), timeMs: ms, uptimeSeconds: z.number() }),
  })
  .register(apiSchemas, { id: 'Flock' });

export const auditListSchema = z
  .object({
    items: z.array(auditEntrySchema),
    next: z.string().nullable().describe('pass as `cursor` for the next (older) page; null at the end of the log'),
    scanned: z.number().int().optional().describe(`with \`schedule\`: log entries (every schedule's) looked at for this page, at most ${AUDIT_API_SCAN.toLocaleString('en-US')}`),
    scanLimitReached: z
      .boolean()
      .optional()
      .describe(
        `with \`schedule\`: true when the call stopped after looking at ${AUDIT_API_SCAN.toLocaleString('en-US')} entries before it had \`limit\` of the schedule's; ` +
          'the page holds what was found (maybe none) and `next` goes on from there: older entries of the schedule may follow',
      ),
  })
  .register(apiSchemas, { id: 'AuditList' });
export const auditQuerySchema = z.object({
  limit: z.coerce.number().int().min(1).max(500).default(100),
  cursor: z.string().optional().describe("a page's `next`"),
  schedule: z
    .string()
    .optional()
    .describe(
      `only this schedule's entries: the server reads the log (every schedule's, newest first) until it has \`limit\` of them, reaches the end, ` +
        `or has looked at ${AUDIT_API_SCAN.toLocaleString('en-US')} entries (then \`scanLimitReached\` and \`next\` to go on)`,
    ),
});

const reasonSchema = z.string().trim().max(500).optional().describe(`why, kept in the audit log (optional; "${NO_REASON}" when left out)`);
export const reasonBodySchema = z.strictObject({ reason: reasonSchema }).register(apiSchemas, { id: 'ReasonBody' });
export const backfillBodySchema = z
  .strictObject({
    from: z.string().describe('first due time (ISO, inclusive)'),
    to: z.string().describe('last due time (ISO, inclusive)'),
    dryRun: z.boolean().optional(),
    yes: z.boolean().optional().describe('allow more than 100 occurrences'),
    max: z.number().int().min(1).optional().describe('refuse if more than this many would be created'),
    cancel: z.boolean().optional().describe("instead: drop the schedule's backfill occurrences that have not started"),
    reason: reasonSchema,
  })
  .register(apiSchemas, { id: 'BackfillBody' });

/** Body of `DELETE /schedules/{name}` (optional). */
export const deleteBodySchema = z.strictObject({ reason: reasonSchema }).register(apiSchemas, { id: 'DeleteBody' });

/**
 * Body of `PUT /schedules/{name}`: one schedule definition, as one entry of a schedule file's `schedules:` list
 * (the schedule file's JSON Schema describes its fields; `name` may be left out: the path names it), plus an
 * optional `reason` for the audit log. Checked by the schedule files' own code: refused whole (422) with every
 * problem.
 */
export const scheduleDefinitionBodySchema = z
  .looseObject({ name: z.string().optional().describe('the path\'s name, or left out'), cron: z.string(), job: z.record(z.string(), z.unknown()), reason: reasonSchema })
  .describe("one entry of a schedule file's schedules: list (see the schedule file's JSON Schema), plus an optional reason")
  .register(apiSchemas, { id: 'ScheduleDefinitionBody' });

export const storedWriteSchema = z
  .object({
    name: z.string(),
    version: z.number().int().describe('its version now (also the ETag): pass it as If-Match to change it only if nobody else did'),
    changed: z.boolean().optional().describe('PUT: false when the definition equals the stored one (nothing written, nothing audited)'),
    auditId: z.string().nullable().describe('its audit entry'),
  })
  .register(apiSchemas, { id: 'StoredWrite' });

export const actionResultSchema = z
  .object({ action: z.string(), schedule: z.string(), done: z.boolean().describe('false when it changed nothing (e.g. already suspended, or a dry run)'), message: z.string(), detail: z.record(z.string(), z.unknown()), auditId: z.string().nullable() })
  .register(apiSchemas, { id: 'ActionResult' });

export const whoamiSchema = z
  .object({ role: z.enum(['anonymous', 'viewer', 'operator']), name: z.string().nullable(), actions: z.enum(['off', 'token']).describe('off: no --api-token-file, actions are refused') })
  .register(apiSchemas, { id: 'WhoAmI' });
