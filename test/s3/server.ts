/**
 * A real S3-compatible server for tests: moto's standalone server (`moto_server`, installed by
 * test/s3/build.sh into ${CRONFLOCK_CACHE:-~/.cache/cronflock}/s3-moto-<version>/) as a child process on a free
 * loopback port. One per test file: `const s3 = await startS3Server()` in beforeAll, `await s3.stop()` in
 * afterAll. It keeps everything in memory and accepts any credentials; buckets are made with `createBucket`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';

/** moto version test/s3/build.sh installs (CRONFLOCK_MOTO_VERSION overrides both). */
export const MOTO_VERSION = process.env.CRONFLOCK_MOTO_VERSION ?? '5.2.5';

/** Directory of the installed server. */
export function motoDir(): string {
  return path.join(process.env.CRONFLOCK_CACHE ?? path.join(os.homedir(), '.cache', 'cronflock'), `s3-moto-${MOTO_VERSION}`);
}

/** A running server. */
export interface S3Server {
  /** e.g. `http://127.0.0.1:41234`. */
  endpoint: string;
  region: string;
  accessKeyId: string;
  secretAccessKey: string;
  /** A client for the server (path-style). */
  client: S3Client;
  /** Creates a bucket. */
  createBucket(name: string): Promise<void>;
  /** Stops the server (SIGTERM, then SIGKILL after 5 s). */
  stop(): Promise<void>;
  /** The server's output so far (for failure messages). */
  output(): string;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

async function waitReady(endpoint: string, child: ChildProcess, out: () => string, timeoutMs: number): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    if (child.exitCode !== null) throw new Error(`moto_server exited with ${child.exitCode}:\n${out()}`);
    try {
      const r = await fetch(`${endpoint}/moto-api/`, { signal: AbortSignal.timeout(1000) });
      if (r.status < 500) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`moto_server did not answer on ${endpoint} within ${timeoutMs} ms:\n${out()}`);
}

/** Starts a server. Throws with the build command when the server is not installed. */
export async function startS3Server(): Promise<S3Server> {
  const bin = path.join(motoDir(), 'bin', 'moto_server');
  if (!fs.existsSync(bin)) throw new Error(`the S3 tests need moto's server in ${motoDir()}; install it once with: bash test/s3/build.sh`);
  const port = await freePort();
  const endpoint = `http://127.0.0.1:${port}`;
  let log = '';
  const child = spawn(bin, ['-H', '127.0.0.1', '-p', String(port)], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, MOTO_ALLOW_NONEXISTENT_REGION: 'true' } });
  const keep = (b: Buffer): void => {
    log = (log + b.toString('utf8')).slice(-20_000);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  await waitReady(endpoint, child, () => log, 30_000);
  const creds = { region: 'us-east-1', accessKeyId: 'testing', secretAccessKey: 'testing' };
  const client = new S3Client({ endpoint, region: creds.region, forcePathStyle: true, credentials: { accessKeyId: creds.accessKeyId, secretAccessKey: creds.secretAccessKey } });
  return {
    endpoint,
    ...creds,
    client,
    async createBucket(name) {
      await client.send(new CreateBucketCommand({ Bucket: name }));
    },
    async stop() {
      client.destroy();
      if (child.exitCode !== null) return;
      child.kill('SIGTERM');
      const t = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(t);
    },
    output: () => log,
  };
}
