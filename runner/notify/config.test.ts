/**
 * The schedule-level notify:, heartbeat: and signing: blocks at load: the example shape validates and
 * compiles; a secret's missing environment variable or file refuses the file with file:line:col; signing is
 * refused for kinds other than http; cleanup's job-level notify is read as notify: with a DEPRECATED warning.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseScheduleText } from '../config/load.js';

const HEAD = `schedules:
  - name: nightly-export
    cron: "0 2 * * *"
`;
let dir: string;
beforeAll(() => {
  process.env.CF_TEST_HOOK_KEY = 'k';
  process.env.CF_TEST_PD_KEY = 'pd';
  delete process.env.CF_TEST_UNSET;
  dir = mkdtempSync(join(tmpdir(), 'cf-notify-'));
  writeFileSync(join(dir, 'key'), 'from-file\n');
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const errorsOf = async (yaml: string): Promise<string[]> => (await parseScheduleText(yaml, 'f.yaml')).errors.map((e) => e.format().split('\n')[0]!);

describe('notify, heartbeat and signing at load', () => {
  it('accepts the documented shape and compiles it with units and secret references, never values', async () => {
    const r = await parseScheduleText(
      `${HEAD}    notify:
      on: [failed, missed, recovered]
      webhook: {url: https://hooks.example/cron, secretEnv: CF_TEST_HOOK_KEY}
      slack: {webhookUrl: https://hooks.slack.com/services/T/B/X}
      teams: {webhookUrlFile: ${join(dir, 'key')}}
      pagerduty: {routingKeyEnv: CF_TEST_PD_KEY}
      email: {to: [ops@example.org], smtp: {url: "smtp://mail:587"}}
    heartbeat: {url: https://monitor.example/ping/abc, on: [start, success, fail]}
    job: {kind: http, url: http://x/}
`,
      'f.yaml',
    );
    expect(r.errors).toEqual([]);
    const s = r.schedules[0]!;
    expect(s.notify).toMatchObject({
      on: ['failed', 'missed', 'recovered'],
      timeoutMs: 10_000,
      rateLimit: { max: 5, perMs: 3_600_000 },
      webhook: { url: 'https://hooks.example/cron', keys: [{ env: 'CF_TEST_HOOK_KEY' }] },
      slack: { url: { value: 'https://hooks.slack.com/services/T/B/X' } },
      teams: { url: { file: join(dir, 'key') } },
      pagerduty: { routingKey: { env: 'CF_TEST_PD_KEY' }, eventsUrl: 'https://events.pagerduty.com/v2/enqueue', severity: 'error' },
      email: { to: ['ops@example.org'], smtp: { url: 'smtp://mail:587' } },
    });
    expect(s.heartbeat).toMatchObject({ url: { value: 'https://monitor.example/ping/abc' }, on: ['start', 'success', 'fail'], method: 'POST' });
    expect(JSON.stringify(s)).not.toContain('"k"');
  });

  it('refuses a missing environment variable, a missing secret file, and a channel-less block, with positions', async () => {
    expect(
      await errorsOf(`${HEAD}    notify:
      webhook: {url: https://h.example/, secretEnv: CF_TEST_UNSET}
      pagerduty: {routingKeyFile: ${join(dir, 'nope')}}
    job: {kind: http, url: http://x/}
`),
    ).toEqual([
      'f.yaml:5:53: schedules[0].notify.webhook.secretEnv: environment variable CF_TEST_UNSET is not set (or empty) here; every replica needs it: set it (e.g. from a Kubernetes Secret) or name a file with secretFile',
      `f.yaml:6:35: schedules[0].notify.pagerduty.routingKeyFile: ${join(dir, 'nope')} does not exist; every replica needs it (e.g. a mounted Secret)`,
    ]);
    expect(await errorsOf(`${HEAD}    notify: {on: [failed]}\n    job: {kind: http, url: http://x/}\n`)).toEqual([
      'f.yaml:4:13: schedules[0].notify: names no channel: add webhook, slack, teams, pagerduty or email',
    ]);
    expect(await errorsOf(`${HEAD}    notify: {on: [fialed], email: {to: [a@b.example], smtp: {url: "smtp://u:pw@mail:25"}}}\n    job: {kind: http, url: http://x/}\n`)).toEqual([
      'f.yaml:4:19: schedules[0].notify.on[0]: Invalid option: expected one of "failed"|"missed"|"skipped"|"recovered"|"succeeded"',
      'f.yaml:4:67: schedules[0].notify.email.smtp.url: must not carry a password: use passwordEnv or passwordFile',
    ]);
    expect(await errorsOf(`${HEAD}    heartbeat: {url: https://m.example/p, urlEnv: CF_TEST_HOOK_KEY}\n    job: {kind: http, url: http://x/}\n`)).toEqual([
      'f.yaml:4:51: schedules[0].heartbeat.urlEnv: give the ping URL once: url and urlEnv are both set',
    ]);
  });

  it("refuses webhook headers as the http job does: cronflock's own names, bad names and values that HTTP cannot carry", async () => {
    const errs = await errorsOf(`${HEAD}    notify:
      webhook: {url: https://h.example/, headers: {X-Cronflock-Signature: forged, "bad name": x, x-ok: "line\\nbreak"}}
    job: {kind: http, url: http://x/}
`);
    expect(errs).toHaveLength(3);
    expect(errs[0]).toContain('schedules[0].notify.webhook.headers.X-Cronflock-Signature: is reserved: cronflock sets the x-cronflock-* headers itself');
    expect(errs[1]).toContain('schedules[0].notify.webhook.headers.bad name: is not a valid HTTP header name');
    expect(errs[2]).toContain('schedules[0].notify.webhook.headers.x-ok: contains a line break');
    expect(errs.join('\n')).not.toContain('forged');
  });

  it('signs only http jobs', async () => {
    expect(await errorsOf(`${HEAD}    signing: {secretEnv: CF_TEST_HOOK_KEY}\n    job: {kind: http, url: http://x/}\n`)).toEqual([]);
    const errs = await errorsOf(`${HEAD}    signing: {secretEnv: CF_TEST_HOOK_KEY}\n    job: {kind: module, path: ./nope.ts}\n`);
    expect(errs.some((e) => e.includes("schedules[0].signing: signs an http job's request body; this schedule's job is kind module"))).toBe(true);
  });

  it("reads cleanup's job-level notify as notify:, with a DEPRECATED warning; refuses both at once", async () => {
    const job = `    job:
      kind: cleanup
      resources: [{apiVersion: v1, kind: ConfigMap}]
      notify: {on: failure, webhook: {url: https://h.example/, secretEnv: CF_TEST_HOOK_KEY}, slack: {webhookUrl: https://s.example/x}}
`;
    const r = await parseScheduleText(`${HEAD}${job}`, 'f.yaml');
    expect(r.errors).toEqual([]);
    expect(r.schedules[0]!.notify).toMatchObject({ on: ['failed'], webhook: { keys: [{ env: 'CF_TEST_HOOK_KEY' }] }, slack: { url: { value: 'https://s.example/x' } } });
    expect(r.warnings?.map((w) => `${w.code} ${w.line}:${w.col} ${w.field}`)).toEqual(['DEPRECATED 7:15 schedules[0].job.notify']);
    const both = await errorsOf(`${HEAD}    notify: {slack: {webhookUrl: https://s.example/y}}\n${job}`);
    expect(both.some((e) => e.includes('schedules[0].job.notify: the schedule has notify: too'))).toBe(true);
    const unset = await errorsOf(`${HEAD}${job.replace('CF_TEST_HOOK_KEY', 'CF_TEST_UNSET')}`);
    expect(unset.some((e) => e.includes('schedules[0].job.notify.webhook.secretEnv: environment variable CF_TEST_UNSET is not set'))).toBe(true);
  });
});
