/**
 * docker-compose.yml, loaded by compose-go (the loader `docker compose config` runs: compose-spec JSON schema,
 * interpolation, profiles, merges), then checked for what the flock needs. No Docker engine runs here, so the
 * containers are not started; the schedule file and receiver the compose flock uses are run on the host instead.
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parse } from 'yaml';
import { beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../runner/redis/server-process.js';
import { BIN, ROOT } from '../support/replica.js';
import { deployTools } from './tools.js';

interface Service {
  image?: string;
  build?: { context: string };
  command?: string[] | null;
  entrypoint?: string[] | null;
  environment?: Record<string, string | null>;
  volumes?: { type: string; source?: string; target: string; read_only?: boolean }[];
  ports?: { target: number; published?: string }[];
  deploy?: { replicas?: number };
  depends_on?: Record<string, { condition: string }>;
  stop_grace_period?: string;
  profiles?: string[];
  network_mode?: string;
  read_only?: boolean;
}
interface Project {
  services: Record<string, Service>;
  volumes?: Record<string, unknown>;
}

let composeConfig: string;
const load = (...profiles: string[]): Project => {
  const out = execFileSync(composeConfig, [path.join(ROOT, 'docker-compose.yml'), ...profiles], {
    encoding: 'utf8',
    // Defaults of the file, not whatever the machine's environment says.
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '' },
  });
  return JSON.parse(out) as Project;
};
const seconds = (d: string): number => {
  const m = /^(?:(\d+)m)?(?:(\d+)s)?$/.exec(d);
  if (!m) throw new Error(`duration ${d}`);
  return Number(m[1] ?? 0) * 60 + Number(m[2] ?? 0);
};
/** The argument after `flag` in a command line, or undefined. */
const flag = (argv: string[], name: string) => argv[argv.indexOf(name) + 1];

