/**
 * From outbox outcomes to deliveries and messages (pure): which event on which channel, recovered instead of
 * succeeded, PagerDuty's trigger/resolve with one dedup key per schedule, heartbeat URLs (healthchecks.io
 * suffixes, templates), stable ids.
 */
import { describe, expect, it } from 'vitest';
import type { HeartbeatConfig, NotifyConfig } from './config.js';
import { deliveriesFor, messageId, outboxOn, type OutboxOutcome } from './events.js';
import { emailMessage, heartbeatUrl, notificationBody, pagerdutyEvent } from './message.js';

const notify: NotifyConfig = {
  on: ['failed', 'missed', 'recovered'],
  timeoutMs: 1000,
  rateLimit: { max: 5, perMs: 3_600_000 },
  webhook: { url: 'http://h/', keys: [], headers: {} },
  pagerduty: { routingKey: { env: 'X' }, eventsUrl: 'http://pd/', severity: 'error', source: '' },
};
const heartbeat: HeartbeatConfig = { url: { value: 'http://m/ping/abc' }, on: ['start', 'success', 'fail'], method: 'POST', timeoutMs: 1000, names: { start: 'run', success: 'complete', fail: 'fail' } };
const outcome = (state: OutboxOutcome['state'], prev = ''): OutboxOutcome => ({
  kind: 'outcome', key: 's@2026-01-01T00:00:00.000Z', schedule: 's', state, reason: state === 'failed' ? 'job failed' : '', prev, dueMs: 0, attempt: 2, error: '', atMs: 1000,
});
const events = (o: OutboxOutcome, n = notify, h: HeartbeatConfig | null = heartbeat): string[] => deliveriesFor(o, { notify: n, heartbeat: h ?? undefined }).map((d) => `${d.field}${d.rateLimited ? '' : '!'}`);

describe('deliveries', () => {
  it('maps outcomes to notifications and pings; recovered replaces succeeded and is never rate limited', () => {
    expect(events(outcome('started'))).toEqual(['start/heartbeat!']);
    expect(events(outcome('failed'))).toEqual(['failed/webhook', 'failed/pagerduty', 'fail/heartbeat!']);
    expect(events(outcome('missed', 'succeeded'))).toEqual(['missed/webhook', 'missed/pagerduty', 'fail/heartbeat!']);
    expect(events(outcome('skipped'))).toEqual([]);
    expect(events(outcome('succeeded', 'succeeded'))).toEqual(['success/heartbeat!']);
    expect(events(outcome('succeeded', 'failed'))).toEqual(['recovered/webhook!', 'recovered/pagerduty!', 'success/heartbeat!']);
    expect(events(outcome('succeeded', 'missed'))).toEqual(['recovered/webhook!', 'recovered/pagerduty!', 'success/heartbeat!']);
    // succeeded subscribed: every success, but PagerDuty gets no success (nothing to trigger or resolve).
    expect(events(outcome('succeeded', 'succeeded'), { ...notify, on: ['succeeded'] }, null)).toEqual(['succeeded/webhook']);
    expect(events(outcome('succeeded', 'failed'), { ...notify, on: ['succeeded'] }, null)).toEqual(['succeeded/webhook']);
  });
  it('a summary goes to its channel; to PagerDuty only while the schedule still fails', () => {
    const sum = { kind: 'summary' as const, schedule: 's', channel: 'pagerduty' as const, suppressed: 3, events: { failed: 3 }, fromMs: 0, toMs: 1, last: 'failed', atMs: 2 };
    expect(deliveriesFor(sum, { notify }).map((d) => d.field)).toEqual(['suppressed/pagerduty']);
    expect(deliveriesFor({ ...sum, last: 'succeeded' }, { notify })).toEqual([]);
    expect(deliveriesFor({ ...sum, channel: 'slack' }, { notify })).toEqual([]); // no slack configured
  });
  it('outboxOn names what the Lua side must record', () => {
    expect(outboxOn({})).toBe('');
    expect(outboxOn({ notify })).toBe('failed missed recovered');
    expect(outboxOn({ heartbeat: { ...heartbeat, on: ['start', 'fail'] } })).toBe('failed missed started');
    expect(outboxOn({ notify: { ...notify, on: ['skipped'] }, heartbeat: { ...heartbeat, on: ['success'] } })).toBe('skipped succeeded');
  });
  it('ids are stable per (namespace, occurrence, event) and differ otherwise', () => {
    const o = outcome('failed');
    expect(messageId('ns', o, 'failed')).toBe(messageId('ns', { ...o, attempt: 9, atMs: 5 }, 'failed'));
    expect(new Set([messageId('ns', o, 'failed'), messageId('ns', o, 'fail'), messageId('other', o, 'failed'), messageId('ns', { ...o, key: 's@x' }, 'failed')]).size).toBe(4);
  });
});

describe('messages', () => {
  it('PagerDuty: trigger with payload, resolve on recovered, same dedup key', () => {
    const d = deliveriesFor(outcome('failed'), { notify })[1]!;
    const trig = pagerdutyEvent(notificationBody('ns', outcome('failed'), d, 'id1'), { severity: 'error', source: '' });
    expect(trig).toMatchObject({ event_action: 'trigger', dedup_key: 'cronflock/ns/s', payload: { source: 'cronflock/ns', severity: 'error', class: 'failed' } });
    const r = deliveriesFor(outcome('succeeded', 'failed'), { notify })[1]!;
    expect(pagerdutyEvent(notificationBody('ns', outcome('succeeded', 'failed'), r, 'id2'), { severity: 'error', source: '' })).toEqual({ event_action: 'resolve', dedup_key: 'cronflock/ns/s' });
  });
  it('e-mail Message-ID is the id; heartbeat URLs follow healthchecks.io or a template', () => {
    const d = deliveriesFor(outcome('failed'), { notify })[0]!;
    expect(emailMessage(notificationBody('ns', outcome('failed'), d, 'abc')).messageId).toBe('<abc@cronflock>');
    expect(heartbeatUrl('https://hc-ping.com/uuid', 'start', heartbeat.names)).toBe('https://hc-ping.com/uuid/start');
    expect(heartbeatUrl('https://hc-ping.com/uuid/', 'fail', heartbeat.names)).toBe('https://hc-ping.com/uuid/fail');
    expect(heartbeatUrl('https://hc-ping.com/uuid?x=1', 'fail', heartbeat.names)).toBe('https://hc-ping.com/uuid/fail?x=1');
    expect(heartbeatUrl('https://hc-ping.com/uuid', 'success', heartbeat.names)).toBe('https://hc-ping.com/uuid');
    expect(heartbeatUrl('https://cronitor.link/p/k/job?state={event}', 'start', heartbeat.names)).toBe('https://cronitor.link/p/k/job?state=run');
  });
});
