/**
 * The schedule-level `notify:`, `heartbeat:` and `signing:` blocks of a schedule file: zod schemas (validated at
 * load, with the rest of the file) and what they compile to.
 *
 * Secrets (webhook keys, routing keys, SMTP passwords, webhook URLs that carry a token) are never written in a
 * record, a log line or Redis: a block names where a secret is (`…Env`: an environment variable; `…File`: an
 * absolute path, e.g. a mounted Kubernetes Secret), the value is read when a message is sent (so a rotated file
 * is picked up), and a missing variable or unreadable file refuses the schedule file at load with its
 * `file:line:col`, before anything is scheduled (promise 7).
 */
import { accessSync, constants, readFileSync, statSync } from 'node:fs';
import { hostname } from 'node:os';
import { isAbsolute } from 'node:path';
import { z } from 'zod';
import { timerDurationMs } from '../validate/zod-duration.js';
import { headerMapSchema } from '../../jobs/http.js';

/** Outcomes a schedule can be notified of (`notify.on`). `succeeded` is an extension (every success). */
export const NOTIFY_EVENTS = ['failed', 'missed', 'skipped', 'recovered', 'succeeded'] as const;
/** See {@link NOTIFY_EVENTS}. */
export type NotifyEvent = (typeof NOTIFY_EVENTS)[number];
/** Heartbeat pings (`heartbeat.on`), healthchecks.io's vocabulary. */
export const HEARTBEAT_EVENTS = ['start', 'success', 'fail'] as const;
/** See {@link HEARTBEAT_EVENTS}. */
export type HeartbeatEvent = (typeof HEARTBEAT_EVENTS)[number];

/** Where a secret is: an environment variable, an absolute file, or (for URLs written in the file) the value. */
export type SecretRef = { env: string } | { file: string } | { value: string };

/** PagerDuty's Events API v2 endpoint. */
export const PAGERDUTY_EVENTS_URL = 'https://events.pagerduty.com/v2/enqueue';

/** Compiled `notify:` block. Durations in ms. */
export interface NotifyConfig {
  on: NotifyEvent[];
  /** Per-send timeout. */
  timeoutMs: number;
  /** At most `max` messages per (schedule, channel) in a window of `perMs` (recovered always goes through). */
  rateLimit: { max: number; perMs: number };
  webhook?: { url: string; keys: SecretRef[]; headers: Record<string, string> };
  slack?: { url: SecretRef };
  teams?: { url: SecretRef };
  pagerduty?: { routingKey: SecretRef; eventsUrl: string; severity: 'critical' | 'error' | 'warning' | 'info'; source: string };
  email?: { to: string[]; from: string; smtp: { url: string; user?: SecretRef; password?: SecretRef } };
}

/** Compiled `heartbeat:` block. */
export interface HeartbeatConfig {
  url: SecretRef;
  on: HeartbeatEvent[];
  method: 'GET' | 'POST';
  timeoutMs: number;
  /** The word put for `{event}` in a URL template (Cronitor: `{start: run, success: complete}`). */
  names: Record<HeartbeatEvent, string>;
}

/** Compiled `signing:` block: the keys that sign an http job's body, the current one first. */
export interface SigningConfig {
  keys: SecretRef[];
}

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const envName = z.string().regex(ENV_NAME, 'must be an environment variable name (letters, digits and _, not starting with a digit)');
const secretFile = z
  .string()
  .min(1)
  .refine((p) => isAbsolute(p), 'must be an absolute path, e.g. a mounted Kubernetes Secret such as /var/run/secrets/hook/key');
const httpUrl = z.url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL' });

/**
 * Checks, at load, that each named environment variable is set and each secret file readable: the `…Env` and
 * `…File` fields of one block (before its transform, which replaces them with references).
 */
function checkSecretSources(value: unknown, ctx: z.RefinementCtx): void {
  if (typeof value !== 'object' || value === null) return;
  const path: string[] = [];
  for (const [k, v] of Object.entries(value)) {
    if (typeof v !== 'string') continue;
    if (k.endsWith('Env') && ENV_NAME.test(v) && !process.env[v]) {
      ctx.addIssue({
        code: 'custom',
        path: [...path, k],
        message: `environment variable ${v} is not set (or empty) here; every replica needs it: set it (e.g. from a Kubernetes Secret) or name a file with ${k.slice(0, -3)}File`,
      });
    }
    if (k.endsWith('File') && isAbsolute(v)) {
      const why = unreadable(v);
      if (why) ctx.addIssue({ code: 'custom', path: [...path, k], message: `${v} ${why}; every replica needs it (e.g. a mounted Secret)` });
    }
  }
}

