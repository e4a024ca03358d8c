/**
 * What each channel is sent for a delivery: the webhook's JSON body, the Slack and Teams texts, the PagerDuty
 * event, the e-mail, the heartbeat ping. Pure: no secrets here (they are added by the senders).
 */
import type { HeartbeatConfig } from './config.js';
import type { Delivery, OutboxEntry } from './events.js';

/**
 * The webhook's JSON body (and the facts every other channel words). `id` is the same on every retry.
 * Times are ISO 8601 UTC.
 */
export interface NotificationBody {
  id: string;
  /** failed, missed, skipped, recovered, succeeded; `suppressed` for a rate-limit summary. */
  event: string;
  namespace: string;
  schedule: string;
  /** The occurrence key (absent in a summary). */
  occurrence?: string;
  dueAt?: string;
  /** The run record's final state (`succeeded` for recovered). */
  state?: string;
  reason?: string;
  /** The last attempt's error, when it failed. */
  error?: string;
  attempt?: number;
  /** The schedule's previous outcome (for recovered: failed or missed). */
  previousState?: string;
  /** When the outcome was recorded (Redis clock). */
  at: string;
  /** A summary: how many messages the rate limit held back in [from, to), per event. */
  suppressed?: { count: number; events: Record<string, number>; from: string; to: string; lastOutcome: string };
}

const iso = (ms: number): string => new Date(ms).toISOString();

/** The body of one delivery. */
export function notificationBody(namespace: string, entry: OutboxEntry, d: Delivery, id: string): NotificationBody {
  if (entry.kind === 'summary') {
    return {
      id,
      event: 'suppressed',
      namespace,
      schedule: entry.schedule,
      at: iso(entry.atMs),
      suppressed: { count: entry.suppressed, events: entry.events, from: iso(entry.fromMs), to: iso(entry.toMs), lastOutcome: entry.last },
    };
  }
  return {
    id,
    event: d.event,
    namespace,
    schedule: entry.schedule,
    occurrence: entry.key,
    dueAt: iso(entry.dueMs),
    state: entry.state,
    ...(entry.reason ? { reason: entry.reason } : {}),
    ...(entry.error ? { error: entry.error.slice(0, 1000) } : {}),
    attempt: entry.attempt,
    ...(entry.prev ? { previousState: entry.prev } : {}),
    at: iso(entry.atMs),
  };
}

/** One line for people (Slack, Teams, e-mail subject + first line, PagerDuty summary). */
export function headline(b: NotificationBody): string {
  if (b.suppressed) {
    const per = Object.entries(b.suppressed.events).map(([e, n]) => `${e} ${n}`).join(', ');
    return `cronflock: ${b.schedule}: ${b.suppressed.count} more notification(s) held back by the rate limit between ${b.suppressed.from} and ${b.suppressed.to} (${per}); last outcome: ${b.suppressed.lastOutcome || 'unknown'}`;
  }
  const why = [b.reason, b.error].filter((x) => x && x !== 'job failed').join(': ');
  switch (b.event) {
    case 'failed':
      return `cronflock: ${b.schedule} failed${why ? `: ${why}` : ''} (attempt ${b.attempt})`;
    case 'missed':
      return `cronflock: ${b.schedule} missed a run${why ? `: ${why}` : ''}`;
    case 'skipped':
      return `cronflock: ${b.schedule} skipped a run${why ? `: ${why}` : ''}`;
    case 'recovered':
      return `cronflock: ${b.schedule} recovered: succeeded after ${b.previousState === 'missed' ? 'a missed run' : 'failing'}`;
    default:
      return `cronflock: ${b.schedule} succeeded`;
  }
}

/** The details under the headline, one fact a line. */
export function details(b: NotificationBody): string {
  const lines = [
    `schedule: ${b.schedule}`,
    ...(b.occurrence ? [`occurrence: ${b.occurrence}`] : []),
    ...(b.dueAt ? [`due at: ${b.dueAt}`] : []),
    ...(b.state ? [`state: ${b.state}`] : []),
    ...(b.reason ? [`reason: ${b.reason}`] : []),
    ...(b.error ? [`error: ${b.error}`] : []),
    `recorded at: ${b.at}`,
    `namespace: ${b.namespace}`,
    `id: ${b.id}`,
  ];
  return lines.join('\n');
}

/** Slack incoming-webhook payload. */
export function slackPayload(b: NotificationBody): unknown {
  return { text: `*${headline(b)}*\n${details(b)}` };
}

/** Microsoft Teams payload: an Adaptive Card message (what Workflows webhooks and connectors accept). */
export function teamsPayload(b: NotificationBody): unknown {
  return {
    type: 'message',
    attachments: [
      {
        contentType: 'application/vnd.microsoft.card.adaptive',
        contentUrl: null,
        content: {
          $schema: 'http://adaptivecards.io/schemas/adaptive-card.json',
          type: 'AdaptiveCard',
          version: '1.4',
          body: [
            { type: 'TextBlock', text: headline(b), weight: 'Bolder', wrap: true },
            { type: 'TextBlock', text: details(b).replaceAll('\n', '\n\n'), wrap: true },
          ],
        },
      },
    ],
  };
}

/**
 * PagerDuty Events API v2 event, without the routing key. One dedup key per schedule (`cronflock/<namespace>/
 * <schedule>`): failures of a schedule group into one open incident, and recovered resolves it.
 */
export function pagerdutyEvent(b: NotificationBody, o: { severity: string; source: string }): Record<string, unknown> {
  const dedupKey = `cronflock/${b.namespace}/${b.schedule}`;
  if (b.event === 'recovered') return { event_action: 'resolve', dedup_key: dedupKey };
  return {
    event_action: 'trigger',
    dedup_key: dedupKey,
    payload: {
      summary: headline(b).slice(0, 1024),
      source: o.source || `cronflock/${b.namespace}`,
      severity: o.severity,
      timestamp: b.at,
      component: b.schedule,
      group: b.namespace,
      class: b.event,
      custom_details: b,
    },
  };
}

/** The e-mail: a deterministic Message-ID, so a re-sent message is the same message to mail systems. */
export function emailMessage(b: NotificationBody): { subject: string; text: string; messageId: string } {
  return { subject: headline(b).slice(0, 200), text: `${headline(b)}\n\n${details(b)}\n`, messageId: `<${b.id}@cronflock>` };
}

/**
 * The heartbeat ping's URL: a template's `{event}` replaced by the event's name (`names`), else the
 * healthchecks.io convention: `<url>/start`, `<url>`, `<url>/fail` (before any query string).
 */
export function heartbeatUrl(url: string, event: 'start' | 'success' | 'fail', names: HeartbeatConfig['names']): string {
  if (url.includes('{event}')) return url.replaceAll('{event}', encodeURIComponent(names[event]));
  if (event === 'success') return url;
  const u = new URL(url);
  u.pathname = `${u.pathname.replace(/\/+$/, '')}/${event}`;
  return u.toString();
}