describe('docker-compose.yml', () => {
  beforeAll(() => {
    composeConfig = deployTools().composeConfig;
  }, 1_200_000);

  it('is a valid compose file (compose-go: schema, interpolation, profiles), and refuses a broken one', () => {
    const p = load();
    expect(Object.keys(p.services).sort()).toEqual(['minio', 'minio-setup', 'receiver', 'redis', 'runner']);
    const k3s = load('k3s');
    expect(Object.keys(k3s.services)).toEqual(expect.arrayContaining(['k3s', 'runner-k3s']));
    // The validator is not a no-op: an unknown key fails the schema.
    const dir = mkdtempSync(path.join(tmpdir(), 'cronflock-compose-'));
    try {
      writeFileSync(path.join(dir, 'compose.yml'), 'services:\n  a:\n    image: x\n    replcas: 3\n');
      const r = spawnSync(composeConfig, [path.join(dir, 'compose.yml')], { encoding: 'utf8' });
      expect(r.status).not.toBe(0);
      expect(r.stderr).toMatch(/replcas/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('runs Redis with AOF and noeviction, and three runner replicas of the image on the shared examples/', () => {
    const { services: s } = load();
    const redis = s.redis!;
    expect(redis.command).toEqual(expect.arrayContaining(['--appendonly', 'yes', '--maxmemory-policy', 'noeviction']));
    const runner = s.runner!;
    expect(runner.deploy?.replicas).toBe(3);
    expect(runner.build?.context).toBe(ROOT.replace(/\/$/, ''));
    expect(runner.environment?.REDIS_URL).toBe('redis://redis:6379');
    expect(runner.environment?.CRONFLOCK_ADMIN).toBe('0.0.0.0:9464');
    // A container port only: `--scale runner=5` needs no free fixed host port per replica.
    expect(runner.ports).toEqual([expect.objectContaining({ target: 9464 })]);
    expect(runner.ports![0]!.published ?? '').toBe('');
    const examples = runner.volumes!.find((v) => v.target === '/app/examples')!;
    expect(examples).toMatchObject({ type: 'bind', source: path.join(ROOT, 'examples'), read_only: true });
    expect(runner.depends_on?.redis?.condition).toBe('service_healthy');
    // The container stop timeout outlives the hand-over grace.
    const argv = runner.command!;
    expect(argv[0]).toBe('start');
    expect(seconds(runner.stop_grace_period!)).toBeGreaterThan(seconds(flag(argv, '--grace') ?? '10s'));
    expect(runner.read_only).toBe(true);
  });

  it('points the runners at schedules that are valid and whose http jobs call services of the file', () => {
    const { services: s } = load();
    const dir = s.runner!.command![1]!;
    const onHost = path.join(ROOT, dir);
    const v = spawnSync(process.execPath, [BIN, 'validate', onHost], { encoding: 'utf8' });
    expect(v.status, v.stdout + v.stderr).toBe(0);
    const doc = parse(readFileSync(path.join(onHost, 'schedules.yaml'), 'utf8')) as {
      schedules: { name: string; job: { kind: string; url?: string } }[];
    };
    const urls = doc.schedules.filter((x) => x.job.kind === 'http').map((x) => new URL(x.job.url!));
    expect(urls.length).toBeGreaterThan(0);
    for (const u of urls) {
      expect(Object.keys(s), `${u.href}: no such service`).toContain(u.hostname);
      expect(s[u.hostname]!.environment?.PORT).toBe(u.port);
    }
    const recv = s.receiver!;
    expect(existsSync(path.join(ROOT, recv.entrypoint![1]!))).toBe(true);
  });

  it('runs the receiver script as compose does, and it answers an http job call', async () => {
    const { services: s } = load();
    const port = await freePort();
    const child = spawn(process.execPath, [s.receiver!.entrypoint![1]!], { cwd: ROOT, env: { ...process.env, PORT: String(port) }, stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    try {
      const deadline = Date.now() + 10_000;
      let status = 0;
      while (status !== 200 && Date.now() < deadline) {
        status = await fetch(`http://127.0.0.1:${port}/hook`, {
          method: 'POST',
          body: JSON.stringify({ occurrence: 'ping-billing@2026-01-01T00:00:00.000Z', replica: 'r1', fencingToken: 7 }),
        }).then((r) => r.status, () => 0);
        if (status !== 200) await new Promise((r) => setTimeout(r, 100));
      }
      expect(status).toBe(200);
      await new Promise((r) => setTimeout(r, 100));
      expect(out).toContain('ping-billing@2026-01-01T00:00:00.000Z replica=r1 token=7');
    } finally {
      child.kill('SIGTERM');
    }
  });

  it('has MinIO with a bucket for backups, and a k3s profile whose replica reaches the API server', () => {
    const { services: s } = load('k3s');
    expect(s.minio!.image).toMatch(/^quay\.io\/minio\/minio:RELEASE\./);
    // The bucket exists before a replica starts, and no image is an unpinned :latest.
    for (const name of ['runner', 'runner-k3s']) expect(s[name]!.depends_on!['minio-setup'], name).toEqual(expect.objectContaining({ condition: 'service_completed_successfully' }));
    for (const [name, svc] of Object.entries(s)) if (svc.image) expect(svc.image, name).toMatch(/:(?!latest$)[^:/]+$/);
    // The README says what MinIO is for without claiming a backup schedule the example files do not have.
    const schedules = readFileSync(path.join(ROOT, 'examples/compose/schedules.yaml'), 'utf8');
    const readme = readFileSync(path.join(ROOT, 'README.md'), 'utf8');
    if (!/kind: backup/.test(schedules)) expect(readme).toContain('The example schedules define no backup');
    expect(s['minio-setup']!.entrypoint!.join(' ')).toContain(s.runner!.environment!.CRONFLOCK_BACKUP_BUCKET!);
    expect(s.runner!.environment!.AWS_ENDPOINT_URL).toBe('http://minio:9000');
    expect(s.k3s!.profiles).toEqual(['k3s']);
    expect(s['runner-k3s']!.network_mode).toBe('service:k3s');
    expect(s['runner-k3s']!.environment!.KUBECONFIG).toBe('/k3s/kubeconfig.yaml');
    expect(s.k3s!.environment!.K3S_KUBECONFIG_OUTPUT).toBe('/output/kubeconfig.yaml');
  });
});
