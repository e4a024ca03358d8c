/**
 * `cronflock convert` (the built CLI) on a set of CronJob manifests written like the ones people run
 * (test/fixtures/cronjobs/: several documents per file, a `kubectl get -o yaml` List, CRON_TZ=, macros), and
 * the result applied to the real kube-apiserver with the Schedule CRD. Needs dist/ built.
 */
import { spawnSync } from 'node:child_process';
import { beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { findJobKind } from '../../jobs/registry.js';
import { createNamespace } from './fixtures.js';
import { isK8sError, type KubeClient, type KubeObject } from '../../k8s/index.js';
import { BIN, ROOT } from '../support/replica.js';
import { clientFor } from './harness.js';
import { installScheduleCrd, kubectlApply } from './schedule-support.js';

const FIXTURES = `${ROOT}test/fixtures/cronjobs`;

function convert(args: string[], input?: string): { code: number | null; stdout: string; stderr: string; docs: KubeObject[] } {
  const r = spawnSync(process.execPath, [BIN, 'convert', ...args], { cwd: ROOT, input: input ?? '', encoding: 'utf8' });
  const docs = parseAllDocuments(r.stdout) as unknown as { toJS(): KubeObject }[];
  return { code: r.status, stdout: r.stdout, stderr: r.stderr, docs: (Array.isArray(docs) ? docs : []).map((d) => d.toJS()).filter(Boolean) };
}

let admin: KubeClient;
beforeAll(async () => {
  admin = clientFor('admin');
  await installScheduleCrd(admin);
});

describe('cronflock convert', () => {
  it('converts a directory of CronJobs into Schedules with the same names, namespaces and job templates', () => {
    const r = convert([FIXTURES]);
    expect(r.code, r.stderr).toBe(0);
    const names = r.docs.map((d) => `${(d.metadata as { namespace?: string }).namespace ?? '-'}/${d.metadata!.name}`);
    expect(names).toEqual(['shop/report-weekly', 'shop/cache-warmer', '-/hello', 'kube-system/descheduler', 'shop/postgres-dump', 'shop/cert-cleanup']);
    expect(r.docs.every((d) => d.apiVersion === 'cronflock.io/v1alpha1' && d.kind === 'Schedule')).toBe(true);
    const byName = Object.fromEntries(r.docs.map((d) => [d.metadata!.name, d.spec as Record<string, unknown>]));
    expect(byName['postgres-dump']).toMatchObject({ cron: '30 2 * * *', timeZone: 'Europe/Berlin', startingDeadline: '10m', concurrencyPolicy: 'Forbid', job: { kind: 'job', successfulJobsHistoryLimit: 7, failedJobsHistoryLimit: 3, jobTemplate: { metadata: { labels: { app: 'postgres-dump' } }, spec: { backoffLimit: 2 } } } });
    expect(byName['cert-cleanup']).toMatchObject({ cron: '@daily', timeZone: 'America/New_York', suspend: true, concurrencyPolicy: 'Replace' });
    expect(byName['cache-warmer']).toMatchObject({ cron: '@hourly', startingDeadline: '2m' });
    expect(r.stdout).toContain('# note: metadata.name "report.weekly" has dots');
    expect(r.stdout).toContain('cron: "0 6 * * 1"');
    expect(r.stderr).toMatch(/exported-list\.yaml items\[0\]: CronJob shop\/report\.weekly: warning: metadata\.name "report\.weekly" has dots/);
  });

  it('says what has no equivalent and exits 1; with no CronJob at all it exits 2', () => {
    const r = convert([`${FIXTURES}/unsupported`]);
    expect(r.code).toBe(1);
    expect(r.docs).toEqual([]);
    expect(r.stderr).toMatch(/mixed\.yaml#1: CronJob every-quarter-hour: error: spec\.schedule "@every 15m" has no equivalent/);
    expect(r.stderr).toMatch(/mixed\.yaml#2: CronJob two-zones: error: spec\.schedule has a TZ= prefix and spec\.timeZone is set too/);
    expect(r.stderr).toMatch(/mixed\.yaml#3: warning: apps\/v1 Deployment is not a CronJob: skipped/);
    const none = convert(['-'], 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n');
    expect(none.code).toBe(2);
    expect(none.stderr).toContain('no CronJob found in -');
    const bad = convert(['-'], 'kind: CronJob\n  spec: [\n');
    expect(bad.code).toBe(2);
    // in the schedule loader's words (runner/config/yaml-messages.ts), not the yaml library's
    expect(bad.stderr).toMatch(/<stdin>:2:9: this list \(\[\) is never closed\n {2}hint: /);
    expect(bad.stderr).not.toContain('YAML: ');
  });

  it('reads CronJobs from stdin', () => {
    const r = convert([], 'apiVersion: batch/v1\nkind: CronJob\nmetadata: {name: piped, namespace: ops}\nspec:\n  schedule: "@weekly"\n  jobTemplate: {spec: {template: {spec: {restartPolicy: Never, containers: [{name: x, image: busybox}]}}}}\n');
    expect(r.docs.map((d) => d.metadata!.name)).toEqual(['piped']);
  });

  // `kind: job` (the Kubernetes Job kind) is registered, and the CRD generated with it, so the API server must
  // accept every converted Schedule.
  it('applies the converted Schedules: the API server accepts every one', async () => {
    expect(findJobKind('job'), 'the job kind is registered').toBeDefined();
    for (const ns of ['shop', 'kube-system', 'default']) {
      await createNamespace(admin, ns).catch((e: unknown) => {
        if (!isK8sError(e, 'CONFLICT')) throw e;
      });
    }
    const r = convert([FIXTURES]);
    expect(r.docs).toHaveLength(6);
    for (const d of r.docs) {
      const meta = d.metadata as { name: string; namespace?: string };
      const stored = await kubectlApply(admin, { ...d, metadata: { ...meta, namespace: meta.namespace ?? 'default' } });
      expect((stored.spec as { job: unknown }).job, meta.name).toMatchObject((d.spec as { job: object }).job);
    }
  });
});
