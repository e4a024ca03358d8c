/**
 * From an outcome in the outbox to the messages it means: which event, on which channel. Pure.
 *
 * The Lua side (`emitOutcome` in runner/redis/lua/includes/outbox.lua) records raw outcomes: `started` (the first claim
 * of an occurrence), `succeeded`, `failed`, `missed`, `skipped`, each with the schedule's previous outcome among
 * succeeded/failed/missed (`prev`). Here they become notifications (failed, missed, skipped, recovered,
 * succeeded) and heartbeat pings (start, success, fail), one delivery per (event, channel).
 */
import { createHash } from 'node:crypto';
import type { HeartbeatConfig, HeartbeatEvent, NotifyConfig, NotifyEvent } from './config.js';

/** What the outbox records for one outcome (the stream entry's fields). Times are UTC ms. */
export interface OutboxOutcome {
  kind: 'outcome';
  /** Occurrence key `<schedule>@<due ISO>`. */
  key: string;
  schedule: string;
  state: 'started' | 'succeeded' | 'failed' | 'missed' | 'skipped';
  reason: string;
  /** The schedule's previous outcome among succeeded, failed, missed ('' when none is known). */
  prev: string;
  dueMs: number;
  attempt: number;
  error: string;
  /** When the outcome was recorded, on the Redis clock. */
  atMs: number;
}

/** A summary of rate-limited messages, due when the window ended (see runner/redis/lua/includes/outbox-delivery.lua). */
export interface OutboxSummary {
  kind: 'summary';
  schedule: string;
  channel: ChannelName;
  suppressed: number;
  /** Suppressed messages per event. */
  events: Record<string, number>;
  fromMs: number;
  toMs: number;
  /** The schedule's last outcome among succeeded, failed, missed when the summary was made. */
  last: string;
  atMs: number;
}

/** One stream entry. */
export type OutboxEntry = OutboxOutcome | OutboxSummary;

/** Where messages go. */
export const CHANNELS = ['webhook', 'slack', 'teams', 'pagerduty', 'email', 'heartbeat'] as const;
/** See {@link CHANNELS}. */
export type ChannelName = (typeof CHANNELS)[number];

/** One message to send: an event on a channel. `field` names its delivery state in Redis. */
export interface Delivery {
  event: NotifyEvent | HeartbeatEvent | 'suppressed';
  channel: ChannelName;
  /** `<event>/<channel>`. */
  field: string;
  /** False for messages the rate limit never holds back: recovered, heartbeat pings, summaries. */
  rateLimited: boolean;
}

/** What the deliverer knows of a schedule. */
export interface OutboxSchedule {
  notify?: NotifyConfig;
  heartbeat?: HeartbeatConfig;
}

/**
 * The outcomes a schedule's outbox wants, as the Lua side reads them from the published definition
 * (`outboxOn`): '' when the schedule has neither notify nor heartbeat. `recovered` makes the Lua side record a
 * success that follows a failed or missed outcome.
 */
export function outboxOn(s: OutboxSchedule): string {
  const on = new Set<string>();
  for (const e of s.notify?.on ?? []) {
    if (e === 'failed' || e === 'missed' || e === 'skipped' || e === 'succeeded' || e === 'recovered') on.add(e);
  }
  for (const e of s.heartbeat?.on ?? []) {
    if (e === 'start') on.add('started');
    if (e === 'success') on.add('succeeded');
    if (e === 'fail') {
      on.add('failed');
      on.add('missed');
    }
  }
  return [...on].sort().join(' ');
}

/** The notification an outcome means, if the schedule asks for it. */
export function notifyEventOf(o: OutboxOutcome, n: NotifyConfig | undefined): NotifyEvent | undefined {
  if (!n) return undefined;
  let e: NotifyEvent | undefined;
  if (o.state === 'failed' || o.state === 'missed' || o.state === 'skipped') e = o.state;
  else if (o.state === 'succeeded') {
    // One message per outcome and channel: a recovery is said as recovered, not also as succeeded.
    e = (o.prev === 'failed' || o.prev === 'missed') && n.on.includes('recovered') ? 'recovered' : 'succeeded';
  }
  return e !== undefined && n.on.includes(e) ? e : undefined;
}

