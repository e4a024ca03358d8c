/**
 * A real Kubernetes control plane for tests, the way controller authors use envtest: etcd and kube-apiserver
 * (built by test/k8s/build.sh, cached in ~/.cache/cronflock/k8s-<version>/) on free loopback ports with a
 * temporary data directory. No controller-manager and no scheduler: nothing acts on objects by itself, so a
 * test sets the status it needs through the status subresource (see fixtures.ts).
 *
 * The apiserver runs with `--authorization-mode=RBAC`, a static token file with two users, service-account
 * signing keys (so `TokenRequest` mints tokens), its self-signed serving certificate, and API Priority and
 * Fairness on (the default). Each user gets a kubeconfig file:
 * - `admin`: user `cronflock-admin` in group `system:masters` (every permission, exempt from APF).
 * - `restricted`: user `cronflock-restricted` with no group of its own: only what RBAC's defaults give every
 *   authenticated user (discovery, SelfSubjectAccessReview/-RulesReview/-Review).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import https from 'node:https';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { stringify as toYaml } from 'yaml';

/** Kubernetes release the tests run; build.sh builds the same (CRONFLOCK_K8S_VERSION overrides both). */
export const K8S_VERSION = process.env.CRONFLOCK_K8S_VERSION ?? 'v1.37.2';

/** One user of the control plane. */
export interface ControlPlaneUser {
  /** User name the apiserver authenticates the token as. */
  name: string;
  /** Bearer token (static token file). */
  token: string;
  /** A kubeconfig file for this user (context `cronflock-test`, namespace `default`). */
  kubeconfig: string;
}

/** What a running control plane offers to tests (serialisable: passed from global setup via `provide`). */
export interface ControlPlaneInfo {
  /** Kubernetes version of the binaries, e.g. `v1.37.2`. */
  version: string;
  /** API server URL, e.g. `https://127.0.0.1:41234`. */
  server: string;
  /** The apiserver's self-signed serving certificate chain, to trust as CA (PEM file). */
  caFile: string;
  /** etcd's client URL (`http://127.0.0.1:<port>`), for tests that need to act on storage (compaction). */
  etcdUrl: string;
  /** Temporary directory holding data, keys, kubeconfigs and logs (`etcd.log`, `kube-apiserver.log`). */
  dir: string;
  users: { admin: ControlPlaneUser; restricted: ControlPlaneUser };
}

/** A started control plane; {@link ControlPlane.stop} ends both processes and removes the directory. */
export interface ControlPlane extends ControlPlaneInfo {
  stop(): Promise<void>;
}

/** Options of {@link startControlPlane}. */
export interface StartOptions {
  /** Directory of the `etcd` and `kube-apiserver` binaries; default the build.sh cache for {@link K8S_VERSION}. */
  binDir?: string;
  /** Extra kube-apiserver flags (`--name=value`). */
  apiserverFlags?: string[];
  /** Keep the temporary directory after stop (for debugging); default from CRONFLOCK_K8S_KEEP=1. */
  keepDir?: boolean;
  /** How long to wait for readiness, in ms; default 120 000. */
  readyTimeoutMs?: number;
}

/** Where build.sh caches the binaries for `version`. */
export function binDirFor(version = K8S_VERSION): string {
  const cache = process.env.CRONFLOCK_CACHE ?? path.join(os.homedir(), '.cache', 'cronflock');
  return path.join(cache, `k8s-${version}`);
}

/** Path of test/k8s/build.sh. */
export const BUILD_SCRIPT = path.join(path.dirname(fileURLToPath(import.meta.url)), 'build.sh');

/**
 * Starts etcd, then kube-apiserver, waits for `/readyz`, writes a kubeconfig per user. Throws with the tail of
 * the process logs when a binary is missing (run test/k8s/build.sh), a process exits, or readiness times out.
 */
