/**
 * The Dockerfile, run without Docker: this machine and CI have a Docker client but no engine, so the test reads
 * the Dockerfile and carries out its steps itself, in a scratch folder per stage (`WORKDIR /app` is that folder):
 * COPY from the repository (or `--from` an earlier stage), RUN through `sh -c` with the stage's ENV, then the
 * final stage's ENTRYPOINT + CMD against a real redis-server, and its HEALTHCHECK command. A Dockerfile whose
 * install, build or start step breaks fails here. What it cannot check: the base image itself (this runs on the
 * machine's Node, not the image's) and the user switch (it runs as the current user).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, RedisServerProcess } from '../../runner/redis/server-process.js';
import { ROOT } from '../support/replica.js';

interface Instruction {
  op: string;
  args: string;
  line: number;
}
interface Stage {
  from: string;
  name: string;
  steps: Instruction[];
}

/** Dockerfile instructions: comments dropped, `\` continuations joined; one stage per FROM. */
export function parseDockerfile(text: string): Stage[] {
  const stages: Stage[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const start = i;
    let l = lines[i]!;
    if (/^\s*(#|$)/.test(l)) continue;
    while (/\\\s*$/.test(l) && i + 1 < lines.length) {
      i++;
      const next = lines[i]!;
      if (/^\s*#/.test(next)) continue;
      l = l.replace(/\\\s*$/, ' ') + next.trim();
    }
    const m = /^\s*([A-Za-z]+)\s+(.*)$/.exec(l);
    if (!m) throw new Error(`Dockerfile:${start + 1}: cannot read ${l}`);
    const op = m[1]!.toUpperCase();
    const args = m[2]!.trim();
    if (op === 'FROM') {
      const f = /^(\S+)(?:\s+AS\s+(\S+))?$/i.exec(args);
      if (!f) throw new Error(`Dockerfile:${start + 1}: FROM ${args}`);
      stages.push({ from: f[1]!, name: f[2] ?? String(stages.length), steps: [] });
    } else {
      const stage = stages.at(-1);
      if (!stage) throw new Error(`Dockerfile:${start + 1}: ${op} before FROM`);
      stage.steps.push({ op, args, line: start + 1 });
    }
  }
  return stages;
}

/** `KEY=value KEY2=value2` of an ENV instruction (no quoting needed by our Dockerfile). */
function envPairs(args: string): Record<string, string> {
  return Object.fromEntries(args.split(/\s+/).filter(Boolean).map((p) => p.split(/=(.*)/s).slice(0, 2) as [string, string]));
}

/** Exec-form arguments (a JSON array); a shell-form string is refused (SIGTERM would go to sh, not node). */
function execForm(args: string, what: string): string[] {
  expect(args.startsWith('['), `${what} must use the exec form so that SIGTERM reaches node`).toBe(true);
  return JSON.parse(args) as string[];
}

const dockerfileText = readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8');
const stages = parseDockerfile(dockerfileText);
const final = stages.at(-1)!;
const step = (op: string) => final.steps.filter((s) => s.op === op);

describe('Dockerfile', () => {
  it('is multi-stage on a Node LTS base, production deps only, non-root, exec-form start, HEALTHCHECK on /healthz', () => {
    expect(stages.length).toBeGreaterThanOrEqual(2);
    for (const s of stages) expect(s.from).toMatch(/^node:(22|24)(\.[\d.]+)?-(bookworm|trixie)(-slim)?$/);
    expect(step('RUN').some((r) => /npm ci\b.*--omit=dev/.test(r.args))).toBe(true);
    expect(stages.slice(0, -1).some((s) => s.steps.some((r) => r.op === 'RUN' && /npm run build/.test(r.args)))).toBe(true);
    const user = step('USER').at(-1)?.args ?? 'root';
    expect(user).not.toMatch(/^(root|0)(:|$)/);
    const entry = [...execForm(step('ENTRYPOINT').at(-1)!.args, 'ENTRYPOINT'), ...execForm(step('CMD').at(-1)!.args, 'CMD')];
    expect(entry.slice(0, 3)).toEqual(['node', 'bin/cronflock.js', 'start']);
    const hc = step('HEALTHCHECK').at(-1)!.args;
    expect(hc).toContain('/healthz');
    const env = Object.assign({}, ...step('ENV').map((e) => envPairs(e.args))) as Record<string, string>;
    expect(env.CRONFLOCK_ADMIN).toBe('0.0.0.0:9464');
    expect(hc).toContain(':9464/healthz');
    const ignore = readFileSync(path.join(ROOT, '.dockerignore'), 'utf8').split('\n').map((l) => l.trim());
    for (const p of ['node_modules', 'dist', '.git', '.cronflock']) expect(ignore).toContain(p);
  });

  it('runs on the Node major that CI tests the suite on (.ci/install-node.sh)', () => {
    // This test runs the image's steps on the machine's Node, not the image's: the pinned CI Node is what
    // vouches for the image's, so the two must not drift apart.
    const pinned = /NODE_VERSION="\$\{CRONFLOCK_NODE_VERSION:-(\d+)\.\d+\.\d+\}"/.exec(readFileSync(path.join(ROOT, '.ci/install-node.sh'), 'utf8'));
    expect(pinned, '.ci/install-node.sh must pin NODE_VERSION').not.toBeNull();
    for (const s of stages) expect(s.from, `stage ${s.name}`).toMatch(new RegExp(`^node:${pinned![1]}[.-]`));
  });

  describe('its steps, run in a scratch folder', () => {
    let scratch: string;
    const dirs = new Map<string, string>();
    let redis: RedisServerProcess | undefined;
    let child: ChildProcess | undefined;

    /** Carries out one stage: COPY, RUN (sh -c), ENV and WORKDIR (only /app, mapped to the stage's folder). */
    function runStage(stage: Stage): void {
      const dir = path.join(scratch, stage.name);
      mkdirSync(dir, { recursive: true });
      dirs.set(stage.name, dir);
      const env: Record<string, string> = {};
      const user = stage.steps.find((s) => s.op === 'USER')?.args;
      for (const s of stage.steps) {
        if (s.op === 'WORKDIR') expect(s.args, `Dockerfile:${s.line}`).toBe('/app');
        else if (s.op === 'ENV') Object.assign(env, envPairs(s.args));
        else if (s.op === 'COPY') {
          const words = s.args.split(/\s+/);
          const from = words.find((w) => w.startsWith('--from='))?.slice('--from='.length);
          const paths = words.filter((w) => !w.startsWith('--'));
          const dest = path.join(dir, paths.pop()!.replace(/^\/app\/?/, ''));
          for (const src of paths) {
            const abs = from ? path.join(dirs.get(from)!, src.replace(/^\/app\/?/, '')) : path.join(ROOT, src);
            expect(existsSync(abs), `Dockerfile:${s.line}: COPY ${src}`).toBe(true);
            const target = paths.length > 1 || dest.endsWith(path.sep) || s.args.trim().endsWith('./') ? path.join(dest, path.basename(src)) : dest;
            cpSync(abs, target, {
              recursive: true,
              filter: (p) => !/(^|\/)(node_modules|\.cronflock)(\/|$)/.test(path.relative(abs, p)),
            });
          }
        } else if (s.op === 'RUN') {
          // `chown node:node`: the image's user; here, the current one (the test may not run as root).
          const cmd = user ? s.args.replace(/chown node:node/g, `chown ${process.getuid?.() ?? 0}:${process.getgid?.() ?? 0}`) : s.args;
          const r = spawnSync('sh', ['-c', cmd], {
            cwd: dir,
            // npm's cache makes the second install fast; the commands are the Dockerfile's.
            env: { ...process.env, ...env, npm_config_prefer_offline: 'true', npm_config_update_notifier: 'false' },
            encoding: 'utf8',
            timeout: 600_000,
          });
          expect(r.status, `Dockerfile:${s.line}: RUN ${s.args}\n${r.stdout}\n${r.stderr}`).toBe(0);
        }
      }
    }

    beforeAll(() => {
      scratch = mkdtempSync(path.join(tmpdir(), 'cronflock-dockerfile-'));
      for (const s of stages) runStage(s);
    }, 900_000);

    afterAll(async () => {
      if (child && child.exitCode === null) child.kill('SIGKILL');
      await redis?.cleanup();
      if (scratch) rmSync(scratch, { recursive: true, force: true });
    });

    it('installs production dependencies only, next to the built dist/', () => {
      const app = dirs.get(final.name)!;
      expect(existsSync(path.join(app, 'dist/runner/cli/main.js'))).toBe(true);
      expect(existsSync(path.join(app, 'node_modules/bullmq/package.json'))).toBe(true);
      for (const dev of ['typescript', 'vitest', 'eslint']) expect(existsSync(path.join(app, 'node_modules', dev)), dev).toBe(false);
      expect(existsSync(path.join(app, 'test'))).toBe(false);
    });

    it('validates the example schedules with the image\'s entry point', () => {
      const app = dirs.get(final.name)!;
      const [cmd, ...args] = execForm(step('ENTRYPOINT').at(-1)!.args, 'ENTRYPOINT');
      const r = spawnSync(cmd === 'node' ? process.execPath : cmd!, [...args, 'validate', 'examples/'], { cwd: app, encoding: 'utf8' });
      expect(r.status, r.stdout + r.stderr).toBe(0);
    });

    it('starts with ENTRYPOINT + CMD against Redis, passes its HEALTHCHECK and /readyz, and exits 0 on SIGTERM', async () => {
      const app = dirs.get(final.name)!;
      redis = await RedisServerProcess.start();
      const port = await freePort();
      const env = Object.assign({}, ...step('ENV').map((e) => envPairs(e.args))) as Record<string, string>;
      const argv = [...execForm(step('ENTRYPOINT').at(-1)!.args, 'ENTRYPOINT'), ...execForm(step('CMD').at(-1)!.args, 'CMD')];
      const [cmd, ...args] = argv;
      let output = '';
      child = spawn(cmd === 'node' ? process.execPath : cmd!, [...args, '--grace', '2s'], {
        cwd: app,
        env: { ...process.env, ...env, REDIS_URL: redis.url, CRONFLOCK_ADMIN: `127.0.0.1:${port}` },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
      child.stderr!.on('data', (d: Buffer) => (output += d.toString()));

      // The HEALTHCHECK command itself, on the port this replica serves.
      const hc = step('HEALTHCHECK').at(-1)!.args.replace(/^.*?\bCMD\s+/, '');
      const [hcCmd, ...hcArgs] = execForm(hc, 'HEALTHCHECK').map((a) => a.replace(':9464/', `:${port}/`));
      const healthy = () => spawnSync(hcCmd === 'node' ? process.execPath : hcCmd!, hcArgs, { encoding: 'utf8', timeout: 5000 }).status === 0;
      const deadline = Date.now() + 30_000;
      while (!healthy()) {
        expect(Date.now() < deadline, `HEALTHCHECK never passed:\n${output}`).toBe(true);
        expect(child.exitCode, output).toBeNull();
        await new Promise((r) => setTimeout(r, 250));
      }
      let ready = 0;
      while (ready !== 200 && Date.now() < deadline) {
        ready = await fetch(`http://127.0.0.1:${port}/readyz`).then((r) => r.status, () => 0);
        if (ready !== 200) await new Promise((r) => setTimeout(r, 250));
      }
      expect(ready, output).toBe(200);

      const exited = new Promise<number | null>((resolve) => child!.on('exit', (code) => resolve(code)));
      child.kill('SIGTERM');
      const code = await Promise.race([exited, new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), 15_000))]);
      expect(code, output).toBe(0);
      expect(healthy()).toBe(false);
    }, 60_000);
  });
});
