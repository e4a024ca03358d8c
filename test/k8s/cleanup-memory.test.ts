/**
 * A run over 5,000 objects stays within a stated memory bound: the scan streams pages and keeps only the
 * selected objects' references, so a process capped at 96 MB of old-generation heap plans a cleanup of 5,000
 * ConfigMaps holding 16 KB each (80 MB of data, read in full because of the filter), which it could not if it
 * held the list.
 */
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { createObject, resourcePath } from '../../k8s/index.js';
import { configMap } from './fixtures.js';
import { clientFor, controlPlane, testNamespace } from './harness.js';

const COUNT = 5000;
const HEAP_MB = 96;

describe('cleanup: memory', () => {
  it(`plans over ${COUNT} objects (80 MB of data) with the heap capped at ${HEAP_MB} MB`, async () => {
    const admin = clientFor('admin', { qps: 2000, burst: 2000 });
    const ns = await testNamespace(admin, 'cl-mem');
    const payload = 'x'.repeat(16 * 1024);
    for (let i = 0; i < COUNT; i += 100) {
      await Promise.all(Array.from({ length: Math.min(100, COUNT - i) }, (_, j) => createObject(admin, configMap(ns, `cm-${i + j}`, { payload }))));
    }
    const params = {
      kind: 'cleanup',
      kubeconfig: controlPlane().users.admin.kubeconfig,
      qps: 500,
      pageSize: 100,
      maxCount: COUNT,
      action: 'plan',
      resources: [{ apiVersion: 'v1', kind: 'ConfigMap', namespaces: [ns], filter: 'size(object.data.payload) > 0' }],
    };
    const r = spawnSync(process.execPath, [`--max-old-space-size=${HEAP_MB}`, '--import', 'tsx', 'test/k8s/cleanup-memory-child.ts', JSON.stringify(params)], {
      encoding: 'utf8',
      timeout: 180_000,
    });
    expect(r.status, r.stderr.slice(-2000)).toBe(0);
    const out = JSON.parse(r.stdout.trim().split('\n').at(-1)!) as { report: { scanned: number; matched: number; acted: number; objectsOmitted?: number }; peakHeapMb: number };
    expect(out.report).toMatchObject({ scanned: COUNT, matched: COUNT, acted: COUNT });
    // The bound is the cap itself (the child would die of it); the sampled peak (new space included) is logged.
    console.log(`cleanup over ${COUNT} objects: peak heap ${out.peakHeapMb} MB`);
    // Give the shared control plane its memory back (the later tests measure its timing): one deletecollection.
    const info = await admin.discovery.resolve('v1', 'ConfigMap');
    await admin.request({ method: 'DELETE', path: resourcePath(info, { namespace: ns }) });
  }, 300_000);
});