function unreadable(file: string): string | undefined {
  try {
    if (!statSync(file).isFile()) return 'is not a file';
    accessSync(file, constants.R_OK);
    if (readFileSync(file, 'utf8').trim() === '') return 'is empty';
    return undefined;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'does not exist' : `cannot be read (${(err as Error).message})`;
  }
}

/** Exactly one of the fields `names` must be set (a secret's sources). */
function exactlyOne(v: Record<string, unknown>, names: string[], ctx: z.RefinementCtx, what: string): void {
  const set = names.filter((n) => v[n] !== undefined);
  if (set.length === 1) return;
  ctx.addIssue({
    code: 'custom',
    path: set.length === 0 ? [] : [set[1]!],
    message: set.length === 0 ? `needs ${what}: one of ${names.join(', ')}` : `give ${what} once: ${set.join(' and ')} are both set`,
  });
}

function ref(v: Record<string, unknown>, base: string): SecretRef | undefined {
  if (typeof v[`${base}Env`] === 'string') return { env: v[`${base}Env`] as string };
  if (typeof v[`${base}File`] === 'string') return { file: v[`${base}File`] as string };
  if (typeof v[base] === 'string') return { value: v[base] as string };
  return undefined;
}

const webhookSchema = z
  .strictObject({
    url: httpUrl.describe('receives a JSON body per notification (POST), with an Idempotency-Key header'),
    secretEnv: envName.optional().describe('environment variable holding the HMAC key: the body is signed (header x-cronflock-signature: t=…,v1=…)'),
    secretFile: secretFile.optional().describe('absolute path of a file holding the HMAC key (instead of secretEnv)'),
    previousSecretEnv: envName.optional().describe('during a key rotation: the previous key, signed with too (a second v1=)'),
    previousSecretFile: secretFile.optional().describe('during a key rotation: a file holding the previous key'),
    // The http job's header rules (jobs/http.ts): valid names, each once, one-line values, x-cronflock-* reserved.
    headers: headerMapSchema.default({}).describe('extra request headers (x-cronflock-* are cronflock\'s own)'),
  })
  .superRefine((v, ctx) => {
    if (v.secretEnv !== undefined && v.secretFile !== undefined) exactlyOne(v, ['secretEnv', 'secretFile'], ctx, 'the key');
    if (v.previousSecretEnv !== undefined && v.previousSecretFile !== undefined) exactlyOne(v, ['previousSecretEnv', 'previousSecretFile'], ctx, 'the previous key');
    if ((v.previousSecretEnv ?? v.previousSecretFile) !== undefined && (v.secretEnv ?? v.secretFile) === undefined) {
      ctx.addIssue({ code: 'custom', path: [], message: 'a previous key needs a current one (secretEnv or secretFile)' });
    }
  })
  .superRefine((v, ctx) => checkSecretSources(v, ctx))
  .transform((v) => ({
    url: v.url,
    keys: [ref(v, 'secret'), ref(v, 'previousSecret')].filter((r): r is SecretRef => r !== undefined),
    headers: v.headers,
  }));

/** Slack and Teams take a webhook URL that is itself a credential: written in the file, or from env/file. */
const chatSchema = (service: string) =>
  z
    .strictObject({
      webhookUrl: httpUrl.optional().describe(`${service} incoming-webhook URL (it carries a token: prefer webhookUrlEnv or webhookUrlFile)`),
      webhookUrlEnv: envName.optional().describe(`environment variable holding the ${service} webhook URL`),
      webhookUrlFile: secretFile.optional().describe(`absolute path of a file holding the ${service} webhook URL`),
    })
    .superRefine((v, ctx) => exactlyOne(v, ['webhookUrl', 'webhookUrlEnv', 'webhookUrlFile'], ctx, 'the webhook URL'))
    .superRefine((v, ctx) => checkSecretSources(v, ctx))
    .transform((v) => ({ url: ref(v, 'webhookUrl')! }));

