/**
 * Sending one message on one channel. Each sender answers what happened in the outbox's terms: `sent`, a
 * failure worth retrying (network, timeout, 408, 429, 5xx, an SMTP 4xx, a secret that cannot be read now), or a
 * permanent one (any other 4xx, an SMTP 5xx, a redirect: cronflock does not follow redirects with a signed body
 * or a routing key). Messages name a URL's origin only: webhook URLs of Slack, Teams and monitors carry tokens.
 *
 * Every request carries the message id (`Idempotency-Key`; the e-mail's Message-ID), the same on every retry:
 * receivers that de-duplicate on it show one message however often a crashed sender's message was re-sent.
 */
import type { HeartbeatConfig, NotifyConfig } from './config.js';
import type { Delivery, OutboxEntry } from './events.js';
import {
  emailMessage,
  heartbeatUrl,
  notificationBody,
  pagerdutyEvent,
  slackPayload,
  teamsPayload,
  type NotificationBody,
} from './message.js';
import { readSecret, SecretUnavailableError } from './secrets.js';
import { signatureHeaders } from './signing.js';
import { exchange, ExchangeError, scrub } from '../../jobs/outbound-http.js';
import { linkedSignal } from '../time/deadline.js';

/** The result of one send. */
export type SendResult = { ok: true } | { ok: false; permanent: boolean; error: string };

/** What a send needs besides the message. */
export interface SendContext {
  namespace: string;
  notify?: NotifyConfig;
  heartbeat?: HeartbeatConfig;
}

function origin(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return 'the URL';
  }
}

/** Bytes of a refusing answer quoted in a send's error (logged; never a secret: those are replaced by `***`). */
const ANSWER_EXCERPT_BYTES = 200;

/**
 * POSTs (or GETs) through the jobs' outbound exchange (jobs/outbound-http.ts: the answer read with bounded memory,
 * messages without header values), with a timer we hold (runner/time/deadline.ts, never AbortSignal.timeout/any)
 * that covers reading the answer too. Never follows a redirect: a 3xx is a permanent failure (the body may be
 * signed, or the URL carry a routing key). `secretValues` (e.g. a URL that carries a token) never appear in errors.
 */
async function request(
  url: string,
  o: { method: 'GET' | 'POST'; body?: string; headers: Record<string, string>; jobHeaders?: Record<string, string>; timeoutMs: number; secretValues?: string[] },
): Promise<SendResult> {
  const deadline = linkedSignal([], o.timeoutMs);
  try {
    const res = await exchange({
      url,
      method: o.method,
      headers: o.headers,
      jobHeaders: o.jobHeaders ?? {},
      ...(o.body !== undefined ? { body: o.body } : {}),
      signal: deadline.signal,
      redirects: 'none',
      keepBodyBytes: ANSWER_EXCERPT_BYTES,
      secrets: [url, ...(o.secretValues ?? [])],
    });
    if (res.status >= 200 && res.status < 300) return { ok: true };
    const redirect = res.status >= 300 && res.status < 400;
    const permanent = redirect || (res.status >= 400 && res.status < 500 && res.status !== 408 && res.status !== 429);
    const excerpt = res.body.replace(/\s+/g, ' ').trim();
    return { ok: false, permanent, error: `${origin(url)} answered ${res.status}${redirect ? ' (a redirect: not followed)' : excerpt ? `: ${excerpt}` : ''}` };
  } catch (err) {
    const why = deadline.timedOut ? `no answer within ${o.timeoutMs} ms` : err instanceof ExchangeError ? err.message : String((err as Error).message);
    return { ok: false, permanent: false, error: `${origin(url)}: ${scrub(why, [url, ...(o.secretValues ?? [])])}` };
  } finally {
    deadline.dispose();
  }
}

function json(body: unknown, id: string, extra: Record<string, string> = {}): { body: string; headers: Record<string, string> } {
  return { body: JSON.stringify(body), headers: { 'content-type': 'application/json', 'idempotency-key': id, ...extra } };
}

