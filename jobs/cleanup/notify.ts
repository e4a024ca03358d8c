/**
 * Notifications after a cleanup run: a generic webhook (a JSON summary, signed with HMAC-SHA256 when a secret
 * is configured, retried on network errors, 429 and 5xx) and Slack (an incoming-webhook message). Summaries
 * only: counts, never object lists, object bodies or Secret data. A notification that cannot be delivered is
 * logged as an error; it does not change the run's outcome. A webhook whose `secretEnv` is unset is not sent
 * (unsigned) but fails that way. Requests go through ./outbound-http.ts: redirects within the origin only, the
 * answer read with bounded memory.
 */
import { createHmac } from 'node:crypto';
import { linkedSignal } from '../../runner/time/deadline.js';
import { exchange } from '../outbound-http.js';
import type { JobContext } from '../types.js';
import type { CleanupReport } from './report.js';
import type { CleanupParams } from './schema.js';

/** The JSON body of a webhook notification. */
export interface NotificationSummary {
  schedule: string;
  occurrence: string;
  replica: string;
  state: 'succeeded' | 'failed';
  error?: string;
  action: string;
  dryRun: boolean;
  scanned?: number;
  matched?: number;
  acted?: number;
  skipped?: Record<string, number>;
  errored?: number;
  sentAt: string;
}

/** Header carrying `sha256=<hex HMAC-SHA256 of the raw body>`. */
export const SIGNATURE_HEADER = 'x-cronflock-signature';

/** The signature value of `body` under `secret`. */
export function signBody(secret: string, body: string): string {
  return `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
}

/** How long one delivery attempt may take, reading the answer included. */
const ATTEMPT_TIMEOUT_MS = 10_000;

async function post(url: string, body: string, headers: Record<string, string>, retries: number, signal: AbortSignal): Promise<void> {
  let last = '';
  for (let attempt = 0; attempt <= retries; attempt++) {
    if (attempt > 0) await new Promise((r) => setTimeout(r, 250 * 2 ** (attempt - 1)));
    signal.throwIfAborted();
    // A timer we hold, not AbortSignal.timeout/any (see runner/time/deadline.ts).
    const deadline = linkedSignal([signal], ATTEMPT_TIMEOUT_MS);
    try {
      const res = await exchange({
        url,
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        jobHeaders: headers,
        body,
        signal: deadline.signal,
        redirects: 'same-origin',
        keepBodyBytes: 0,
      });
      if (res.status >= 200 && res.status <= 299) return;
      last = `answered ${res.status}`;
      if (res.status !== 429 && res.status < 500) break;
    } catch (e) {
      if (signal.aborted) throw e;
      last = deadline.timedOut ? `timed out after ${ATTEMPT_TIMEOUT_MS} ms` : e instanceof Error ? e.message : String(e);
    } finally {
      deadline.dispose();
    }
  }
  // The URL may carry a token (Slack): name only its origin.
  throw new Error(`notification to ${new URL(url).origin} failed: ${last}`);
}

/**
 * The webhook's signing key from `secretEnv`, undefined when none is configured.
 * @throws Error naming the variable (never a value) when it is configured but unset or empty: a receiver that checks
 *   signatures would drop an unsigned notification, and one that does not would be misled.
 */
function signingKey(secretEnv: string | undefined): string | undefined {
  if (secretEnv === undefined) return undefined;
  const key = process.env[secretEnv];
  if (!key) throw new Error(`not sent: secretEnv names ${secretEnv}, which is not set (or empty) in this replica's environment; an unsigned notification is not sent`);
  return key;
}

/** Sends the configured notifications for one run; logs (and swallows) delivery failures. */
export async function notify(ctx: JobContext, p: CleanupParams, outcome: { report?: CleanupReport; error?: string }): Promise<void> {
  const n = p.notify;
  if (!n || ctx.signal.aborted) return;
  if (n.on === 'failure' && outcome.error === undefined) return;
  if (n.on === 'changes' && outcome.error === undefined && (outcome.report?.acted ?? 0) === 0) return;
  const r = outcome.report;
  const summary: NotificationSummary = {
    schedule: ctx.occurrence.schedule,
    occurrence: ctx.occurrence.key,
    replica: ctx.replica,
    state: outcome.error === undefined ? 'succeeded' : 'failed',
    ...(outcome.error !== undefined ? { error: outcome.error.slice(0, 1000) } : {}),
    action: p.action,
    dryRun: p.dryRun,
    ...(r ? { scanned: r.scanned, matched: r.matched, acted: r.acted, skipped: r.skipped, errored: r.errored } : {}),
    sentAt: new Date().toISOString(),
  };
  const sends: Promise<void>[] = [];
  if (n.webhook) {
    const body = JSON.stringify(summary);
    const webhook = n.webhook;
    sends.push(
      (async () => {
        const secret = signingKey(webhook.secretEnv);
        const headers: Record<string, string> = { 'x-cronflock-occurrence': ctx.occurrence.key };
        if (secret) headers[SIGNATURE_HEADER] = signBody(secret, body);
        await post(webhook.url, body, headers, webhook.retries, ctx.signal);
      })(),
    );
  }
  if (n.slack) {
    const verb = p.dryRun ? 'would act on' : 'acted on';
    const text =
      summary.state === 'failed'
        ? `cronflock cleanup *${summary.schedule}* failed: ${summary.error}`
        : `cronflock cleanup *${summary.schedule}* (${p.action}): ${verb} ${summary.acted} of ${summary.matched} selected (${summary.scanned} scanned), ` +
          `skipped ${Object.values(summary.skipped ?? {}).reduce((a, b) => a + b, 0)}, errors ${summary.errored}`;
    sends.push(post(n.slack.webhookUrl, JSON.stringify({ text }), {}, n.slack.retries, ctx.signal));
  }
  for (const s of await Promise.allSettled(sends)) {
    if (s.status === 'rejected') ctx.log.error({ error: s.reason instanceof Error ? s.reason.message : String(s.reason) }, 'cleanup notification not delivered');
  }
}
