/**
 * The HTTP API (`/api/v1`) and the dashboard (`/`) on one listener: hono on node:http (@hono/node-server).
 * Stateless apart from the in-memory schedule index (schedule-index.ts): any number of copies may serve one flock,
 * from `cronflock ui` or inside replicas (`start --ui`).
 *
 * Every answer carries security headers (CSP `default-src 'self'`: every asset is served from here, none from a
 * CDN; `frame-ancestors 'none'`; nosniff; no referrer). A POST is refused (403) when the browser says it comes
 * from another site (`Origin` not this host, or `Sec-Fetch-Site` cross-site), before its token is looked at.
 * Nothing in an answer is a secret: job summaries are redacted when published (jobs/summary.ts) and the API
 * never reads job blocks.
 */
import { serve, type ServerType } from '@hono/node-server';
import { Hono, type Context } from 'hono';
import type { AddressInfo } from 'node:net';
import { z } from 'zod';
import { redactDefinition } from '../../jobs/summary.js';
import { ControlError, type ControlContext } from '../engine/control.js';
import type { RedisClient } from '../redis/connect.js';
import { INSTANT_FORMS, MAX_INSTANT_MS, parseInstant } from '../time/instant.js';
import type { RedisProblem } from '../redis/explain.js';
import type { Keyspace } from '../redis/keys.js';
import { parseOccurrenceKey } from '../schedule/occurrence.js';
import { AUDIT_API_SCAN, isAuditCursor, readAudit, scanAudit } from '../history/audit.js';
import { isOutcomeUnknown, outcomeUnknownMessage, REDIS_OUTCOME_UNKNOWN } from './outcome-unknown.js';
import { readHistoryMs } from '../history/config.js';
import { readLogs } from '../history/logs.js';
import { readOccurrence, readOccurrences } from '../history/read.js';
import { performAction, type ActionRequest } from './actions.js';
import { identify, type AccessRules, type Caller } from './auth.js';
import { readFlock } from './flock.js';
import { openApiDocument } from './openapi.js';
import { upcomingOf, type ScheduleIndex } from './schedule-index.js';
import { counts24h, CursorError, listSchedules, summarize } from './schedule-list.js';
import {
  auditQuerySchema,
  backfillBodySchema,
  deleteBodySchema,
  listQuerySchema,
  occurrencesQuerySchema,
  reasonBodySchema,
  type ScheduleSummary,
} from './schemas.js';
import { requestProblems, type RequestPart } from './request-messages.js';
import { duplicateKeyField, duplicateKeyMessage, duplicateKeyProblem, jsonBodyProblems, jsonTooDeep, MAX_BODY_DEPTH, tooDeepBodyMessage, unsafeIntegerMessage, unsafeIntegerProblem } from './json-body.js';
import { mountUi } from '../ui/routes.js';
import { errorPage } from '../ui/pages.js';
import { IF_EXISTS, NameOwnedError, ScheduleStore, TenantLimitError, VersionConflictError, type NotStored } from '../store/store.js';
import { MAX_DEFINITION_BYTES, type DefinitionProblem } from '../store/definition.js';

/** What the server needs. */
export interface ApiDeps {
  redis: RedisClient;
  keys: Keyspace;
  index: ScheduleIndex;
  rules: AccessRules;
  /** The control context actions run with (its `by` is replaced by the caller's name). */
  control: ControlContext;
  version: string;
  /**
   * When `err` (what a handler threw) means that Redis is not answering, why, in words (no client internals);
   * null otherwise. Such a request is answered 503 REDIS_UNAVAILABLE (see dashboard.ts).
   */
  redisProblem?: (err: unknown) => RedisProblem | null;
}

type Env = { Variables: { caller: Caller } };

/** An error answer: `{error: {code, message, field?}}` (errorSchema in schemas.ts). */
export class ApiError extends Error {
  constructor(
    readonly status: 400 | 401 | 403 | 404 | 409 | 412 | 413 | 415 | 422 | 503,
    readonly code: string,
    message: string,
    /** The refused field (`query.limit`, `body.reason`) when the error is about one. */
    readonly field?: string,
    /** More of the answer's `error` object: `problems` of a refused definition, the current `version` … */
    readonly extra: Record<string, unknown> = {},
  ) {
    super(message);
  }
}

