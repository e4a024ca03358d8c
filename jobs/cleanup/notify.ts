/**
 * Notifications after a cleanup run: a generic webhook (a JSON summary, signed with HMAC-SHA256 when a secret
 * is configured, retried on network errors, 429 and 5xx) and Slack (an incoming-webhook message). Summaries
 * only: counts, never object lists, object bodies or Secret data. A notification that cannot be delivered is
 * logged; it does not change the run's outcome.
 */
import { createHmac } from 'node:crypto';
import { sleep } from '../../runner/time/wait.js';
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

async function post(url: string, body: string, headers: Record<string, string>, retries: number, signal: AbortSignal): Promise<void> {
  let last = '';
  for (let attempt = 0; attempt <= retries; attempt++) {
    if (attempt > 0) await sleep(250 * 2 ** (attempt - 1));
    signal.throwIfAborted();
    try {
      const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body, signal: AbortSignal.any([signal, AbortSignal.timeout(10_000)]) });
      await res.arrayBuffer().catch(() => undefined);
      if (res.ok) return;
      last = `answered ${res.status}`;
      if (res.status !== 429 && res.status < 500) break;
    } catch (e) {
      if (signal.aborted) throw e;
      last = e instanceof Error ? String(e.cause ?? e.message) : String(e);
    }
  }
  // The URL may carry a token (Slack): name only its origin.
  throw new Error(`notification to ${new URL(url).origin} failed: ${last}`);
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
    const secret = n.webhook.secretEnv ? process.env[n.webhook.secretEnv] : undefined;
    const headers: Record<string, string> = { 'x-cronflock-occurrence': ctx.occurrence.key };
    if (secret) headers[SIGNATURE_HEADER] = signBody(secret, body);
    sends.push(post(n.webhook.url, body, headers, n.webhook.retries, ctx.signal));
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
    if (s.status === 'rejected') ctx.log.warn({ error: s.reason instanceof Error ? s.reason.message : String(s.reason) }, 'cleanup notification not delivered');
  }
}
