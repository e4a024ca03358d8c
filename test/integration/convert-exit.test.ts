/**
 * `cronflock convert` (the built CLI) exit codes that need no Kubernetes API server: a result cronflock's loader
 * refuses is a CronJob that could not be converted (exit 1), still printed with the reasons for reference.
 * The conversions applied to a real API server are in test/k8s/convert.test.ts.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BIN, ROOT } from '../support/replica.js';

const convert = (input: string) => spawnSync(process.execPath, [BIN, 'convert', '-'], { cwd: ROOT, input, encoding: 'utf8', timeout: 60_000 });

const cronJob = (name: string, extra: string) =>
  `apiVersion: batch/v1\nkind: CronJob\nmetadata: {name: ${name}, namespace: ops}\nspec:\n  schedule: "@daily"\n${extra}` +
  `  jobTemplate: {spec: {template: {spec: {restartPolicy: Never, containers: [{name: x, image: busybox}]}}}}\n`;

describe('cronflock convert exit codes', () => {
  it('exits 1 when the loader refuses a result, printing it with the reason on stdout (as a comment) and stderr', () => {
    const r = convert(cronJob('mars', '  timeZone: Mars/Olympus\n'));
    expect(r.status, r.stderr).toBe(1);
    expect(r.stderr).toMatch(/CronJob ops\/mars: cronflock's loader refuses the result: .*Mars\/Olympus/);
    expect(r.stdout).toMatch(/# note: cronflock's loader refuses it: .*Mars\/Olympus/);
    expect(r.stdout).toContain('name: mars');
  });

  it('says a YAML error of its input as the schedule loader does (file:line:col, our words, a hint), every one, and converts nothing (exit 2)', () => {
    // An unquoted @daily: the most likely mistake in a CronJob manifest written by hand.
    const r = convert(cronJob('daily', '').replace('schedule: "@daily"', 'schedule: @daily'));
    expect(r.status, r.stderr).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain('<stdin>:5:13: a value cannot start with @ unless it is in quotes (YAML reserves @)\n  hint: write the value in quotes, e.g. "@daily"\n');
    expect(r.stderr).toContain('cronflock: <stdin>: refused: not valid YAML (see above); nothing was converted');
    // Several mistakes, each at its place; an unclosed bracket where it opens, not where the parser gave up.
    const two = convert(`apiVersion: batch/v1\nkind: CronJob\nkind: CronJob\nmetadata: {name: "x}\n`);
    expect(two.status).toBe(2);
    expect(two.stderr).toContain('<stdin>:3:1: key "kind" appears twice in this map (first at line 2:1)');
    expect(two.stderr).toContain('<stdin>:4:11: this map ({) is never closed');
    expect(two.stderr).not.toContain('YAML: ');
  });

  it('names the file, line and column of a YAML error in a file it reads', () => {
    const dir = mkdtempSync(join(tmpdir(), 'cronflock-convert-'));
    try {
      writeFileSync(join(dir, 'jobs.yaml'), `${cronJob('ok', '')}---\n${cronJob('bad', '').replace('  schedule: "@daily"', '  schedule: "@daily"b')}`);
      const r = spawnSync(process.execPath, [BIN, 'convert', join(dir, 'jobs.yaml')], { cwd: ROOT, encoding: 'utf8', timeout: 60_000 });
      expect(r.status, r.stderr).toBe(2);
      expect(r.stdout).toBe('');
      expect(r.stderr).toContain(`${join(dir, 'jobs.yaml')}:12:21: more text follows a value that has ended`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('exits 0 when every result loads', () => {
    const r = convert(cronJob('fine', '  timeZone: Europe/Berlin\n'));
    expect(r.status, r.stderr).toBe(0);
    expect(r.stderr).toBe('');
  });
});