/**
 * The condition of a write from its `If-Match` / `If-None-Match` headers (RFC 9110 §13.1), as the store's
 * `ifVersion`: undefined without one; `If-Match: "7"` (the ETag this API sends; a bare 7 is taken too): only at
 * version 7; `If-Match: *`: only if it exists ({@link IF_EXISTS}); `If-None-Match: *`: only if it does not exist (0,
 * "create only"). `If-None-Match` is taken only where it can mean something (`noneMatch`: PUT).
 * @throws ApiError 400 for a header this API cannot evaluate (a list of tags, an If-None-Match with a tag, both
 *   headers); 412 for a weak tag (`W/"7"`), which never matches If-Match (strong comparison, §13.1.1).
 */
function ifVersionOf(ifMatch: string | undefined, ifNoneMatch: string | undefined, noneMatch: boolean): number | undefined {
  if (ifNoneMatch !== undefined) {
    if (!noneMatch) throw new ApiError(400, 'BAD_PARAMETER', 'header.If-None-Match: a DELETE takes only If-Match (the version to remove, or * for "if it exists"); leave If-None-Match out', 'header.If-None-Match');
    if (ifNoneMatch.trim() !== '*') {
      throw new ApiError(400, 'BAD_PARAMETER', 'header.If-None-Match: only * is taken here ("create only": the schedule must not exist yet); to change it only at a version, send If-Match: "<version>"', 'header.If-None-Match');
    }
    if (ifMatch !== undefined) throw new ApiError(400, 'BAD_PARAMETER', 'header.If-Match: send If-Match (change only at this version, or * for "only if it exists") or If-None-Match: * (create only), not both', 'header.If-Match');
    return 0;
  }
  if (ifMatch === undefined) return undefined;
  if (ifMatch.trim() === '*') return IF_EXISTS;
  if (/^\s*W\//.test(ifMatch)) {
    throw new ApiError(412, 'VERSION_CONFLICT', 'header.If-Match: a weak entity tag (W/"…") never matches If-Match (RFC 9110 §13.1.1 compares strongly); send the ETag as this API gave it, e.g. "7"', 'header.If-Match');
  }
  const m = /^\s*"?(\d{1,15})"?\s*$/.exec(ifMatch);
  if (!m) {
    throw new ApiError(
      400,
      'BAD_PARAMETER',
      `header.If-Match: ${ifMatch.includes(',') ? 'a list of entity tags is not taken: send one' : 'is not a version'}; allowed: the schedule's ETag as this API sent it (e.g. "7"), or * for "only if it exists"`,
      'header.If-Match',
    );
  }
  // This API's ETags are a version's digits without leading zeros: "02" is no tag it sent, and strong comparison
  // (RFC 9110 §8.8.3.2) compares the opaque tags character by character, so it matches no version.
  if (/^0\d/.test(m[1]!)) {
    throw new ApiError(412, 'VERSION_CONFLICT', `header.If-Match: "${m[1]}" is not an ETag of this API (a version's digits, e.g. "${Number(m[1])}"), so it matches no version (RFC 9110 compares entity tags strongly); send the ETag as this API gave it`, 'header.If-Match');
  }
  const version = Number(m[1]);
  // Versions start at 1: no ETag of this API is "0", and the store reads version 0 as "create only", which is
  // If-None-Match: *'s condition, not this header's: a 412 would then name the other header.
  if (version === 0) {
    throw new ApiError(
      400,
      'BAD_PARAMETER',
      `header.If-Match: "0" is not a version (versions start at 1); allowed: the schedule's ETag as this API sent it (e.g. "7"), or * for "only if it exists"${noneMatch ? '; to create only, send If-None-Match: * instead' : ''}`,
      'header.If-Match',
    );
  }
  return version;
}

/**
 * The most a request body may have, bytes: four times a stored definition's limit ({@link MAX_DEFINITION_BYTES}),
 * room for a definition written with indentation and a reason; a definition is then held to its own limit.
 */
