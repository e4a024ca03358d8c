/**
 * The http job in real replica processes: a 1.5 GiB answer (generated, not stored) does not grow the replica's
 * memory, a redirect to another origin receives neither the job's headers nor its body, invalid header values are
 * refused by validate without being shown, and a timeout fires on every attempt.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { Flock, until } from '../support/flock.js';
import { BIN, ROOT } from '../support/replica.js';

const GIB = 1024 * 1024 * 1024;

/** A process's peak resident memory in MiB (VmHWM from /proc). */
function peakRssMb(pid: number): number {
  return Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;
}

interface Seen {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
}

const servers: Server[] = [];
async function serve(handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<string> {
  const server = createServer(handler);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  servers.push(server);
  return `http://127.0.0.1:${(server.address() as { port: number }).port}`;
}

describe('http job in a replica', () => {
  let flock: Flock;
  afterEach(async () => {
    await flock?.close();
    for (const s of servers.splice(0)) {
      s.closeAllConnections();
      await new Promise((r) => s.close(r));
    }
  });

  it('reads a 1.5 GiB answer without holding it: the replica\'s peak RSS stays far below it', async () => {
    flock = await Flock.start();
    let sentBytes = 0;
    const chunk = Buffer.alloc(1024 * 1024, 'x');
    const url = await serve((req, res) => {
      req.resume();
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(1.5 * GIB) });
      let left = 1536;
      const write = (): void => {
        while (left > 0) {
          left--;
          sentBytes += chunk.length;
          if (!res.write(chunk)) return void res.once('drain', write);
        }
        res.end();
      };
      write();
    });
    const file = flock.writeSchedules(`schedules:
  - { name: huge, cron: "*/5 * * * * *", concurrencyPolicy: Forbid, job: { kind: http, url: ${url}/big, timeout: 2m } }
`);
    const r = await flock.startReplica({ name: 'big1', schedules: file });
    const before = peakRssMb(r.pid);
    await until(async () => (await flock.runs('huge')).some((x) => x.state === 'succeeded'), 150_000, 'a run that read the whole answer');
    expect(sentBytes).toBeGreaterThanOrEqual(1.5 * GIB);
    const after = peakRssMb(r.pid);
    // Reading the answer whole took a replica to 4.8 GB RSS.
    expect(after).toBeLessThan(before + 200);
    expect(after).toBeLessThan(500);
  }, 240_000);

  it('does not follow a redirect to another origin; with redirects: any, follows it without the headers and the body', async () => {
    flock = await Flock.start();
    const seenAtB: Seen[] = [];
    const b = await serve((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        seenAtB.push({ method: req.method!, url: req.url!, headers: req.headers, body });
        res.end('thanks');
      });
    });
    const a = await serve((req, res) => {
      req.resume();
      res.writeHead(req.url === '/temp' ? 307 : 302, { location: `${b}/steal${req.url}` });
      res.end();
    });
    const file = flock.writeSchedules(`schedules:
  - { name: stay, cron: "* * * * * *", job: { kind: http, url: ${a}/found, headers: { X-Api-Key: k-2718281828 } } }
  - { name: temp, cron: "* * * * * *", job: { kind: http, url: ${a}/temp, headers: { X-Api-Key: k-2718281828 }, redirects: any } }
  - { name: follow, cron: "* * * * * *", job: { kind: http, url: ${a}/found, headers: { X-Api-Key: k-2718281828 }, redirects: any } }
`);
    await flock.startReplica({ name: 'rd1', schedules: file });
    await until(async () => (await flock.runs('follow')).filter((x) => x.state === 'succeeded').length >= 2, 20_000, 'followed redirects');
    await until(async () => (await flock.runs('stay')).filter((x) => x.state === 'failed').length >= 2, 20_000, 'refused redirects');
    await until(async () => (await flock.runs('temp')).filter((x) => x.state === 'failed').length >= 2, 20_000, 'refused 307');
    for (const x of (await flock.runs('stay')).filter((y) => y.state === 'failed')) {
      expect(x.error).toBe(
        `answered 302, a redirect to another origin (${b}); not followed (redirects: same-origin): call that URL directly, or set redirects: any to follow it without the job's headers and body`,
      );
    }
    for (const x of (await flock.runs('temp')).filter((y) => y.state === 'failed')) expect(x.error).toContain('would re-send the request body; not followed');
    // B saw only the hops of `follow`: GETs without the key or the body.
    expect(seenAtB.length).toBeGreaterThanOrEqual(2);
    for (const s of seenAtB) {
      expect(s.url).toBe('/steal/found');
      expect(s.method).toBe('GET');
      expect(s.body).toBe('');
      expect(s.headers['x-api-key']).toBeUndefined();
    }
  });

  it('validate refuses header values HTTP cannot carry at file:line:col, and never prints them', async () => {
    flock = await Flock.start();
    const file = flock.writeSchedules(`schedules:
  - name: a
    cron: "@daily"
    job:
      kind: http
      url: http://127.0.0.1:9/x
      headers:
        X-Token: "tok-0451\\nX-Injected: 1"
        X-Pin: 90210451
        X-Zero: "z-0451\\0"
`);
    const r = spawnSync(process.execPath, [BIN, 'validate', file], { cwd: ROOT, encoding: 'utf8', timeout: 60_000 });
    expect(r.status).toBe(1);
    expect(r.stderr).toContain(`${file}:8:18: schedules[0].job.headers.X-Token: contains a line break; a header value is one line (the value is not shown here)`);
    expect(r.stderr).toContain(`${file}:9:16: schedules[0].job.headers.X-Pin: must be text (quote it); the value is not shown here`);
    expect(r.stderr).toContain(`${file}:10:17: schedules[0].job.headers.X-Zero: contains a NUL character (the value is not shown here)`);
    expect(r.stdout + r.stderr).not.toMatch(/0451|90210|Injected/);
  });

  it('times out every attempt against an endpoint that answers too late, in a replica busy collecting garbage', async () => {
    flock = await Flock.start();
    const names = ['late-a', 'late-b', 'late-c', 'late-d'];
    for (const n of names) flock.receiver.holdMs.set(n, 6000);
    const file = flock.writeSchedules(
      `schedules:\n${names.map((n) => `  - { name: ${n}, cron: "* * * * * *", job: { kind: http, url: ${flock.receiver.url}/${n}, timeout: 2s } }\n`).join('')}` +
        // Another job of the same replica makes garbage: AbortSignal.timeout combined with AbortSignal.any lost its
        // timer to the garbage collector (nodejs/node#57736) and let 1 in 5 such attempts succeed after 8 s.
        `  - { name: churn, cron: "* * * * * *", concurrencyPolicy: Forbid, job: { kind: module, path: ${ROOT}test/fixtures/modules/churn.mjs, isolation: none, params: { ms: 60000 } } }\n`,
    );
    await flock.startReplica({ name: 'to1', schedules: file });
    const finished = async () => (await flock.runs()).filter((x) => names.includes(x.schedule) && (x.state === 'failed' || x.state === 'succeeded'));
    await until(async () => (await finished()).length >= 60, 90_000, '60 finished attempts');
    const done = await finished();
    expect(done.filter((x) => x.state === 'succeeded')).toEqual([]);
    for (const x of done) {
      expect(x.error).toBe('timed out after 2000 ms');
      expect(x.endMs! - x.startMs!).toBeLessThan(4000);
    }
  });
});