const pagerdutySchema = z
  .strictObject({
    routingKeyEnv: envName.optional().describe('environment variable holding the Events API v2 routing (integration) key'),
    routingKeyFile: secretFile.optional().describe('absolute path of a file holding the routing key'),
    eventsUrl: httpUrl.default(PAGERDUTY_EVENTS_URL).describe(`Events API v2 endpoint (default ${PAGERDUTY_EVENTS_URL}; set for a proxy or a test receiver)`),
    severity: z.enum(['critical', 'error', 'warning', 'info']).default('error').describe('severity of triggered alerts (default error)'),
    source: z.string().min(1).optional().describe('the alert source (default: cronflock/<namespace>)'),
  })
  .superRefine((v, ctx) => exactlyOne(v, ['routingKeyEnv', 'routingKeyFile'], ctx, 'the routing key'))
  .superRefine((v, ctx) => checkSecretSources(v, ctx))
  .transform((v) => ({ routingKey: ref(v, 'routingKey')!, eventsUrl: v.eventsUrl, severity: v.severity, source: v.source ?? '' }));

const emailSchema = z
  .strictObject({
    to: z.array(z.email('must be an e-mail address')).min(1, 'needs at least one recipient').describe('recipients'),
    from: z.string().min(3).optional().describe('sender (default cronflock@<host name>)'),
    smtp: z
      .strictObject({
        url: z
          .url({ protocol: /^smtps?$/, error: 'must be an smtp:// or smtps:// URL, e.g. smtp://mail.example:587' })
          .refine((u) => !new URL(u).password, 'must not carry a password: use passwordEnv or passwordFile')
          .describe('SMTP server: smtp://host:587 (STARTTLS when offered) or smtps://host:465 (TLS)'),
        user: z.string().min(1).optional().describe('SMTP user name'),
        userEnv: envName.optional().describe('environment variable holding the SMTP user name'),
        passwordEnv: envName.optional().describe('environment variable holding the SMTP password'),
        passwordFile: secretFile.optional().describe('absolute path of a file holding the SMTP password'),
      })
      .superRefine((v, ctx) => {
        if (v.passwordEnv !== undefined && v.passwordFile !== undefined) exactlyOne(v, ['passwordEnv', 'passwordFile'], ctx, 'the password');
        if (v.user !== undefined && v.userEnv !== undefined) exactlyOne(v, ['user', 'userEnv'], ctx, 'the user');
      })
      .superRefine((v, ctx) => checkSecretSources(v, ctx)),
  })
  .transform((v) => ({
    to: v.to,
    from: v.from ?? `cronflock@${hostname()}`,
    smtp: { url: v.smtp.url, user: ref(v.smtp, 'user'), password: ref(v.smtp, 'password') },
  }));

/** The `notify:` block of a schedule. */
export const notifySchema = z
  .strictObject({
    on: z
      .array(z.enum(NOTIFY_EVENTS))
      .min(1, 'name at least one of failed, missed, skipped, recovered, succeeded')
      .default(['failed', 'missed', 'recovered'])
      .describe('outcomes to notify: failed (after the last retry), missed, skipped, recovered (first success after failed or missed ones), succeeded (default [failed, missed, recovered])'),
    webhook: webhookSchema.optional(),
    slack: chatSchema('Slack').optional(),
    teams: chatSchema('Microsoft Teams (Workflows/Power Automate or connector)').optional(),
    pagerduty: pagerdutySchema.optional().describe('PagerDuty Events API v2: trigger on failed/missed/skipped, resolve on recovered, one dedup key per schedule'),
    email: emailSchema.optional(),
    rateLimit: z
      .strictObject({
        max: z.int('must be a whole number').min(1, 'must be at least 1').default(5).describe('messages per window (default 5)'),
        per: timerDurationMs.prefault('1h').describe('the window, from its first message (default 1h)'),
      })
      .prefault({})
      .describe('per schedule and channel: at most max messages per window, then one summary of the suppressed ones when it ends; recovered always goes through'),
    timeout: timerDurationMs.prefault('10s').describe('per-send timeout (default 10s)'),
  })
  .superRefine((v, ctx) => {
    if (!v.webhook && !v.slack && !v.teams && !v.pagerduty && !v.email) {
      ctx.addIssue({ code: 'custom', path: [], message: 'names no channel: add webhook, slack, teams, pagerduty or email' });
    }
  })
  .transform(
    (v): NotifyConfig => ({
      on: [...new Set(v.on)],
      timeoutMs: v.timeout,
      rateLimit: { max: v.rateLimit.max, perMs: v.rateLimit.per },
      ...(v.webhook ? { webhook: v.webhook } : {}),
      ...(v.slack ? { slack: v.slack } : {}),
      ...(v.teams ? { teams: v.teams } : {}),
      ...(v.pagerduty ? { pagerduty: v.pagerduty } : {}),
      ...(v.email ? { email: v.email } : {}),
    }),
  )
  .describe('notifications of this schedule\'s outcomes, exactly one per outcome and channel across the flock (an outbox in Redis)');

