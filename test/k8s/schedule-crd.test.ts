/**
 * The committed Schedule CRD (k8s/crds/schedules.cronflock.io.yaml) on the real kube-apiserver: it is
 * accepted; `kubectl apply` (a create with strict field validation, as kubectl sends it) refuses bad specs at admission naming the
 * field; and it never refuses a schedule the loader accepts (every schedule of the repository's example files,
 * applied as a Schedule).
 */
import { readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import type { KubeClient } from '../../k8s/index.js';
import { loadSchedules } from '../../runner/config/load.js';
import { ROOT } from '../support/replica.js';
import { clientFor, testNamespace } from './harness.js';
import { installScheduleCrd, refusal, schedule } from './schedule-support.js';

let admin: KubeClient;
let ns: string;
beforeAll(async () => {
  admin = clientFor('admin');
  await installScheduleCrd(admin);
  ns = await testNamespace(admin, 'crd');
});

const http = { kind: 'http', url: 'http://127.0.0.1:1/hook' };
const ok = { cron: '*/2 * * * * *', job: http };

describe('Schedule CRD admission', () => {
  it('accepts a valid Schedule and fills in the defaults the loader would apply', async () => {
    expect(await refusal(admin, schedule(ns, 'fine', { ...ok, jitter: '500ms', startingDeadline: '1h30m' }))).toBeUndefined();
  });

  const bad: [string, Record<string, unknown>, RegExp][] = [
    ['an unknown concurrency policy', { ...ok, concurrencyPolicy: 'Sometimes' }, /spec\.concurrencyPolicy: Unsupported value: "Sometimes"/],
    ['a missing cron', { job: http }, /spec\.cron: Required value/],
    ['a bad duration', { ...ok, jitter: '5x' }, /spec\.jitter: Invalid value: "5x": must be a duration/],
    ['a duration with units out of order', { ...ok, timeout: '30s1m' }, /spec\.timeout: Invalid value: "30s1m": must be a duration/],
    ['a CRON_TZ= prefix', { ...ok, cron: 'CRON_TZ=Europe/Berlin 0 3 * * *' }, /spec\.cron: Invalid value: .*CRON_TZ= or TZ= prefix is not supported/],
    ['a cron with 3 fields', { ...ok, cron: '* * *' }, /spec\.cron: Invalid value: .*must have 5 fields/],
    ['@reboot', { ...ok, cron: '@reboot' }, /spec\.cron: Invalid value: .*@reboot has no due time/],
    ['an unknown job kind', { ...ok, job: { kind: 'nope' } }, /spec\.job\.kind: Unsupported value: "nope"/],
    ['an http job without url', { ...ok, job: { kind: 'http' } }, /spec\.job\.url: Required value: is required with kind: http/],
    ['a field of another job kind', { ...ok, job: { ...http, path: './x.ts' } }, /spec\.job: Forbidden: kind: http takes only the fields kind, url/],
    ['an unknown field', { ...ok, cronn: '* * * * *' }, /strict decoding error: unknown field "spec\.cronn"/],
    ['maxCatchUpRuns without catchUp: all', { ...ok, maxCatchUpRuns: 3 }, /spec\.maxCatchUpRuns: Invalid value: .*only applies with catchUp: all/],
    ['maxConcurrent with Forbid', { ...ok, concurrencyPolicy: 'Forbid', maxConcurrent: 2 }, /spec\.maxConcurrent: Invalid value: .*only applies with concurrencyPolicy: Allow/],
    ['negative retries', { ...ok, retries: -1 }, /spec\.retries: Invalid value: -1: spec\.retries in body should be greater than or equal to 0/],
    ['a string for a boolean', { ...ok, suspend: 'yes' }, /spec\.suspend: Invalid value: "string": spec\.suspend in body must be of type boolean/],
    ['an http method that does not exist', { ...ok, job: { ...http, method: 'FETCH' } }, /spec\.job\.method: Unsupported value: "FETCH"/],
  ];
  for (const [what, spec, message] of bad) {
    it(`refuses ${what}, naming the field`, async () => {
      expect(await refusal(admin, schedule(ns, 'bad', spec))).toMatch(message);
    });
  }

  it('refuses a name that is not a DNS-1123 label of at most 63 characters (it is the schedule name)', async () => {
    expect(await refusal(admin, schedule(ns, 'a.b', ok))).toMatch(/metadata\.name: Invalid value: "a\.b"/);
    expect(await refusal(admin, schedule(ns, 'x'.repeat(64), ok))).toMatch(/metadata\.name: Too long/);
  });

  it('accepts every schedule the loader accepts in the repository\'s example files', async () => {
    const files = ['examples/schedules.yaml', 'examples/compose/schedules.yaml', 'examples/kubernetes/backup.yaml', 'test/fixtures/config/example.yaml'];
    let checked = 0;
    for (const f of files) {
      const loaded = await loadSchedules(`${ROOT}${f}`);
      expect(loaded.errors, f).toEqual([]);
      const raw = parse(readFileSync(`${ROOT}${f}`, 'utf8')) as { schedules: ({ name: string } & Record<string, unknown>)[] };
      for (const { name, ...spec } of raw.schedules) {
        expect(await refusal(admin, schedule(ns, name, spec)), `${f}: ${name}`).toBeUndefined();
        checked++;
      }
    }
    expect(checked).toBeGreaterThanOrEqual(8);
  });
});
