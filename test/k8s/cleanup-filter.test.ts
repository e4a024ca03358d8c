/** The CEL `filter` of a cleanup selector, on the real kube-apiserver's objects. */
import { describe, expect, it } from 'vitest';
import { cleanupJobSchema } from '../../jobs/cleanup/index.js';
import { listAll, type KubeObject } from '../../k8s/index.js';
import { runCleanupJob } from './cleanup-support.js';
import { createAll, job, setJobFinished } from './fixtures.js';
import { clientFor, testNamespace } from './harness.js';

describe('cleanup: CEL filter', () => {
  it('selects the objects it is true for; an object it fails on is errored and the run goes on', async () => {
    const admin = clientFor('admin');
    const ns = await testNamespace(admin, 'cl-cel');
    await createAll(admin, [job(ns, 'failed-batch', { tier: 'batch' }), job(ns, 'ok-batch', { tier: 'batch' }), job(ns, 'failed-nolabel'), job(ns, 'failed-web', { tier: 'web' })]);
    const at = new Date(Date.now() - 7_200_000);
    await setJobFinished(admin, ns, 'failed-batch', 'Failed', at);
    await setJobFinished(admin, ns, 'ok-batch', 'Complete', at);
    await setJobFinished(admin, ns, 'failed-nolabel', 'Failed', at);
    await setJobFinished(admin, ns, 'failed-web', 'Failed', at);
    const filter =
      'object.metadata.labels.tier == "batch" && object.status.conditions.exists(c, c.type == "Failed" && c.status == "True") && timestamp(object.status.startTime) < now - duration("1h")';
    const report = await runCleanupJob({ resources: [{ apiVersion: 'batch/v1', kind: 'Job', namespaces: [ns], filter }], action: 'delete' });
    expect(report).toMatchObject({ scanned: 4, matched: 2, acted: 1, errored: 1 });
    expect(report.objects.find((o) => o.name === 'failed-nolabel')).toMatchObject({ result: 'error', reason: 'filter: No such key: tier' });
    const left = await listAll<KubeObject>(admin, { apiVersion: 'batch/v1', kind: 'Job', namespace: ns });
    expect(left.items.map((o) => o.metadata?.name).sort()).toEqual(['failed-nolabel', 'failed-web', 'ok-batch']);
  });

  it('refuses an expression that is not valid CEL when the file is loaded', () => {
    const r = cleanupJobSchema.safeParse({ kind: 'cleanup', resources: [{ apiVersion: 'v1', kind: 'Pod', filter: 'object.metadata.name ==' }] });
    expect(r.success).toBe(false);
    expect(r.error?.issues[0]).toMatchObject({ path: ['resources', 0, 'filter'], message: expect.stringMatching(/^is not a valid CEL expression: /) });
  });
});