export const MAX_BODY_BYTES = 4 * MAX_DEFINITION_BYTES;

/** `application/json` and the `+json` types, with parameters (`; charset=utf-8`). */
const JSON_TYPE = /^\s*application\/(?:[\w.-]+\+)?json\s*(?:;|$)/i;

/** The 413 answer of a body past {@link MAX_BODY_BYTES}. */
function bodyTooLarge(bytes: number): ApiError {
  return new ApiError(
    413,
    'BODY_TOO_LARGE',
    `body: ${bytes.toLocaleString('en-US')} bytes, more than the ${MAX_BODY_BYTES.toLocaleString('en-US')} bytes this API reads; a stored definition may have at most ${MAX_DEFINITION_BYTES.toLocaleString('en-US')} bytes (64 KiB) as JSON: keep large data where the job reads it and put its id in job.params`,
    'body',
    { limitBytes: MAX_BODY_BYTES, definitionLimitBytes: MAX_DEFINITION_BYTES },
  );
}

const CSP = "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'; object-src 'none'";

/** The host of an `Origin` header; null for `null` or anything unparsable (counted as another site). */
function hostOf(origin: string): string | null {
  try {
    return new URL(origin).host;
  } catch {
    return null;
  }
}

/**
 * Parses an ISO 8601 time or UTC ms (runner/time/instant.ts); undefined when absent.
 * @throws ApiError 400 BAD_PARAMETER naming `field` and the accepted forms: for text that is neither, and for UTC ms
 *   past the latest time a Date holds (99999999999999999999 is no time).
 */
export function timeParam(field: string, v: string | undefined): number | undefined {
  if (v === undefined || v === '') return undefined;
  const n = parseInstant(v);
  if (n === undefined) {
    const what = /^\s*\d+\s*$/.test(v) ? `is out of range: UTC milliseconds go up to ${MAX_INSTANT_MS} (the year 275760)` : 'is not a time';
    throw new ApiError(400, 'BAD_PARAMETER', `${field}: ${what}; allowed: ${INSTANT_FORMS}`, field);
  }
  return n;
}

/**
 * Checks a query or body with its schema. @throws ApiError 400 BAD_PARAMETER whose message names every refused
 * field (`body.reason: …; allowed: …`, request-messages.ts) and whose `field` is the first of them.
 */
function parse<T extends z.ZodType>(schema: T, value: unknown, part: RequestPart): z.infer<T> {
  const r = schema.safeParse(value);
  if (r.success) return r.data;
  const problems = requestProblems(schema, r.error, value, part);
  throw new ApiError(400, 'BAD_PARAMETER', problems.map((p) => p.message).join(' · '), problems[0]!.field);
}

