/**
 * `cronflock convert` (the built CLI) exit codes that need no Kubernetes API server: a result cronflock's loader
 * refuses is a CronJob that could not be converted (exit 1), still printed with the reasons for reference.
 * The conversions applied to a real API server are in test/k8s/convert.test.ts.
 */
import { spawnSync } from 'node:child_process';
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

  it('exits 0 when every result loads', () => {
    const r = convert(cronJob('fine', '  timeZone: Europe/Berlin\n'));
    expect(r.status, r.stderr).toBe(0);
    expect(r.stderr).toBe('');
  });
});
