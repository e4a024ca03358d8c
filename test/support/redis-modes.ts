/**
 * Real Redis topologies for tests: a server with AUTH (requirepass and an ACL user), a TLS server with
 * certificates generated here by the openssl CLI (client certificates required), a 3-master Redis Cluster made
 * by `redis-cli --cluster create`, and a master watched by `redis-sentinel`, each with passwords. Every
 * process started here is stopped by {@link RedisTopology.close}.
 */
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis, type RedisOptions } from 'ioredis';
import { freePort } from '../../runner/redis/server-process.js';

/** A running topology: the URL and CLI flags a replica needs, and the processes behind them. */
export interface RedisTopology {
  /** The URL to give `--redis`. */
  url: string;
  /** Extra CLI flags (TLS files). */
  cliArgs: string[];
  /** Secrets that must never show up in a log line or error. */
  secrets: string[];
  /** redis-server processes holding data, by port. */
  dataNodes: RedisProc[];
  /** Opens a client on data node `i` (authenticated, TLS as needed). */
  client(i?: number): Redis;
  close(): Promise<void>;
}

/** Arguments every test server gets: loopback only, no persistence, the policy cronflock requires. */
const BASE = ['--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--maxmemory-policy', 'noeviction'];

/** One redis-server or redis-sentinel child process. */
export class RedisProc {
  private stderr = '';
  private stdout = '';
  private constructor(
    readonly port: number,
    readonly child: ChildProcess,
  ) {
    child.stderr?.on('data', (b: Buffer) => (this.stderr += b.toString()));
    child.stdout?.on('data', (b: Buffer) => (this.stdout += b.toString()));
  }

