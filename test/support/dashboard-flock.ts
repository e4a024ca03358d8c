/**
 * A flock for the dashboard's tests: a real redis-server, the HTTP receiver, two replica processes (lock 1 s),
 * and schedules that succeed, fail, run long (a module job that logs), plus fillers for paging. Job URLs and
 * headers carry secrets the API must never show.
 */
import { Flock } from './flock.js';

/** Secrets written into the schedule file: no answer of the API or the dashboard may contain them. */
export const SECRETS = ['url-secret-pass', 'query-secret-456', 'header-secret-value-123'];
/** Tokens of the token file the tests use. */
export const OPERATOR_TOKEN = 'operator-token-abcdefghijklmnop';
export const VIEWER_TOKEN = 'viewer-token-abcdefghijklmnopq';

const TALK = new URL('../fixtures/jobs/talk.mjs', import.meta.url).pathname;
export const FILLERS = 12;

/** Starts the flock; `ok-job` succeeds every 2 s, `fail-job` fails every 2 s, `talk-job` runs on trigger only. */
export async function startDashboardFlock(): Promise<Flock> {
  const flock = await Flock.start();
  flock.receiver.status.set('fail-job', 500);
  const [host, port] = flock.receiver.url.replace('http://', '').split(':');
  const fillers = Array.from({ length: FILLERS }, (_, i) => `  - {name: filler-${String(i).padStart(2, '0')}, cron: "0 0 1 1 *", job: {kind: http, url: "${flock.receiver.url}/filler"}}`).join('\n');
  const file = flock.writeSchedules(`schedules:
  - name: ok-job
    cron: "*/2 * * * * *"
    jitter: 1s
    timeout: 2s
    job:
      kind: http
      url: "http://user:url-secret-pass@${host}:${port}/ok?token=query-secret-456"
      headers: {X-Api-Key: header-secret-value-123}
  - name: fail-job
    cron: "*/2 * * * * *"
    timeout: 2s
    job: {kind: http, url: "${flock.receiver.url}/fail"}
  - name: talk-job
    cron: "0 0 1 1 *"
    job: {kind: module, path: ${TALK}, params: {firstMs: 20000}}
${fillers}
`);
  for (const name of ['r1', 'r2']) await flock.startReplica({ name, schedules: file, args: ['--lock', '1s'] });
  return flock;
}