/** The `heartbeat:` block of a schedule: pings to an outside dead-man's switch (healthchecks.io, Cronitor). */
export const heartbeatSchema = z
  .strictObject({
    url: httpUrl.optional().describe('ping URL: healthchecks.io style (start → URL/start, success → URL, fail → URL/fail), or a template with {event}'),
    urlEnv: envName.optional().describe('environment variable holding the ping URL (it identifies the check: treat it as a secret)'),
    urlFile: secretFile.optional().describe('absolute path of a file holding the ping URL'),
    on: z.array(z.enum(HEARTBEAT_EVENTS)).min(1).default(['start', 'success', 'fail']).describe('pings: start (first attempt claimed), success, fail (failed after the last retry, or missed) (default all three)'),
    method: z.enum(['GET', 'POST']).default('POST').describe('HTTP method (default POST, with a small JSON body)'),
    names: z
      .strictObject({ start: z.string().min(1).optional(), success: z.string().min(1).optional(), fail: z.string().min(1).optional() })
      .default({})
      .describe('the word for {event} in a URL template, e.g. Cronitor: {start: run, success: complete, fail: fail}'),
    timeout: timerDurationMs.prefault('10s').describe('per-ping timeout (default 10s)'),
  })
  .superRefine((v, ctx) => exactlyOne(v, ['url', 'urlEnv', 'urlFile'], ctx, 'the ping URL'))
  .superRefine((v, ctx) => checkSecretSources(v, ctx))
  .transform(
    (v): HeartbeatConfig => ({
      url: ref(v, 'url')!,
      on: [...new Set(v.on)],
      method: v.method,
      timeoutMs: v.timeout,
      names: { start: v.names.start ?? 'start', success: v.names.success ?? 'success', fail: v.names.fail ?? 'fail' },
    }),
  )
  .describe('dead-man\'s switch: pings an outside monitor on start, success and fail, so it alerts when pings stop (even if the whole flock or Redis is down)');

/** The `signing:` block: signs an http job's body (header x-cronflock-signature). */
export const signingSchema = z
  .strictObject({
    secretEnv: envName.optional().describe('environment variable holding the HMAC key'),
    secretFile: secretFile.optional().describe('absolute path of a file holding the HMAC key'),
    previousSecretEnv: envName.optional().describe('during a key rotation: the previous key, signed with too'),
    previousSecretFile: secretFile.optional().describe('during a key rotation: a file holding the previous key'),
  })
  .superRefine((v, ctx) => {
    exactlyOne(v, ['secretEnv', 'secretFile'], ctx, 'the key');
    if (v.previousSecretEnv !== undefined && v.previousSecretFile !== undefined) exactlyOne(v, ['previousSecretEnv', 'previousSecretFile'], ctx, 'the previous key');
  })
  .superRefine((v, ctx) => checkSecretSources(v, ctx))
  .transform((v): SigningConfig => ({ keys: [ref(v, 'secret'), ref(v, 'previousSecret')].filter((r): r is SecretRef => r !== undefined) }))
  .describe('signs the http job\'s request body: x-cronflock-signature: t=<unix s>,v1=<HMAC-SHA256 of "t.body"> (see the README, "Receiving cronflock\'s calls safely")');

/**
 * cleanup's job-level `notify` (deprecated) as the schedule-level block it now means: `on: failure` → [failed];
 * `always` and `changes` → [failed, succeeded] (the outbox has no "acted on something" test; the counts are in
 * the run record); `retries` give way to the outbox's own. Undefined when `job` has no such block.
 */
export function cleanupNotifyAlias(job: unknown): Record<string, unknown> | undefined {
  const j = job as { kind?: unknown; notify?: Record<string, unknown> } | null;
  if (j?.kind !== 'cleanup' || typeof j.notify !== 'object' || j.notify === null) return undefined;
  const n = j.notify as { on?: unknown; webhook?: { url?: unknown; secretEnv?: unknown }; slack?: { webhookUrl?: unknown } };
  return {
    on: n.on === 'failure' ? ['failed'] : ['failed', 'succeeded'],
    ...(n.webhook ? { webhook: { url: n.webhook.url, ...(n.webhook.secretEnv !== undefined ? { secretEnv: n.webhook.secretEnv } : {}) } } : {}),
    ...(n.slack ? { slack: { webhookUrl: n.slack.webhookUrl } } : {}),
  };
}