export async function startControlPlane(options: StartOptions = {}): Promise<ControlPlane> {
  const binDir = options.binDir ?? binDirFor();
  const etcdBin = path.join(binDir, 'etcd');
  const apiserverBin = path.join(binDir, 'kube-apiserver');
  for (const bin of [etcdBin, apiserverBin]) {
    if (!fs.existsSync(bin)) throw new Error(`${bin} is missing: run bash test/k8s/build.sh (it caches the binaries)`);
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cronflock-k8s-'));
  const keepDir = options.keepDir ?? process.env.CRONFLOCK_K8S_KEEP === '1';
  const procs: ChildProcess[] = [];
  const stop = async (): Promise<void> => {
    for (const p of [...procs].reverse()) await stopProcess(p);
    if (!keepDir) fs.rmSync(dir, { recursive: true, force: true });
  };
  try {
    // ---- etcd
    const [etcdPort, peerPort, apiPort] = await freePorts(3);
    const etcdUrl = `http://127.0.0.1:${etcdPort}`;
    const peerUrl = `http://127.0.0.1:${peerPort}`;
    procs.push(
      launch(etcdBin, [
        '--name=cronflock-test',
        `--data-dir=${path.join(dir, 'etcd')}`,
        `--listen-client-urls=${etcdUrl}`,
        `--advertise-client-urls=${etcdUrl}`,
        `--listen-peer-urls=${peerUrl}`,
        `--initial-advertise-peer-urls=${peerUrl}`,
        `--initial-cluster=cronflock-test=${peerUrl}`,
        '--unsafe-no-fsync', // test data: skip fsync, as envtest does
        '--log-level=warn',
      ], path.join(dir, 'etcd.log')),
    );
    await waitFor(`etcd at ${etcdUrl}`, 30_000, procs, dir, async () => {
      const r = await fetch(`${etcdUrl}/health`).catch(() => undefined);
      return r?.ok === true;
    });

    // ---- credentials
    const adminToken = randomBytes(24).toString('hex');
    const restrictedToken = randomBytes(24).toString('hex');
    const tokenFile = path.join(dir, 'tokens.csv');
    fs.writeFileSync(
      tokenFile,
      `${adminToken},cronflock-admin,uid-admin,"system:masters"\n${restrictedToken},cronflock-restricted,uid-restricted\n`,
      { mode: 0o600 },
    );
    const { privateKey, publicKey } = generateKeyPairSync('rsa', {
      modulusLength: 2048,
      publicKeyEncoding: { type: 'spki', format: 'pem' },
      privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
    });
    const saKey = path.join(dir, 'sa.key');
    const saPub = path.join(dir, 'sa.pub');
    fs.writeFileSync(saKey, privateKey, { mode: 0o600 });
    fs.writeFileSync(saPub, publicKey);
    const certDir = path.join(dir, 'certs');

    // ---- kube-apiserver
    procs.push(
      launch(apiserverBin, [
        `--etcd-servers=${etcdUrl}`,
        '--bind-address=127.0.0.1',
        '--advertise-address=127.0.0.1',
        `--secure-port=${apiPort}`,
        `--cert-dir=${certDir}`, // self-signed serving cert, generated at start
        `--token-auth-file=${tokenFile}`,
        '--authorization-mode=RBAC',
        `--service-account-key-file=${saPub}`,
        `--service-account-signing-key-file=${saKey}`,
        '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
        '--service-cluster-ip-range=10.0.0.0/24',
        '--endpoint-reconciler-type=none', // no Endpoints for a loopback advertise address
        '--profiling=false',
        ...(options.apiserverFlags ?? []),
      ], path.join(dir, 'kube-apiserver.log')),
    );
    const server = `https://127.0.0.1:${apiPort}`;
    const caFile = path.join(certDir, 'apiserver.crt');
    await waitFor(`kube-apiserver /readyz at ${server}`, options.readyTimeoutMs ?? 120_000, procs, dir, async () => {
      if (!fs.existsSync(caFile)) return false;
      const r = await get(`${server}/readyz`, fs.readFileSync(caFile), adminToken).catch(() => undefined);
      return r?.status === 200;
    });

    const users = {
      admin: user(dir, 'admin', 'cronflock-admin', adminToken, server, caFile),
      restricted: user(dir, 'restricted', 'cronflock-restricted', restrictedToken, server, caFile),
    };
    return { version: K8S_VERSION, server, caFile, etcdUrl, dir, users, stop };
  } catch (e) {
    await stop();
    throw e;
  }
}

/**
 * Writes a kubeconfig for a bearer `token` at `file` (cluster `server`, CA `caFile`, context `cronflock-test`,
 * namespace `namespace`, default `default`). Returns `file`.
 */
export function writeKubeconfig(file: string, server: string, caFile: string, token: string, namespace = 'default'): string {
  const doc = {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'cronflock-test', cluster: { server, 'certificate-authority': caFile } }],
    users: [{ name: 'cronflock-test-user', user: { token } }],
    contexts: [{ name: 'cronflock-test', context: { cluster: 'cronflock-test', user: 'cronflock-test-user', namespace } }],
    'current-context': 'cronflock-test',
  };
  fs.writeFileSync(file, toYaml(doc), { mode: 0o600 });
  return file;
}