/** The app (routes and middleware), without a listener: tests and `listen` use it. */
export function createApp(d: ApiDeps): Hono<Env> {
  const app = new Hono<Env>();

  app.use('*', async (c, next) => {
    await next();
    c.header('Content-Security-Policy', CSP);
    c.header('X-Content-Type-Options', 'nosniff');
    c.header('X-Frame-Options', 'DENY');
    c.header('Referrer-Policy', 'no-referrer');
    c.header('Cross-Origin-Opener-Policy', 'same-origin');
    if (c.req.path.startsWith('/api/')) c.header('Cache-Control', 'no-store');
  });

  // An unknown API route (or method) is answered in the error envelope like every other error; the pages keep
  // their own (ui/routes.ts).
  app.notFound((c) => {
    if (!c.req.path.startsWith('/api/')) return c.text('not found', 404);
    return c.json({ error: { code: 'NOT_FOUND', message: `no API route ${c.req.method} ${c.req.path}: the routes are listed in /api/v1/openapi.json` } }, 404);
  });

  app.onError((err, c) => {
    if (err instanceof ApiError) return c.json({ error: { code: err.code, message: err.message, ...(err.field ? { field: err.field } : {}), ...err.extra } }, err.status);
    if (err instanceof ControlError) return c.json({ error: { code: err.code, message: err.message, ...(err.field ? { field: err.field } : {}) } }, 400);
    if (err instanceof CursorError) return c.json({ error: { code: err.code, message: err.message } }, 400);
    const redis = d.redisProblem?.(err);
    if (redis) {
      // A change whose command went out and got no answer (timed out) cannot be taken back: a paused or slow Redis
      // runs what it received when it wakes. Saying "unavailable" would read as "not done": say it may be done.
      // The same words as the CLI's apply/delete and the library's upsert/remove (outcome-unknown.ts).
      if (c.req.path.startsWith('/api/') && c.req.method !== 'GET' && c.req.method !== 'HEAD' && isOutcomeUnknown(err)) {
        const message = outcomeUnknownMessage(
          redis.message,
          'GET the schedule: its ETag, or the audit log',
          'with a precondition (If-Match: "<version>", or If-None-Match: * to create) so a retry cannot apply it twice',
        );
        return c.json({ error: { code: REDIS_OUTCOME_UNKNOWN, message } }, 503);
      }
      const message = `Redis is not answering: ${redis.message}${redis.hint ? ` (${redis.hint})` : ''}; try again`;
      // A page says it as a page (htmx leaves a live table as it is on an error answer).
      if (!c.req.path.startsWith('/api/')) return c.html(errorPage('Redis is not answering', message), 503);
      return c.json({ error: { code: 'REDIS_UNAVAILABLE', message } }, 503);
    }
    return c.json({ error: { code: 'INTERNAL', message: `could not answer: ${(err as Error).message}` } }, 503);
  });

  // Who is calling; reading may need a token (reads: token).
  app.use('/api/*', async (c, next) => {
    const who = identify(d.rules, c.req.header('authorization'));
    if (who === 'bad') throw new ApiError(401, 'UNAUTHORIZED', 'unknown or malformed bearer token');
    if (c.req.method === 'GET' && d.rules.readsNeedToken && who.role === 'anonymous' && c.req.path !== '/api/v1/whoami') {
      throw new ApiError(401, 'UNAUTHORIZED', 'reading needs a token here: send Authorization: Bearer <token>');
    }
    c.set('caller', who);
    await next();
  });

  const api = new Hono<Env>();
  api.get('/openapi.json', (c) => c.json(openApiDocument(d.version)));
  api.get('/whoami', (c) => {
    const who = c.get('caller');
    return c.json({ role: who.role, name: who.name, actions: d.rules.actions ? 'token' : 'off' });
  });

  api.get('/schedules', async (c) => {
    await d.index.ready();
    const q = parse(listQuerySchema, c.req.query(), 'query');
    const labels: Record<string, string> = {};
    for (const l of c.req.queries('label') ?? []) {
      const eq = l.indexOf('=');
      if (eq <= 0) throw new ApiError(400, 'BAD_PARAMETER', `query.label: "${l}" is not key=value; allowed: label=<key>=<value>, repeated for several labels (all must match)`, 'query.label');
      labels[l.slice(0, eq)] = l.slice(eq + 1);
    }
    return c.json(await listSchedules(d.redis, d.keys, d.index, { ...q, labels }));
  });

  const stored = new ScheduleStore(d.redis, d.keys);
  const rowOf = async (name: string) => {
    await d.index.ready();
    const row = d.index.get(name);
    if (!row) throw new ApiError(404, 'NOT_FOUND', `no published schedule named "${name}"`);
    return row;
  };

  api.get('/schedules/:name', async (c) => {
    const name = c.req.param('name');
    // It takes no query parameters: one given (?range=99y) is refused, not silently ignored.
    const extra = Object.keys(c.req.query())[0];
    if (extra !== undefined) {
      throw new ApiError(
        400,
        'BAD_PARAMETER',
        `query.${extra}: this route takes no query parameters; for occurrences over a time range use GET /api/v1/schedules/${name}/occurrences?from=…&to=…`,
        `query.${extra}`,
      );
    }
    await d.index.ready();
    const published = d.index.get(name);
    const kept = published === undefined || published.def.source?.startsWith('store') ? await stored.get(name) : undefined;
    // Its definition as answers show everything: without secrets (jobs/summary.ts, the rules of the `job` field).
    // Live replicas that refused this version (it does not compile there), with their reason (runner/sources/stored.ts).
    const refusals = kept ? await stored.refusals(name, kept.version, d.index.nowMs()) : [];
    const storedPart = kept ? { version: kept.version, definition: redactDefinition(kept.definition), updatedAtMs: kept.updatedAtMs, by: kept.by, refusals } : null;
    if (kept) c.header('ETag', `"${kept.version}"`);
    if (!published) {
      if (!kept) throw new ApiError(404, 'NOT_FOUND', `no published or stored schedule named "${name}"`);
      // Stored, but no live replica has picked it up yet: its definition, and a status that says so.
      return c.json({
        name,
        source: 'store',
        published: false,
        status:
          refusals.length > 0
            ? `stored, refused by ${refusals.length} live replica(s): ${refusals.map((x) => `${x.replica}: ${x.reason}`).join(' · ')}`
            : 'stored, not yet applied: no live replica has published it yet (replicas pick a stored schedule up within seconds; with none running, start one: cronflock start)',
        tenant: kept.tenant ?? null,
        stored: storedPart,
      });
    }
    const row = published;
    const now = d.index.nowMs();
    const [counts] = await counts24h(d.redis, d.keys, [row.name], now);
    const upcoming = upcomingOf(row, now, 5);
    const running = await d.redis.zrange(d.keys.active(row.name), 0, -1);
    const s: ScheduleSummary = summarize(d.index.current(row), counts!);
    return c.json({
      ...s,
      startingDeadlineMs: row.def.startingDeadlineMs,
      timeoutMs: row.def.timeoutMs ?? null,
      onResume: row.def.onResume,
      definitionHash: row.def.definitionHash,
      loadedAtMs: row.def.loadedAtMs,
      upcoming,
      running,
      historyMs: await readHistoryMs(d.redis, d.keys),
      published: true,
      stored: storedPart,
    });
  });

  api.get('/schedules/:name/occurrences', async (c) => {
    const row = await rowOf(c.req.param('name'));
    const q = parse(occurrencesQuerySchema, c.req.query(), 'query');
    const toMs = timeParam('query.to', q.to) ?? Math.ceil(d.index.nowMs()) + row.def.jitterMs;
    const fromMs = timeParam('query.from', q.from) ?? toMs - 86_400_000;
    if (fromMs > toMs) throw new ApiError(400, 'BAD_PARAMETER', 'query.from: is after query.to; allowed: a time not after query.to', 'query.from');
    const page = await readOccurrences(d.redis, d.keys, row.name, fromMs, toMs, q.limit);
    return c.json({ ...page, fromMs, toMs, jitterMs: row.def.jitterMs });
  });

  api.get('/occurrences/:key', async (c) => {
    const key = c.req.param('key');
    if (!parseOccurrenceKey(key)) throw new ApiError(400, 'BAD_PARAMETER', `key: "${key}" is not an occurrence key; allowed: <schedule>@<due time, ISO 8601>`, 'key');
    const v = await readOccurrence(d.redis, d.keys, key);
    if (!v) throw new ApiError(404, 'NOT_FOUND', `no record or history of ${key} (kept for --retention and --history)`);
    await d.index.ready();
    const logs = await readLogs(d.redis, d.keys, key, Math.max(v.attempts.length, 1));
    return c.json({ ...v, logs, jitterMs: d.index.get(v.schedule)?.def.jitterMs ?? null });
  });

  api.get('/flock', async (c) => {
    await d.index.ready();
    return c.json(await readFlock(d.redis, d.keys, d.index));
  });

  api.get('/audit', async (c) => {
    const q = parse(auditQuerySchema, c.req.query(), 'query');
    if (q.cursor !== undefined && !isAuditCursor(q.cursor)) {
      throw new ApiError(400, 'BAD_CURSOR', `query.cursor: ${JSON.stringify(q.cursor.slice(0, 40))} is not a cursor of the audit log; allowed: a page's \`next\` as it was given (e.g. 1764662400000-0), or no cursor for the newest page`, 'query.cursor');
    }
    // One schedule's entries: scanned server-side (bounded) until a page of them, not a page of the log filtered.
    if (q.schedule !== undefined) return c.json(await scanAudit(d.redis, d.keys, { schedule: q.schedule, limit: q.limit, scanMax: AUDIT_API_SCAN, before: q.cursor }));
    return c.json(await readAudit(d.redis, d.keys, { limit: q.limit, before: q.cursor }));
  });

  // ---- actions: operator token, same-origin; a reason is optional ----
  /** The operator calling (same origin, actions on, an operator token). @throws ApiError 401/403 */
  const operator = (c: Context<Env>): string => {
    const site = c.req.header('sec-fetch-site');
    const origin = c.req.header('origin');
    const host = c.req.header('host');
    if ((site && site !== 'same-origin' && site !== 'none') || (origin && host && hostOf(origin) !== host)) {
      throw new ApiError(403, 'CROSS_ORIGIN', 'actions are accepted only from this dashboard (same origin) or from clients that send no Origin');
    }
    if (!d.rules.actions) throw new ApiError(403, 'ACTIONS_OFF', 'actions are off: start the API with --api-token-file to enable them');
    const who = c.get('caller');
    if (who.role === 'anonymous') throw new ApiError(401, 'UNAUTHORIZED', 'actions need a bearer token with the role operator: send Authorization: Bearer <token>');
    if (who.role !== 'operator') throw new ApiError(403, 'FORBIDDEN', `token "${who.name}" has the role ${who.role}; actions need operator`);
    return who.name!;
  };
  /**
   * The request's JSON body (`{}` when empty).
   * @throws ApiError 413 BODY_TOO_LARGE past {@link MAX_BODY_BYTES}; 415 UNSUPPORTED_MEDIA_TYPE for a body not sent
   *   as `application/json` (or `…+json`), e.g. text/plain — the type a cross-site form may send; 400 BAD_BODY
   *   for a body that is not JSON; 400 BODY_TOO_DEEP for a body nesting past MAX_BODY_DEPTH levels; 400
   *   DUPLICATE_KEY for a key given twice in one object, 400 UNSAFE_INTEGER for an integer outside ±(2^53−1)
   *   (runner/api/json-body.ts), before anything else looks at the body.
   */
  const bodyOf = async (c: Context<Env>, example: string): Promise<unknown> => {
    const declared = Number(c.req.header('content-length'));
    if (declared > MAX_BODY_BYTES) throw bodyTooLarge(declared);
    const text = await c.req.text();
    if (!text.trim()) return {};
    const bytes = Buffer.byteLength(text, 'utf8');
    if (bytes > MAX_BODY_BYTES) throw bodyTooLarge(bytes);
    const type = c.req.header('content-type');
    if (!type || !JSON_TYPE.test(type)) {
      throw new ApiError(415, 'UNSUPPORTED_MEDIA_TYPE', `body: sent as ${type ? `"${type.split(';')[0]!.trim()}"` : 'no Content-Type'}; allowed: application/json (send the header Content-Type: application/json), e.g. ${example}`, 'header.Content-Type', {
        expected: 'application/json',
      });
    }
    let body: unknown;
    try {
      body = JSON.parse(text) as unknown;
    } catch {
      throw new ApiError(400, 'BAD_BODY', `body: is not JSON; allowed: a JSON object, e.g. ${example}`, 'body');
    }
    // Nesting past the body's bound, found by one pass over the text before the recursive re-read below (and the
    // definition's checks after) could run out of stack: a 400, not a 503 a client would retry.
    const deep = jsonTooDeep(text, MAX_BODY_DEPTH);
    if (deep !== undefined) throw new ApiError(400, 'BODY_TOO_DEEP', tooDeepBodyMessage(deep), 'body', { line: deep.line, col: deep.col, maxDepth: MAX_BODY_DEPTH });
    // JSON.parse keeps the later of two equal keys and rounds integers past 2^53 silently; a schedule file
    // refuses both, and so does the API.
    const { duplicates: dups, unsafeIntegers } = jsonBodyProblems(text);
    if (dups.length > 0) {
      throw new ApiError(400, 'DUPLICATE_KEY', dups.map(duplicateKeyMessage).join('; '), duplicateKeyField(dups[0]!), { problems: dups.map(duplicateKeyProblem) });
    }
    if (unsafeIntegers.length > 0) {
      const problems = unsafeIntegers.map(unsafeIntegerProblem);
      throw new ApiError(400, 'UNSAFE_INTEGER', unsafeIntegers.map(unsafeIntegerMessage).join('; '), problems[0]!.field, { problems });
    }
    return body;
  };
  const act = async (c: Context<Env>, build: (name: string, body: unknown) => ActionRequest) => {
    const whoName = operator(c);
    const name = c.req.param('name')!;
    await rowOf(name);
    const body = await bodyOf(c, '{"reason": "db migration"}, or no body');
    const req = build(name, body);
    const out = await performAction({ ...d.control, by: `api:${whoName}` }, { who: whoName, via: 'api' }, req);
    return c.json({ action: req.action, schedule: name, ...out });
  };
  api.post('/schedules/:name/trigger', (c) => act(c, (schedule, b) => ({ action: 'trigger', schedule, reason: parse(reasonBodySchema, b, 'body').reason })));
  api.post('/schedules/:name/suspend', (c) => act(c, (schedule, b) => ({ action: 'suspend', schedule, reason: parse(reasonBodySchema, b, 'body').reason })));
  api.post('/schedules/:name/resume', (c) => act(c, (schedule, b) => ({ action: 'resume', schedule, reason: parse(reasonBodySchema, b, 'body').reason })));
  api.post('/schedules/:name/backfill', (c) =>
    act(c, (schedule, b) => {
      const p = parse(backfillBodySchema, b, 'body');
      if (p.cancel) return { action: 'backfill-cancel', schedule, reason: p.reason };
      const fromMs = timeParam('body.from', p.from)!;
      const toMs = timeParam('body.to', p.to)!;
      return { action: 'backfill', schedule, fromMs, toMs, dryRun: p.dryRun, yes: p.yes, max: p.max, reason: p.reason };
    }),
  );

  // ---- stored schedules (runner/store/): create or change, delete; operator token, audited ----
  /** The refusal of a store write as an API error. */
  const refusal = (e: VersionConflictError | NameOwnedError | TenantLimitError | NotStored): ApiError => {
    if (e instanceof VersionConflictError) {
      // Said in the headers' words, not the library's ifVersion.
      const s = `schedule "${e.schedule}"`;
      const message =
        e.expected === 0
          ? `${s} already exists (ETag "${e.actual}"); If-None-Match: * only creates: to change it, send If-Match: "${e.actual}"`
          : e.actual === 0
            ? `${s} does not exist; If-Match (${e.expected === IF_EXISTS ? '*' : `"${e.expected}"`}) changes only an existing schedule: to create it, leave If-Match out or send If-None-Match: *`
            : `${s} is at version "${e.actual}", not "${e.expected}" as If-Match asks: someone changed it since you read it; GET it again and retry with its ETag`;
      // Version 0 ("create only") comes only from If-None-Match: * (ifVersionOf refuses If-Match: "0").
      return new ApiError(412, e.code, message, e.expected === 0 ? 'header.If-None-Match' : 'header.If-Match', { version: e.actual });
    }
    if (e instanceof NameOwnedError) return new ApiError(409, e.code, e.message, 'name', { source: e.source });
    if (e instanceof TenantLimitError) return new ApiError(409, e.code, e.message, 'tenant', { tenant: e.tenant, limit: e.limit, count: e.count });
    // Not stored; a name a schedule file or Schedule resource owns is said so, with how to remove it there.
    return new ApiError(404, 'NOT_FOUND', e.message, undefined, e.source !== undefined ? { source: e.source } : {});
  };
  api.put('/schedules/:name', async (c) => {
    const who = operator(c);
    const name = c.req.param('name');
    const ifVersion = ifVersionOf(c.req.header('if-match'), c.req.header('if-none-match'), true);
    const body = await bodyOf(c, '{"cron": "0 8 * * *", "job": {"kind": "http", "url": "https://…"}}');
    if (body === null || typeof body !== 'object' || Array.isArray(body)) {
      throw new ApiError(422, 'SCHEDULE_INVALID', 'body: must be a JSON object: one schedule definition (the fields of a schedule file\'s entry)', 'body', {
        problems: [{ field: '', reason: 'must be a JSON object', hint: 'send one schedule definition: {"cron": …, "job": {…}}' }],
      });
    }
    const { reason, ...def } = body as Record<string, unknown> & { reason?: unknown };
    if (def.name !== undefined && def.name !== name) {
      throw new ApiError(422, 'SCHEDULE_INVALID', `name: "${String(def.name)}" differs from the path's "${name}"; leave it out or make them equal`, 'body.name', {
        problems: [{ field: 'name', reason: `differs from the path's "${name}"`, hint: 'leave name out of the body (the path names the schedule) or make them equal' }],
      });
    }
    if (reason !== undefined && typeof reason !== 'string') throw new ApiError(400, 'BAD_PARAMETER', 'body.reason: must be text; allowed: why, kept in the audit log', 'body.reason');
    const r = await stored.upsert({ ...def, name } as never, { by: who, via: 'api', ...(ifVersion !== undefined ? { ifVersion } : {}), ...(reason !== undefined ? { reason } : {}) });
    if (!r.ok) {
      const e = r.error;
      if ('problems' in e) {
        // The name comes from the path unless the body repeats it: a bad one is the path parameter's problem.
        const fieldOf = (f: string): string => (f === 'name' && def.name === undefined ? 'path.name' : f);
        const problems = e.problems.map((p: DefinitionProblem) => ({ field: fieldOf(p.field), reason: p.reason, ...(p.hint !== undefined ? { hint: p.hint } : {}) }));
        // Too large is its own answer (413), naming the limit; nothing was written either way.
        if (e.problems.some((p) => p.code === 'TOO_LARGE')) {
          throw new ApiError(413, 'DEFINITION_TOO_LARGE', e.message, 'body', { limitBytes: MAX_DEFINITION_BYTES, problems });
        }
        const first = problems[0]?.field;
        throw new ApiError(422, 'SCHEDULE_INVALID', e.message, first ? (first.startsWith('path.') ? first : `body.${first}`) : 'body', { problems });
      }
      throw refusal(e);
    }
    c.header('ETag', `"${r.version}"`);
    return c.json({ name, version: r.version, changed: r.changed, auditId: r.auditId });
  });
  api.delete('/schedules/:name', async (c) => {
    const who = operator(c);
    const name = c.req.param('name');
    const ifVersion = ifVersionOf(c.req.header('if-match'), c.req.header('if-none-match'), false);
    const b = parse(deleteBodySchema, await bodyOf(c, '{"reason": "customer left"}, or no body'), 'body');
    const r = await stored.remove(name, { by: who, via: 'api', ...(ifVersion !== undefined ? { ifVersion } : {}), ...(b.reason !== undefined ? { reason: b.reason } : {}) });
    if (!r.ok) {
      throw refusal(r.error);
    }
    return c.json({ name, version: r.version, auditId: r.auditId });
  });

  app.route('/api/v1', api);
  mountUi(app, d);
  return app;
}

/** A listening server. */
export interface ApiServer {
  /** The address it listens on (the port the OS picked for port 0). */
  address: { host: string; port: number };
  close(): Promise<void>;
}

/** Listens on `host:port` (port 0: any free port). @throws the listen error (EADDRINUSE, EACCES). */
export async function listen(d: ApiDeps, at: { host: string; port: number }): Promise<ApiServer> {
  const app = createApp(d);
  const server: ServerType = await new Promise((resolve, reject) => {
    const s = serve({ fetch: app.fetch, hostname: at.host, port: at.port }, () => resolve(s));
    s.once('error', reject);
  });
  const a = server.address() as AddressInfo;
  return {
    address: { host: at.host, port: a.port },
    close: () =>
      new Promise<void>((resolve) => {
        d.index.stop();
        (server as { closeAllConnections?: () => void }).closeAllConnections?.();
        server.close(() => resolve());
      }),
  };
}