  /**
   * Spawns `bin args` and waits until a client with `probe` options gets PONG (or `ready` holds).
   * @throws with the server's output when it exits or does not answer within 15 s.
   */
  static async start(
    bin: string,
    args: string[],
    port: number,
    probe: RedisOptions,
    ready: (c: Redis) => Promise<boolean> = async (c) => (await c.ping()) === 'PONG',
  ): Promise<RedisProc> {
    const p = new RedisProc(port, spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'] }));
    const deadline = Date.now() + 15_000;
    for (;;) {
      if (p.child.exitCode !== null) throw new Error(`${bin} exited with ${p.child.exitCode}: ${p.output}`);
      const c = new Redis({ host: '127.0.0.1', port, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, ...probe });
      c.on('error', () => undefined);
      try {
        await c.connect();
        if (await ready(c)) return p;
      } catch {
        /* not up yet */
      } finally {
        c.disconnect();
      }
      if (Date.now() > deadline) {
        await p.stop();
        throw new Error(`${bin} on port ${port} did not become ready: ${p.output}`);
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  get output(): string {
    return `${this.stdout}${this.stderr}`.trim().slice(-2000);
  }

  async stop(): Promise<void> {
    const c = this.child;
    if (c.exitCode !== null || c.signalCode !== null) return;
    const exited = new Promise((r) => c.once('exit', r));
    c.kill('SIGKILL');
    await exited;
  }
}

const canListen = (port: number): Promise<boolean> =>
  new Promise((resolve) => {
    const s = createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });

/** A free port whose cluster bus port (+10000) is free too. */
async function freeClusterPort(): Promise<number> {
  for (let i = 0; i < 50; i++) {
    const p = await freePort();
    if (p + 10000 <= 65535 && (await canListen(p + 10000))) return p;
    const q = 20000 + Math.floor(Math.random() * 30000);
    if ((await canListen(q)) && (await canListen(q + 10000))) return q;
  }
  throw new Error('no free port pair for a cluster node');
}

function tmp(): string {
  return mkdtempSync(join(tmpdir(), 'cronflock-redis-mode-'));
}

function topology(
  o: Omit<RedisTopology, 'close' | 'client'> & { probe: RedisOptions; procs: RedisProc[]; dir: string },
): RedisTopology {
  const clients: Redis[] = [];
  return {
    url: o.url,
    cliArgs: o.cliArgs,
    secrets: o.secrets,
    dataNodes: o.dataNodes,
    client(i = 0) {
      const c = new Redis({ host: '127.0.0.1', port: o.dataNodes[i]!.port, maxRetriesPerRequest: 2, ...o.probe });
      c.on('error', () => undefined);
      clients.push(c);
      return c;
    },
    async close() {
      for (const c of clients) c.disconnect();
      await Promise.all(o.procs.map((p) => p.stop()));
      rmSync(o.dir, { recursive: true, force: true });
    },
  };
}

/**
 * A primary redis-server and one replica of it (`--replicaof`), no Sentinel: `dataNodes[0]` is the primary (the
 * URL), `dataNodes[1]` the replica, ready once its link to the primary is up.
 */
export async function startPrimaryWithReplica(): Promise<RedisTopology> {
  const dir = tmp();
  const procs: RedisProc[] = [];
  try {
    const mport = await freePort();
    procs.push(await RedisProc.start('redis-server', [...BASE, '--port', String(mport), '--dir', dir], mport, {}));
    const rport = await freePort();
    const rdir = join(dir, 'replica');
    mkdirSync(rdir);
    procs.push(
      await RedisProc.start('redis-server', [...BASE, '--port', String(rport), '--dir', rdir, '--replicaof', '127.0.0.1', String(mport)], rport, {}, async (c) =>
        /master_link_status:up/.test(await c.info('replication')),
      ),
    );
    return topology({ url: `redis://127.0.0.1:${mport}`, cliArgs: [], secrets: [], dataNodes: procs, probe: {}, procs, dir });
  } catch (err) {
    await Promise.all(procs.map((p) => p.stop()));
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
}

/** One redis-server with `requirepass` and an ACL user `cronflock`; the URL logs in as that user. */
export async function startAuthRedis(): Promise<RedisTopology> {
  const dir = tmp();
  const port = await freePort();
  const password = `pw-${Math.random().toString(36).slice(2)}`;
  const userPass = `up-${Math.random().toString(36).slice(2)}`;
  const args = [...BASE, '--port', String(port), '--dir', dir, '--requirepass', password, '--user', 'cronflock', 'on', `>${userPass}`, '~*', '&*', '+@all'];
  const probe: RedisOptions = { password };
  const proc = await RedisProc.start('redis-server', args, port, probe);
  return topology({
    url: `redis://cronflock:${encodeURIComponent(userPass)}@127.0.0.1:${port}/0`,
    cliArgs: [],
    secrets: [password, userPass],
    dataNodes: [proc],
    probe,
    procs: [proc],
    dir,
  });
}

/** TLS material made by the openssl CLI: a CA, a server certificate for 127.0.0.1, and a client certificate. */
export interface TestCerts {
  ca: string;
  serverCert: string;
  serverKey: string;
  clientCert: string;
  clientKey: string;
}

/** True when the `openssl` CLI can be run. */
export function opensslAvailable(): boolean {
  return spawnSync('openssl', ['version'], { stdio: 'ignore' }).status === 0;
}

/** Generates a throw-away CA and certificates (P-256, valid 2 days) into `dir`. */
export function generateCerts(dir: string): TestCerts {
  const f = (n: string): string => join(dir, n);
  const ossl = (...args: string[]): void => {
    execFileSync('openssl', args, { stdio: ['ignore', 'ignore', 'pipe'] });
  };
  const key = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  ossl('req', '-x509', '-new', ...key, '-keyout', f('ca.key'), '-out', f('ca.crt'), '-days', '2', '-subj', '/CN=cronflock test CA');
  // serverAuth and clientAuth: a cluster node presents its certificate to the other nodes too (tls-cluster).
  writeFileSync(f('server.ext'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n');
  writeFileSync(f('client.ext'), 'extendedKeyUsage=clientAuth\n');
  for (const who of ['server', 'client']) {
    ossl('req', '-new', ...key, '-keyout', f(`${who}.key`), '-out', f(`${who}.csr`), '-subj', `/CN=cronflock test ${who}`);
    ossl(
      'x509', '-req', '-in', f(`${who}.csr`), '-CA', f('ca.crt'), '-CAkey', f('ca.key'), '-CAcreateserial',
      '-out', f(`${who}.crt`), '-days', '2', '-extfile', f(`${who}.ext`),
    );
  }
  return { ca: f('ca.crt'), serverCert: f('server.crt'), serverKey: f('server.key'), clientCert: f('client.crt'), clientKey: f('client.key') };
}

/**
 * A redis-server that speaks only TLS and requires client certificates (`tls-auth-clients yes`), with a
 * password too. The CLI flags carry the CA and the client certificate.
 */
export async function startTlsRedis(): Promise<RedisTopology & { certs: TestCerts }> {
  const dir = tmp();
  const certs = generateCerts(dir);
  const port = await freePort();
  const password = `tls-${Math.random().toString(36).slice(2)}`;
  const args = [
    ...BASE, '--port', '0', '--tls-port', String(port), '--dir', dir, '--requirepass', password,
    '--tls-cert-file', certs.serverCert, '--tls-key-file', certs.serverKey, '--tls-ca-cert-file', certs.ca,
    '--tls-auth-clients', 'yes',
  ];
  const probe: RedisOptions = {
    password,
    tls: { ca: readFileSync(certs.ca), cert: readFileSync(certs.clientCert), key: readFileSync(certs.clientKey) },
  };
  const proc = await RedisProc.start('redis-server', args, port, probe);
  return {
    ...topology({
      url: `rediss://:${password}@127.0.0.1:${port}`,
      cliArgs: ['--redis-tls-ca', certs.ca, '--redis-tls-cert', certs.clientCert, '--redis-tls-key', certs.clientKey],
      secrets: [password],
      dataNodes: [proc],
      probe,
      procs: [proc],
      dir,
    }),
    certs,
  };
}

/**
 * Three redis-server processes with `--cluster-enabled yes`, joined by `redis-cli --cluster create
 * --cluster-replicas 0` into a 3-master cluster (every slot covered), with a password on every node. With
 * `tls`, clients, the cluster bus and redis-cli speak only TLS (client certificates required), and the URL is
 * `rediss+cluster://`.
 */
export async function startCluster(o: { tls?: boolean } = {}): Promise<RedisTopology> {
  const dir = tmp();
  const password = `cl-${Math.random().toString(36).slice(2)}`;
  const procs: RedisProc[] = [];
  try {
    const certs = o.tls ? generateCerts(dir) : undefined;
    const probe: RedisOptions = { password };
    const tlsArgs = (port: number): string[] =>
      certs
        ? [
            '--port', '0', '--tls-port', String(port), '--tls-cluster', 'yes', '--tls-replication', 'yes',
            '--tls-cert-file', certs.serverCert, '--tls-key-file', certs.serverKey, '--tls-ca-cert-file', certs.ca,
            '--tls-auth-clients', 'yes',
          ]
        : ['--port', String(port)];
    if (certs) probe.tls = { ca: readFileSync(certs.ca), cert: readFileSync(certs.clientCert), key: readFileSync(certs.clientKey) };
    const cliTls = certs ? ['--tls', '--cacert', certs.ca, '--cert', certs.clientCert, '--key', certs.clientKey] : [];
    const ports: number[] = [];
    for (let i = 0; i < 3; i++) {
      let port = await freeClusterPort();
      while (ports.includes(port)) port = await freeClusterPort();
      ports.push(port);
      const d = join(dir, String(port));
      mkdirSync(d);
      const args = [
        ...BASE, ...tlsArgs(port), '--dir', d, '--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf',
        '--cluster-node-timeout', '5000', '--requirepass', password, '--masterauth', password,
      ];
      procs.push(await RedisProc.start('redis-server', args, port, probe));
    }
    const create = spawnSync(
      'redis-cli',
      [...cliTls, '-a', password, '--no-auth-warning', '--cluster', 'create', ...ports.map((p) => `127.0.0.1:${p}`), '--cluster-replicas', '0', '--cluster-yes'],
      { encoding: 'utf8', timeout: 60_000 },
    );
    if (create.status !== 0) throw new Error(`redis-cli --cluster create failed: ${create.stdout}${create.stderr}`);
    // Every node must agree that the cluster is up before clients connect.
    const deadline = Date.now() + 30_000;
    for (const port of ports) {
      const c = new Redis({ host: '127.0.0.1', port, ...probe, maxRetriesPerRequest: 1 });
      c.on('error', () => undefined);
      try {
        for (;;) {
          const info = (await c.call('CLUSTER', 'INFO')) as string;
          if (/cluster_state:ok/.test(info) && /cluster_known_nodes:3/.test(info) && /cluster_slots_ok:16384/.test(info)) break;
          if (Date.now() > deadline) throw new Error(`cluster not ok on ${port}: ${info}`);
          await new Promise((r) => setTimeout(r, 100));
        }
      } finally {
        c.disconnect();
      }
    }
    return topology({
      url: `${certs ? 'rediss' : 'redis'}+cluster://:${password}@${ports.map((p) => `127.0.0.1:${p}`).join(',')}`,
      cliArgs: certs ? ['--redis-tls-ca', certs.ca, '--redis-tls-cert', certs.clientCert, '--redis-tls-key', certs.clientKey] : [],
      secrets: [password],
      dataNodes: procs,
      probe,
      procs,
      dir,
    });
  } catch (err) {
    await Promise.all(procs.map((p) => p.stop()));
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
}

/** `redis-sentinel` if installed (Debian package redis-sentinel), else `redis-server --sentinel`. */
function sentinelCommand(conf: string): [string, string[]] {
  if (spawnSync('redis-sentinel', ['--version'], { stdio: 'ignore' }).status === 0) return ['redis-sentinel', [conf]];
  return ['redis-server', [conf, '--sentinel']];
}

/**
 * A master with a password watched by one `redis-sentinel` (quorum 1) that has a password of its own: the URL
 * carries both, the master's in the user-info and the sentinel's as `sentinelPassword`. With `withReplica`, a
 * second redis-server replicates the master (dataNodes[1]) and the sentinel knows it, so that
 * `SENTINEL FAILOVER` can promote it. With `tls`, every server and the sentinel speak only TLS (client
 * certificates required) and the URL is `rediss+sentinel://`.
 */
export async function startSentinel(
  o: { masterName?: string; withReplica?: boolean; tls?: boolean } = {},
): Promise<RedisTopology & { sentinel: RedisProc; masterName: string; sentinelClient(): Redis }> {
  const masterName = o.masterName ?? 'flockmaster';
  const dir = tmp();
  const masterPassword = `mp-${Math.random().toString(36).slice(2)}`;
  const sentinelPassword = `sp-${Math.random().toString(36).slice(2)}`;
  const procs: RedisProc[] = [];
  try {
    const certs = o.tls ? generateCerts(dir) : undefined;
    const clientTls = certs
      ? { tls: { ca: readFileSync(certs.ca), cert: readFileSync(certs.clientCert), key: readFileSync(certs.clientKey) } }
      : {};
    // TLS settings of the servers and the sentinel, which also reaches the master over TLS (tls-replication).
    const serverTls: [string, string][] = certs
      ? [
          ['tls-cert-file', certs.serverCert],
          ['tls-key-file', certs.serverKey],
          ['tls-ca-cert-file', certs.ca],
          ['tls-auth-clients', 'yes'],
          ['tls-replication', 'yes'],
        ]
      : [];
    const listen = (port: number): string[] =>
      certs ? ['--port', '0', '--tls-port', String(port), ...serverTls.flatMap(([k, v]) => [`--${k}`, v])] : ['--port', String(port)];
    const mport = await freePort();
    const probe: RedisOptions = { password: masterPassword, ...clientTls };
    const master = await RedisProc.start(
      'redis-server',
      [...BASE, ...listen(mport), '--dir', dir, '--requirepass', masterPassword, '--masterauth', masterPassword],
      mport,
      probe,
    );
    procs.push(master);
    const dataNodes = [master];
    if (o.withReplica) {
      const rport = await freePort();
      const rdir = join(dir, 'replica');
      mkdirSync(rdir);
      const replica = await RedisProc.start(
        'redis-server',
        [...BASE, ...listen(rport), '--dir', rdir, '--requirepass', masterPassword, '--masterauth', masterPassword, '--replicaof', '127.0.0.1', String(mport)],
        rport,
        probe,
        async (c) => /master_link_status:up/.test(await c.info('replication')),
      );
      procs.push(replica);
      dataNodes.push(replica);
    }
    const sport = await freePort();
    const conf = join(dir, 'sentinel.conf');
    // Sentinel rewrites its config file: it must be writable, and is a fresh one per test.
    writeFileSync(
      conf,
      [
        ...(certs ? ['port 0', `tls-port ${sport}`, ...serverTls.map(([k, v]) => `${k} ${v}`)] : [`port ${sport}`]),
        'bind 127.0.0.1',
        `dir ${dir}`,
        `sentinel monitor ${masterName} 127.0.0.1 ${mport} 1`,
        `sentinel auth-pass ${masterName} ${masterPassword}`,
        `sentinel down-after-milliseconds ${masterName} 5000`,
        `requirepass ${sentinelPassword}`,
        '',
      ].join('\n'),
    );
    const [bin, args] = sentinelCommand(conf);
    const sentinel = await RedisProc.start(bin, args, sport, { password: sentinelPassword, ...clientTls }, async (c) => {
      const addr = (await c.call('SENTINEL', 'get-master-addr-by-name', masterName)) as string[] | null;
      const master = (await c.call('SENTINEL', 'master', masterName)) as string[];
      const flags = master[master.indexOf('flags') + 1];
      if (addr?.[1] !== String(mport) || flags !== 'master') return false;
      if (!o.withReplica) return true;
      const replicas = (await c.call('SENTINEL', 'replicas', masterName)) as string[][];
      return replicas.some((r) => r[r.indexOf('port') + 1] === String(dataNodes[1]!.port) && r[r.indexOf('flags') + 1] === 'slave');
    });
    procs.push(sentinel);
    return {
      ...topology({
        url: `${certs ? 'rediss' : 'redis'}+sentinel://:${masterPassword}@127.0.0.1:${sport}/${masterName}?sentinelPassword=${sentinelPassword}`,
        cliArgs: certs ? ['--redis-tls-ca', certs.ca, '--redis-tls-cert', certs.clientCert, '--redis-tls-key', certs.clientKey] : [],
        secrets: [masterPassword, sentinelPassword],
        dataNodes,
        probe,
        procs,
        dir,
      }),
      sentinel,
      masterName,
      sentinelClient() {
        const c = new Redis({ host: '127.0.0.1', port: sport, password: sentinelPassword, maxRetriesPerRequest: 2, ...clientTls });
        c.on('error', () => undefined);
        return c;
      },
    };
  } catch (err) {
    await Promise.all(procs.map((p) => p.stop()));
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
}