function user(dir: string, key: string, name: string, token: string, server: string, caFile: string): ControlPlaneUser {
  return { name, token, kubeconfig: writeKubeconfig(path.join(dir, `${key}.kubeconfig`), server, caFile, token) };
}

function launch(bin: string, args: string[], logFile: string): ChildProcess {
  const log = fs.openSync(logFile, 'a');
  const child = spawn(bin, args, { stdio: ['ignore', log, log], detached: false });
  fs.closeSync(log);
  child.on('error', () => undefined); // reported through waitFor's exit check
  // Lowest CPU priority: idle, the pair costs ~4% of a core, and other suites' timing tests may share the
  // machine (vitest keeps the control plane up until the whole run ends).
  if (child.pid !== undefined) {
    try {
      os.setPriority(child.pid, 19);
    } catch {
      // not permitted: run at normal priority
    }
  }
  // If the test process dies without teardown, do not leave etcd/kube-apiserver running.
  const kill = (): void => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  };
  process.once('exit', kill);
  child.once('exit', () => process.removeListener('exit', kill));
  return child;
}

async function stopProcess(p: ChildProcess): Promise<void> {
  if (p.exitCode !== null || p.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => p.once('exit', () => resolve()));
  p.kill('SIGTERM');
  const timer = setTimeout(() => p.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(timer);
}

async function waitFor(
  what: string,
  timeoutMs: number,
  procs: ChildProcess[],
  dir: string,
  ready: () => Promise<boolean>,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const dead = procs.find((p) => p.exitCode !== null || p.signalCode !== null);
    if (dead) throw new Error(`${path.basename(dead.spawnfile)} exited (${dead.exitCode ?? dead.signalCode}) while waiting for ${what}\n${logTails(dir)}`);
    if (await ready()) return;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}\n${logTails(dir)}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

function logTails(dir: string): string {
  return ['etcd.log', 'kube-apiserver.log']
    .map((f) => path.join(dir, f))
    .filter((f) => fs.existsSync(f))
    .map((f) => `--- ${path.basename(f)} (last lines)\n${fs.readFileSync(f, 'utf8').split('\n').slice(-25).join('\n')}`)
    .join('\n');
}

function get(url: string, ca: Buffer, token: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = https.get(url, { ca, headers: { Authorization: `Bearer ${token}` }, timeout: 5000 }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
  });
}

/** `n` distinct free TCP ports on 127.0.0.1 (held open together while choosing, then released). */
export async function freePorts(n: number): Promise<number[]> {
  const servers = await Promise.all(
    Array.from({ length: n }, () => new Promise<net.Server>((resolve, reject) => {
      const s = net.createServer();
      s.once('error', reject);
      s.listen(0, '127.0.0.1', () => resolve(s));
    })),
  );
  const ports = servers.map((s) => (s.address() as net.AddressInfo).port);
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
  return ports;
}
