/**
 * Exactly one notification per occurrence outcome and channel across a flock whose replicas are SIGKILLed at
 * random while they send: three real replica processes, an http job that always fails (retries: 1), notify to a
 * local webhook receiver and a real SMTP server, both slow to answer so that kills land during sends. Counted at
 * the receivers over at least 50 occurrences: every failed occurrence has exactly one distinct webhook id and
 * one distinct Message-ID (0 lost, 0 duplicates); no other occurrence has any. After the job is fixed, exactly
 * one recovered per channel.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifySignatureValue } from '../../receiver/signature.js';
import { Flock, sleep, until } from '../support/flock.js';
import { HookServer, MailServer } from '../support/hooks.js';
import type { ReplicaProcess } from '../support/replica.js';

const KEY = 'exactly-once-test-key';

describe('notifications under SIGKILL', () => {
  let flock: Flock;
  let hooks: HookServer;
  let mail: MailServer;
  beforeAll(async () => {
    process.env.CRONFLOCK_TEST_HOOK_KEY = KEY; // inherited by the replica processes
    [flock, hooks, mail] = await Promise.all([Flock.start(), HookServer.start(), MailServer.start()]);
  });
  afterAll(async () => {
    await flock?.close();
    await hooks?.close();
    await mail?.close();
  });

  it('sends exactly one failed message per failed occurrence on each channel, then exactly one recovered', async () => {
    hooks.status.set('/job', 500);
    hooks.holdMs.set('/hook', 700);
    mail.holdMs = 700;
    const file = flock.writeSchedules(`schedules:
  - name: always-fails
    cron: "* * * * * *"
    retries: 1
    retryBackoff: 200ms
    notify:
      on: [failed, recovered]
      webhook: {url: ${hooks.url}/hook, secretEnv: CRONFLOCK_TEST_HOOK_KEY}
      email: {to: [ops@example.org], from: cronflock@example.org, smtp: {url: ${mail.url}}}
      rateLimit: {max: 100000}
      timeout: 5s
    job: {kind: http, url: ${hooks.url}/job, timeout: 2s}
`);
    const args = ['--lock', '1s'];
    let n = 0;
    const live: ReplicaProcess[] = [];
    for (let i = 0; i < 3; i++) live.push(await flock.startReplica({ name: `r${++n}`, schedules: file, args }));

    // Chaos: while a message is being sent (the receivers hold their answers), one replica at random is
    // SIGKILLed and a new one started, at most every 0.7 s and never leaving fewer than one running, until 55 occurrences failed.
    const failedCount = async (): Promise<number> => (await flock.runs('always-fails')).filter((r) => r.state === 'failed').length;
    let kills = 0;
    const starting: Promise<unknown>[] = [];
    const started = Date.now();
    while ((await failedCount()) < 55) {
      if (Date.now() - started > 240_000) throw new Error('55 failed occurrences took longer than 4 min');
      await sleep(700);
      if (live.length < 2) continue;
      await until(() => hooks.inFlight + mail.inFlight > 0, 10_000, 'a send in flight');
      const victim = live.splice(Math.floor(Math.random() * live.length), 1)[0]!;
      victim.signal('SIGKILL');
      kills++;
      starting.push(
        victim.exited.then(() => flock.startReplica({ name: `r${++n}`, schedules: file, args })).then((r) => live.push(r)),
      );
    }
    await Promise.all(starting);

    // Every failed occurrence's messages arrive (a killed sender's entry is taken over by another replica).
    const distinct = (ids: string[]): Set<string> => new Set(ids);
    const webhookIds = (event: string): Set<string> => distinct(hooks.on('/hook').filter((h) => h.body.event === event).map((h) => String(h.body.id)));
    const mailIds = (): Set<string> => distinct(mail.mails.map((m) => m.messageId));
    let failed = (await flock.runs('always-fails')).filter((r) => r.state === 'failed');
    await until(
      async () => {
        failed = (await flock.runs('always-fails')).filter((r) => r.state === 'failed');
        return webhookIds('failed').size >= failed.length && mailIds().size >= failed.length;
      },
      90_000,
      'a message for every failed occurrence',
    );
    const failedKeys = new Set(failed.map((r) => r.key));

    // Webhook: one distinct id per failed occurrence, only for failed occurrences; retries of a message carry
    // the same id, in the body and the Idempotency-Key header, and a valid signature.
    const byOccurrence = new Map<string, Set<string>>();
    for (const h of hooks.on('/hook')) {
      expect(h.headers['idempotency-key']).toBe(h.body.id);
      expect(verifySignatureValue(h.headers['x-cronflock-signature'] as string, h.raw, { keys: [KEY] }).ok).toBe(true);
      if (h.body.event !== 'failed') continue;
      const occ = String(h.body.occurrence);
      byOccurrence.set(occ, (byOccurrence.get(occ) ?? new Set()).add(String(h.body.id)));
    }
    expect([...byOccurrence.keys()].filter((k) => !failedKeys.has(k))).toEqual([]);
    expect([...failedKeys].filter((k) => byOccurrence.get(k)?.size !== 1)).toEqual([]);
    expect(failedKeys.size).toBeGreaterThanOrEqual(50);

    // E-mail: one distinct Message-ID per failed occurrence; the subject names the schedule.
    const mailsByOccurrence = new Map<string, Set<string>>();
    for (const m of mail.mails) {
      const occ = /occurrence: (\S+)/.exec(m.raw)?.[1] ?? '';
      mailsByOccurrence.set(occ, (mailsByOccurrence.get(occ) ?? new Set()).add(m.messageId));
      expect(m.subject).toContain('always-fails failed');
    }
    expect([...mailsByOccurrence.keys()].filter((k) => !failedKeys.has(k))).toEqual([]);
    expect([...failedKeys].filter((k) => mailsByOccurrence.get(k)?.size !== 1)).toEqual([]);

    // The figures of this run: kills, sends cut by a kill, messages re-sent (same id) after a take-over.
    const resentWebhook = hooks.on('/hook').length - webhookIds('failed').size;
    const resentMail = mail.mails.length - mailIds().size;
    console.log(
      `exactly-once: ${failedKeys.size} failed occurrences, ${kills} SIGKILLs, sends cut by a kill: webhook ${hooks.interrupted}, smtp ${mail.interrupted}; ` +
        `re-sent copies (same id): webhook ${resentWebhook}, smtp ${resentMail}`,
    );
    expect(kills).toBeGreaterThanOrEqual(12);
    expect(hooks.interrupted + mail.interrupted).toBeGreaterThanOrEqual(2);

    // Fixed: exactly one recovered on each channel, however many successes follow.
    hooks.status.set('/job', 200);
    await until(async () => (await flock.runs('always-fails')).filter((r) => r.state === 'succeeded').length >= 4, 30_000, 'four successes');
    await until(() => webhookIds('recovered').size >= 1 && mail.mails.some((m) => m.subject.includes('recovered')), 30_000, 'recovered messages');
    await sleep(3000);
    expect(webhookIds('recovered').size).toBe(1);
    expect(distinct(mail.mails.filter((m) => m.subject.includes('recovered')).map((m) => m.messageId)).size).toBe(1);
    const recovered = hooks.on('/hook').find((h) => h.body.event === 'recovered')!.body;
    expect(recovered).toMatchObject({ schedule: 'always-fails', state: 'succeeded', previousState: 'failed' });
    // Delivered entries leave the stream (and their delivery state with them): nothing is left behind.
    await until(async () => (await flock.redisClient.xlen('{cronflock}:outbox')) === 0, 10_000, 'an empty outbox');
    expect(await flock.redisClient.keys('{cronflock}:outbox:d:*')).toEqual([]);
  });
});
