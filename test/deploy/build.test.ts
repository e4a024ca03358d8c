/**
 * `npm run build` in a scratch copy of the package (sources, tsconfigs, package.json; node_modules linked): the
 * build starts from an empty dist/, so a file whose source was deleted does not linger in what is shipped and run
 * (replicas and the CLI run dist/), and the .lua scripts are copied beside the compiled code.
 */
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ROOT } from '../support/replica.js';

const dir = mkdtempSync(path.join(tmpdir(), 'cronflock-build-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('npm run build', () => {
  it('removes what an earlier build left in dist/ (a deleted source leaves no compiled file behind)', () => {
    for (const p of ['package.json', 'tsconfig.json', 'tsconfig.build.json', 'runner', 'receiver', 'jobs', 'k8s', 'bench']) {
      cpSync(path.join(ROOT, p), path.join(dir, p), { recursive: true });
    }
    symlinkSync(path.join(ROOT, 'node_modules'), path.join(dir, 'node_modules'));
    mkdirSync(path.join(dir, 'dist/runner/gone'), { recursive: true });
    writeFileSync(path.join(dir, 'dist/runner/gone/removed-source.js'), 'export {};\n');
    writeFileSync(path.join(dir, 'dist/stale.js'), 'export {};\n');
    const r = spawnSync('npm', ['run', '--silent', 'build'], { cwd: dir, encoding: 'utf8' });
    expect(r.status, r.stderr + r.stdout).toBe(0);
    expect(existsSync(path.join(dir, 'dist/runner/gone'))).toBe(false);
    expect(existsSync(path.join(dir, 'dist/stale.js'))).toBe(false);
    expect(existsSync(path.join(dir, 'dist/runner/cli/main.js'))).toBe(true);
    expect(existsSync(path.join(dir, 'dist/runner/redis/lua'))).toBe(true);
  });
});
