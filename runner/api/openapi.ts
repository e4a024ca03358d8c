/**
 * The OpenAPI 3.1 document of `/api/v1`, generated from the zod schemas the handlers use (schemas.ts; zod 4's
 * JSON Schema output is draft 2020-12, which OpenAPI 3.1 takes as it is).
 */
import { z } from 'zod';
import { apiSchemas } from '../history/model.js';
import { auditQuerySchema, listQuerySchema, occurrencesQuerySchema } from './schemas.js';

type Json = Record<string, unknown>;
const ref = (id: string): Json => ({ $ref: `#/components/schemas/${id}` });
const json = (id: string, description: string): Json => ({ description, content: { 'application/json': { schema: ref(id) } } });
const errors = {
  400: json('Error', 'bad request: `error.field` names the refused field (e.g. `query.limit`), `error.message` says what is wrong and what is allowed'),
  401: json('Error', 'no token, or an unknown one, where one is needed'),
  403: json('Error', 'not allowed: a viewer token, actions off (no --api-token-file), or a cross-origin request'),
  404: json('Error', '`NOT_FOUND`: no such schedule or occurrence, or no such route (any path or method not listed here)'),
  503: json('Error', '`REDIS_UNAVAILABLE`: Redis is not answering (down, unreachable, or accepting connections but not answering within the Redis timeout); try again (nothing was changed); `REDIS_OUTCOME_UNKNOWN` (PUT, DELETE, actions): the change was sent but Redis did not answer in time, so it may have been applied (or be applied when Redis answers): read it back, retry with If-Match / If-None-Match: *'),
};
const writeErrors = {
  ...errors,
  409: json('Error', 'NAME_OWNED: a schedule file or Schedule resource of a live replica owns the name (`error.source` names it); TENANT_LIMIT: the tenant is at its limit of stored schedules (`error.tenant`, `error.limit`, `error.count`; raise it with cronflock tenants set-limit)'),
  412: json('Error', 'VERSION_CONFLICT: the stored version is not the If-Match one, If-Match: * found none, or If-None-Match: * found one (`error.version` is the current one; 0: it does not exist); a weak tag (W/"7") never matches If-Match'),
  413: json('Error', 'DEFINITION_TOO_LARGE: the definition is over 65,536 bytes (64 KiB) as JSON (`error.limitBytes`); BODY_TOO_LARGE: the body is over 262,144 bytes; nothing stored'),
  415: json('Error', 'UNSUPPORTED_MEDIA_TYPE: a body must be sent as application/json (`error.expected`)'),
};
const ifMatch: Json = {
  name: 'If-Match',
  in: 'header',
  required: false,
  description: 'compare-and-set (RFC 9110 §13.1.1): only if the stored version is this one (the ETag of the previous write, e.g. "7"); `*`: only if it exists',
  schema: { type: 'string' },
};

/** Query parameters of a zod object (strings in the URL; their JSON Schema as the handler reads them). */
function query(schema: z.ZodObject): Json[] {
  return Object.entries(schema.shape).map(([name, s]) => {
    const js = z.toJSONSchema(s as z.ZodType, { io: 'input', target: 'draft-2020-12' }) as Json;
    delete js.$schema;
    return { name, in: 'query', required: false, description: js.description, schema: js };
  });
}
const pathParam = (name: string, description: string): Json => ({ name, in: 'path', required: true, description, schema: { type: 'string' } });

function action(summary: string, body: string, required: boolean): Json {
  return {
    post: {
      summary,
      security: [{ bearer: [] }],
      parameters: [pathParam('name', 'schedule name')],
      requestBody: { required, content: { 'application/json': { schema: ref(body) } } },
      responses: { 200: json('ActionResult', 'done (or nothing to do: `done` says which); recorded in the audit log when done'), ...errors },
    },
  };
}