/** The heartbeat ping an outcome means, if the schedule asks for it. A missed occurrence pings fail. */
export function heartbeatEventOf(o: OutboxOutcome, h: HeartbeatConfig | undefined): HeartbeatEvent | undefined {
  if (!h) return undefined;
  const e: HeartbeatEvent | undefined =
    o.state === 'started' ? 'start' : o.state === 'succeeded' ? 'success' : o.state === 'failed' || o.state === 'missed' ? 'fail' : undefined;
  return e !== undefined && h.on.includes(e) ? e : undefined;
}

/**
 * Every message of an entry, for a schedule as this replica knows it. PagerDuty gets triggers (failed, missed,
 * skipped) and resolves (recovered), not successes; a summary goes only to its own channel, and to PagerDuty
 * only while the schedule's last outcome is a problem (it re-triggers what the rate limit held back).
 */
export function deliveriesFor(entry: OutboxEntry, s: OutboxSchedule): Delivery[] {
  const out: Delivery[] = [];
  const add = (event: Delivery['event'], channel: ChannelName, rateLimited: boolean): void => {
    out.push({ event, channel, field: `${event}/${channel}`, rateLimited });
  };
  if (entry.kind === 'summary') {
    if (entry.channel === 'pagerduty' && entry.last !== 'failed' && entry.last !== 'missed') return out;
    if (entry.channel !== 'heartbeat' && s.notify?.[entry.channel]) add('suppressed', entry.channel, false);
    return out;
  }
  const n = s.notify;
  const e = notifyEventOf(entry, n);
  if (n && e) {
    const limited = e !== 'recovered';
    if (n.webhook) add(e, 'webhook', limited);
    if (n.slack) add(e, 'slack', limited);
    if (n.teams) add(e, 'teams', limited);
    if (n.pagerduty && e !== 'succeeded') add(e, 'pagerduty', limited);
    if (n.email) add(e, 'email', limited);
  }
  const h = heartbeatEventOf(entry, s.heartbeat);
  if (h) add(h, 'heartbeat', false);
  return out;
}

/**
 * The message id: the same on every retry and every replica, different for every (occurrence, event) and every
 * summary. Receivers de-duplicate on it (webhook `id` and `Idempotency-Key`, e-mail `Message-ID`).
 */
export function messageId(namespace: string, entry: OutboxEntry, event: string): string {
  const what = entry.kind === 'summary' ? `summary\n${entry.schedule}\n${entry.channel}\n${entry.fromMs}` : `${entry.key}\n${event}`;
  return createHash('sha256').update(`${namespace}\n${what}`).digest('hex').slice(0, 32);
}

/** Parses a stream entry's flat field list; null when it is not one of ours. */
export function parseEntry(fields: readonly string[]): OutboxEntry | null {
  const f: Record<string, string> = {};
  for (let i = 0; i + 1 < fields.length; i += 2) f[fields[i]!] = fields[i + 1]!;
  if (f.kind === 'summary') {
    const events: Record<string, number> = {};
    for (const pair of (f.events ?? '').split(',').filter(Boolean)) {
      const [k, v] = pair.split('=');
      if (k) events[k] = Number(v);
    }
    if (!f.schedule || !(CHANNELS as readonly string[]).includes(f.channel ?? '')) return null;
    return {
      kind: 'summary',
      schedule: f.schedule,
      channel: f.channel as ChannelName,
      suppressed: Number(f.suppressed ?? 0),
      events,
      fromMs: Number(f.fromMs ?? 0),
      toMs: Number(f.toMs ?? 0),
      last: f.last ?? '',
      atMs: Number(f.atMs ?? 0),
    };
  }
  if (!f.key || !f.schedule || !f.state) return null;
  return {
    kind: 'outcome',
    key: f.key,
    schedule: f.schedule,
    state: f.state as OutboxOutcome['state'],
    reason: f.reason ?? '',
    prev: f.prev ?? '',
    dueMs: Number(f.dueMs ?? 0),
    attempt: Number(f.attempt ?? 0),
    error: f.error ?? '',
    atMs: Number(f.atMs ?? 0),
  };
}
