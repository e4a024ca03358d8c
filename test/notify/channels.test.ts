/**
 * Heartbeats and every notification channel end to end, with real replica processes and local receivers:
 * - heartbeat pings start / success / fail exactly once per occurrence and event (healthchecks.io paths and a
 *   Cronitor-style template), a replica SIGKILLed on the way; once every replica is stopped the monitor hears
 *   nothing more (its alert is the monitor's, outside the flock);
 * - Slack, Teams, PagerDuty (trigger, then resolve with the same per-schedule dedup key) and e-mail, with
 *   secrets from environment variables; the rate limit lets `max` messages through, sends one summary when its
 *   window ends, and never holds back recovered.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Flock, sleep, until } from '../support/flock.js';
import { HookServer, MailServer } from '../support/hooks.js';

describe('heartbeats and channels', () => {
  let flock: Flock;
  let hooks: HookServer;
  let mail: MailServer;
  beforeAll(async () => {
    [flock, hooks, mail] = await Promise.all([Flock.start(), HookServer.start(), MailServer.start()]);
  });
  afterAll(async () => {
    await flock?.close();
    await hooks?.close();
    await mail?.close();
  });

  it('pings start, success and fail exactly once per occurrence; silence once every replica is stopped', async () => {
    hooks.status.set('/job/bad', 500);
    const file = flock.writeSchedules(`schedules:
  - name: beat-ok
    cron: "* * * * * *"
    heartbeat: {url: ${hooks.url}/ping/ok}
    job: {kind: http, url: ${hooks.url}/job/ok}
  - name: beat-bad
    cron: "* * * * * *"
    heartbeat: {url: "${hooks.url}/cronitor/bad?state={event}", names: {start: run, success: complete}, method: GET}
    job: {kind: http, url: ${hooks.url}/job/bad}
`, 'beats.yaml');
    const a = await flock.startReplica({ name: 'b1', schedules: file, args: ['--lock', '1s'] });
    const b = await flock.startReplica({ name: 'b2', schedules: file, args: ['--lock', '1s'] });
    await sleep(4000);
    a.signal('SIGKILL');
    await a.exited;
    const c = await flock.startReplica({ name: 'b3', schedules: file, args: ['--lock', '1s'] });
    await sleep(4000);
    const stopping = Date.now();
    await Promise.all([b.stop(), c.stop()]);
    // A graceful stop sends the outcomes of the runs that finished before it.
    const runs = (await flock.runs()).filter((r) => (r.state === 'succeeded' || r.state === 'failed') && r.endMs! < stopping);
    const stoppedAt = Date.now();
    const pings = hooks.hits.filter((h) => h.path.startsWith('/ping/') || h.path.startsWith('/cronitor/'));
    // Each ping: one distinct id per (occurrence, event), sent to the right URL.
    const ids = new Map<string, Set<string>>();
    for (const p of pings) {
      const occ = p.method === 'POST' ? String(p.body.occurrence) : '';
      const id = String(p.headers['idempotency-key']);
      ids.set(`${p.path} ${occ}`, (ids.get(`${p.path} ${occ}`) ?? new Set()).add(id));
    }
    for (const r of runs.filter((x) => x.schedule === 'beat-ok')) {
      expect(r.state).toBe('succeeded');
      expect(ids.get(`/ping/ok/start ${r.key}`)?.size).toBe(1);
      expect(ids.get(`/ping/ok ${r.key}`)?.size).toBe(1);
    }
    expect(pings.filter((p) => p.path === '/ping/ok/fail')).toEqual([]);
    const bad = runs.filter((x) => x.schedule === 'beat-bad');
    expect(bad.length).toBeGreaterThanOrEqual(5);
    // GET pings carry no body: count distinct ids per template word instead.
    const badIds = (word: string): number => new Set(pings.filter((p) => p.path === `/cronitor/bad?state=${word}`).map((p) => String(p.headers['idempotency-key']))).size;
    // (Runs still going when the stop began may have pinged run, and fail too: not counted in `bad`.)
    const allBad = (await flock.runs('beat-bad')).filter((r) => r.state === 'failed').length;
    for (const word of ['run', 'fail']) {
      expect(badIds(word)).toBeGreaterThanOrEqual(bad.length);
      expect(badIds(word)).toBeLessThanOrEqual(allBad + (word === 'run' ? 2 : 0));
    }
    expect(badIds('complete')).toBe(0);
    // Silence: no replica, no ping (the monitor's grace period raises the alert).
    await sleep(4000);
    expect(hooks.hits.filter((h) => h.receivedMs > stoppedAt)).toEqual([]);
  });

  it('Slack, Teams, PagerDuty and e-mail each get the rate-limited failures, one summary, and the recovery', async () => {
    process.env.CRONFLOCK_TEST_SLACK_URL = `${hooks.url}/slack/T000/B000/XXXX`;
    process.env.CRONFLOCK_TEST_PD_KEY = 'pd-routing-key';
    hooks.status.set('/job/flap', 500);
    const file = flock.writeSchedules(`schedules:
  - name: flap
    cron: "* * * * * *"
    notify:
      on: [failed, recovered]
      slack: {webhookUrlEnv: CRONFLOCK_TEST_SLACK_URL}
      teams: {webhookUrl: ${hooks.url}/teams/wf}
      pagerduty: {routingKeyEnv: CRONFLOCK_TEST_PD_KEY, eventsUrl: ${hooks.url}/pd/v2/enqueue}
      email: {to: [ops@example.org], from: cronflock@example.org, smtp: {url: ${mail.url}}}
      rateLimit: {max: 2, per: 6s}
    job: {kind: http, url: ${hooks.url}/job/flap}
`, 'channels.yaml');
    await flock.startReplica({ name: 'c1', schedules: file });
    // Six failures in the first window: two go through on each channel, four are held back.
    await until(async () => (await flock.runs('flap')).filter((r) => r.state === 'failed').length >= 6, 20_000, 'six failures');
    // The window ends: one summary per channel (PagerDuty: a trigger, since the schedule still fails).
    await until(() => hooks.on('/slack').some((h) => String((h.body as { text?: string }).text).includes('held back')), 20_000, 'the Slack summary');
    hooks.status.set('/job/flap', 200);
    await until(() => hooks.on('/pd').some((h) => h.body.event_action === 'resolve'), 20_000, 'the PagerDuty resolve');
    await sleep(1500);

    const slack = hooks.on('/slack').map((h) => String((h.body as { text: string }).text));
    const failedIn = (texts: string[]): number => texts.filter((t) => t.includes('flap failed')).length;
    expect(failedIn(slack)).toBeGreaterThanOrEqual(2);
    // The first window's summary says how many were held back (six or more failures, two sent).
    const summary = slack.find((t) => t.includes('held back'))!;
    expect(Number(/(\d+) more notification/.exec(summary)?.[1])).toBeGreaterThanOrEqual(3);
    expect(summary).toContain('last outcome: failed');
    expect(slack.some((t) => t.includes('flap recovered'))).toBe(true);
    // Within one 6 s window, at most 2 failure messages per channel.
    const slackHits = hooks.on('/slack').filter((h) => String((h.body as { text: string }).text).includes('flap failed'));
    for (const h of slackHits) expect(slackHits.filter((x) => x.receivedMs >= h.receivedMs && x.receivedMs < h.receivedMs + 5_500).length).toBeLessThanOrEqual(2);

    const teams = hooks.on('/teams/wf').map((h) => h.body as { type: string; attachments: { contentType: string; content: { body: { text: string }[] } }[] });
    expect(teams[0]).toMatchObject({ type: 'message', attachments: [{ contentType: 'application/vnd.microsoft.card.adaptive' }] });
    expect(teams.some((t) => t.attachments[0]!.content.body[0]!.text.includes('flap recovered'))).toBe(true);

    const pd = hooks.on('/pd').map((h) => h.body as { routing_key: string; event_action: string; dedup_key: string; payload?: { severity: string; summary: string } });
    expect(new Set(pd.map((e) => e.dedup_key))).toEqual(new Set(['cronflock/cronflock/flap']));
    expect(pd.every((e) => e.routing_key === 'pd-routing-key')).toBe(true);
    expect(pd[0]).toMatchObject({ event_action: 'trigger', payload: { severity: 'error' } });
    expect(pd[pd.length - 1]!.event_action).toBe('resolve');

    const mails = mail.mails.filter((m) => m.subject.includes('flap'));
    expect(mails.filter((m) => m.subject.includes('flap failed')).length).toBeGreaterThanOrEqual(2);
    expect(mails.some((m) => m.subject.includes('held back'))).toBe(true);
    expect(mails.some((m) => m.subject.includes('flap recovered'))).toBe(true);

    // Secrets never in the replica's log lines or in Redis.
    const logs = JSON.stringify(flock.replicas.find((r) => r.name === 'c1')!.lines);
    expect(logs).not.toContain('pd-routing-key');
    expect(logs).not.toContain('/slack/T000/B000/XXXX');
    const dump = JSON.stringify(await flock.redisClient.hgetall('{cronflock}:defs'));
    expect(dump).not.toContain('pd-routing-key');
  });
});
