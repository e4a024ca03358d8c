/**
 * The example receiver (examples/receiver/server.mjs, importing the package's `cronflock/receiver` export) with
 * real calls of a flock: a schedule with `signing:` whose http job calls are relayed to the receiver process are
 * accepted; the receiver refuses a replay of one, a call with a bad signature, and a validly signed call whose
 * fencing token is lower than one it has seen for that occurrence (a stale claimant).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signatureHeaderValue, SIGNATURE_HEADER } from '../../receiver/index.js';
import { Flock, until } from '../support/flock.js';
import { HookServer } from '../support/hooks.js';
import { ROOT } from '../support/replica.js';

const KEY = 'receiver-example-key';

describe('examples/receiver/server.mjs', () => {
  let flock: Flock;
  let hooks: HookServer;
  let receiver: ChildProcess;
  let url = '';
  const lines: Record<string, unknown>[] = [];
  beforeAll(async () => {
    process.env.CRONFLOCK_TEST_SIGNING_KEY = KEY;
    [flock, hooks] = await Promise.all([Flock.start(), HookServer.start()]);
    receiver = spawn(process.execPath, ['examples/receiver/server.mjs'], { cwd: ROOT, env: { ...process.env, CRONFLOCK_SIGNING_KEY: KEY, PORT: '0' }, stdio: ['ignore', 'pipe', 'inherit'] });
    receiver.stdout!.on('data', (b: Buffer) => {
      for (const l of b.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(l) as Record<string, unknown>);
    });
    await until(() => lines.some((l) => 'listening' in l), 10_000, 'the receiver');
    url = `http://127.0.0.1:${String(lines.find((l) => 'listening' in l)!.listening)}/`;
  });
  afterAll(async () => {
    receiver?.kill('SIGTERM');
    await flock?.close();
    await hooks?.close();
  });

  const relay = async (raw: string, headers: Record<string, string>): Promise<number> =>
    (await fetch(url, { method: 'POST', body: raw, headers: { 'content-type': 'application/json', ...headers } })).status;

  it('accepts signed calls of a flock, refuses a replay, a bad signature and a stale fencing token', async () => {
    const file = flock.writeSchedules(`schedules:
  - name: signed
    cron: "* * * * * *"
    signing: {secretEnv: CRONFLOCK_TEST_SIGNING_KEY}
    job: {kind: http, url: ${hooks.url}/job, headers: {x-team: ops}}
`);
    await flock.startReplica({ name: 's1', schedules: file });
    await until(() => hooks.on('/job').length >= 3, 20_000, 'three calls');
    const calls = hooks.on('/job').slice(0, 3);
    for (const c of calls) expect(await relay(c.raw, { [SIGNATURE_HEADER]: String(c.headers[SIGNATURE_HEADER]) })).toBe(200);
    // The job's own headers go along with the signature (an x-cronflock-* header of the job is refused at load:
    // jobs/outbound-http.ts headerNameProblem).
    expect(calls.every((c) => String(c.headers[SIGNATURE_HEADER]).startsWith('t=') && c.headers['x-team'] === 'ops')).toBe(true);

    const first = calls[0]!;
    expect(await relay(first.raw, { [SIGNATURE_HEADER]: String(first.headers[SIGNATURE_HEADER]) })).toBe(409); // replay
    const tampered = first.raw.replace('"attempt":1', '"attempt":2');
    expect(await relay(tampered, { [SIGNATURE_HEADER]: String(first.headers[SIGNATURE_HEADER]) })).toBe(401); // bad signature
    expect(await relay(first.raw, { [SIGNATURE_HEADER]: signatureHeaderValue(['wrong-key'], first.raw) })).toBe(401);
    // A stale claimant: a valid signature, but a fencing token below the one the receiver has seen.
    const body = first.body as { fencingToken: number };
    const newer = JSON.stringify({ ...body, fencingToken: body.fencingToken + 5 });
    expect(await relay(newer, { [SIGNATURE_HEADER]: signatureHeaderValue([KEY], newer) })).toBe(200);
    const stale = JSON.stringify({ ...body, fencingToken: body.fencingToken + 4, attempt: 9 });
    expect(await relay(stale, { [SIGNATURE_HEADER]: signatureHeaderValue([KEY], stale) })).toBe(409);
    await until(() => lines.filter((l) => 'accepted' in l).length >= 8, 5_000, 'log lines');
    expect(lines.filter((l) => l.accepted === false).map((l) => l.reason)).toEqual(['replayed', 'mismatch', 'mismatch', 'stale-fencing-token']);
  });
});