async function sendEmail(n: NonNullable<NotifyConfig['email']>, b: NotificationBody, timeoutMs: number): Promise<SendResult> {
  const url = new URL(n.smtp.url);
  const user = n.smtp.user ? readSecret(n.smtp.user) : undefined;
  const pass = n.smtp.password ? readSecret(n.smtp.password) : undefined;
  // nodemailer (~40 files) is imported at the first e-mail, not with the replica: most flocks send none.
  const { default: nodemailer } = await import('nodemailer');
  const transport = nodemailer.createTransport({
    host: url.hostname,
    port: url.port ? Number(url.port) : url.protocol === 'smtps:' ? 465 : 587,
    secure: url.protocol === 'smtps:',
    ...(user !== undefined || pass !== undefined ? { auth: { user: user ?? '', pass: pass ?? '' } } : {}),
    connectionTimeout: timeoutMs,
    greetingTimeout: timeoutMs,
    socketTimeout: timeoutMs,
  });
  const m = emailMessage(b);
  try {
    await transport.sendMail({ from: n.from, to: n.to, subject: m.subject, text: m.text, messageId: m.messageId, headers: { 'X-Cronflock-Id': b.id } });
    return { ok: true };
  } catch (err) {
    const e = err as { responseCode?: number; message?: string };
    // SMTP: 5xx is a permanent refusal (bad recipient, relay denied), 4xx and connection errors are worth a retry.
    const permanent = typeof e.responseCode === 'number' && e.responseCode >= 500;
    return { ok: false, permanent, error: `smtp ${url.host}: ${String(e.message ?? err).slice(0, 300)}` };
  } finally {
    transport.close();
  }
}

/** Sends one delivery of an entry. Never throws: every problem is a {@link SendResult}. */
export async function sendDelivery(ctx: SendContext, entry: OutboxEntry, d: Delivery, id: string): Promise<SendResult> {
  const body = notificationBody(ctx.namespace, entry, d, id);
  try {
    if (d.channel === 'heartbeat') {
      const h = ctx.heartbeat;
      if (!h || d.event === 'suppressed' || !['start', 'success', 'fail'].includes(d.event)) return { ok: false, permanent: true, error: 'no heartbeat configured' };
      const url = heartbeatUrl(readSecret(h.url), d.event as 'start' | 'success' | 'fail', h.names);
      const ping = json({ id, event: d.event, schedule: body.schedule, occurrence: body.occurrence, state: body.state, at: body.at }, id);
      return await request(url, { method: h.method, ...(h.method === 'POST' ? { body: ping.body } : {}), headers: h.method === 'POST' ? ping.headers : { 'idempotency-key': id }, timeoutMs: h.timeoutMs });
    }
    const n = ctx.notify;
    if (!n) return { ok: false, permanent: true, error: 'no notify configured' };
    switch (d.channel) {
      case 'webhook': {
        if (!n.webhook) break;
        const text = JSON.stringify(body);
        // The user's headers cannot replace cronflock's: x-cronflock-* names are refused at load, and ours go last.
        const headers = { 'content-type': 'application/json', 'idempotency-key': id, 'x-cronflock-event': body.event, ...signatureHeaders(n.webhook.keys, text) };
        return await request(n.webhook.url, { method: 'POST', body: text, headers, jobHeaders: n.webhook.headers, timeoutMs: n.timeoutMs });
      }
      case 'slack':
        if (!n.slack) break;
        return await request(readSecret(n.slack.url), { method: 'POST', ...json(slackPayload(body), id), timeoutMs: n.timeoutMs });
      case 'teams':
        if (!n.teams) break;
        return await request(readSecret(n.teams.url), { method: 'POST', ...json(teamsPayload(body), id), timeoutMs: n.timeoutMs });
      case 'pagerduty': {
        const pd = n.pagerduty;
        if (!pd) break;
        const event = { routing_key: readSecret(pd.routingKey), ...pagerdutyEvent(body, pd) };
        return await request(pd.eventsUrl, { method: 'POST', ...json(event, id), timeoutMs: n.timeoutMs });
      }
      case 'email':
        if (!n.email) break;
        return await sendEmail(n.email, body, n.timeoutMs);
    }
    return { ok: false, permanent: true, error: `channel ${d.channel} is not configured here` };
  } catch (err) {
    if (err instanceof SecretUnavailableError) return { ok: false, permanent: false, error: err.message };
    return { ok: false, permanent: false, error: (err as Error).message };
  }
}