/** Builds the document. */
export function openApiDocument(version: string): Json {
  const components = z.toJSONSchema(apiSchemas, { target: 'draft-2020-12', uri: (id) => `#/components/schemas/${id}`, unrepresentable: 'any' }).schemas as Record<string, Json>;
  for (const s of Object.values(components)) {
    delete s.$schema;
    delete s.$id;
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'cronflock API',
      version,
      description:
        'Schedules, occurrences (jitter window, fire time, every claim with its replica and fencing token), logs, the flock and the audit log. ' +
        'Reading is open unless the token file says `reads: token`; actions need a bearer token with the role operator.',
    },
    servers: [{ url: '/api/v1' }],
    components: { schemas: components, securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
    paths: {
      '/schedules': { get: { summary: 'list schedules (paged)', parameters: query(listQuerySchema), responses: { 200: json('ScheduleList', 'a page'), ...errors } } },
      '/schedules/{name}': {
        get: {
          summary: 'one schedule: what runs (published), or a stored schedule no replica has picked up yet (published: false); a stored one has its version as ETag',
          parameters: [pathParam('name', 'schedule name')],
          responses: {
            200: { description: 'the schedule', content: { 'application/json': { schema: { oneOf: [ref('ScheduleDetail'), ref('StoredNotApplied')] } } } },
            ...errors,
          },
        },
        put: {
          summary: 'create or change a stored schedule (operator; audited): every replica applies it from its next due time',
          security: [{ bearer: [] }],
          parameters: [
            pathParam('name', 'schedule name'),
            ifMatch,
            { name: 'If-None-Match', in: 'header', required: false, description: '`*`: create only, refused (412) if it exists', schema: { type: 'string' } },
          ],
          requestBody: { required: true, content: { 'application/json': { schema: ref('ScheduleDefinitionBody') } } },
          responses: {
            200: json('StoredWrite', 'stored (ETag: its version)'),
            ...writeErrors,
            422: json('Error', 'SCHEDULE_INVALID: the definition is refused whole, nothing stored; `error.problems` lists every problem (field, reason, hint)'),
          },
        },
        delete: {
          summary: 'remove a stored schedule (operator; audited): it stops after its run in flight',
          security: [{ bearer: [] }],
          parameters: [pathParam('name', 'schedule name'), ifMatch],
          requestBody: { required: false, content: { 'application/json': { schema: ref('DeleteBody') } } },
          responses: { 200: json('StoredWrite', 'removed'), ...writeErrors },
        },
      },
      '/schedules/{name}/occurrences': {
        get: { summary: "a schedule's occurrences due in a range, newest first", parameters: [pathParam('name', 'schedule name'), ...query(occurrencesQuerySchema)], responses: { 200: json('OccurrenceList', 'occurrences'), ...errors } },
      },
      '/occurrences/{key}': {
        get: { summary: 'one occurrence, with its attempts, result and log lines', parameters: [pathParam('key', 'occurrence key, URL-encoded')], responses: { 200: json('OccurrenceDetail', 'the occurrence'), ...errors } },
      },
      '/flock': { get: { summary: 'live replicas, their planning shares, Redis', responses: { 200: json('Flock', 'the flock'), ...errors } } },
      '/audit': {
        get: {
          summary: 'the audit log, newest first',
          description:
            'Pages follow `next` (pass it as `cursor`). With `schedule`, the server scans the log (every schedule\'s entries, newest first) ' +
            'until it has `limit` entries of that schedule, reaches the end, or has looked at a bounded number of entries; in the last case ' +
            'the answer says `scanLimitReached: true` and `next` goes on from where it stopped, so a client never walks empty pages.',
          parameters: query(auditQuerySchema),
          responses: { 200: json('AuditList', 'entries'), ...errors },
        },
      },
      '/whoami': { get: { summary: "the caller's role, and whether actions are on", responses: { 200: json('WhoAmI', 'the caller') } } },
      '/schedules/{name}/trigger': action('run now (a manual occurrence)', 'ReasonBody', false),
      '/schedules/{name}/suspend': action('suspend on every replica (reason optional)', 'ReasonBody', false),
      '/schedules/{name}/resume': action('resume (reason optional)', 'ReasonBody', false),
      '/schedules/{name}/backfill': action('backfill a past range (dry run, 100-occurrence confirmation and max as the command line), or cancel', 'BackfillBody', true),
    },
  };
}
