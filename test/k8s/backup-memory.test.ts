/**
 * A backup of 10,000 objects stays within a stated memory bound: objects stream from paged lists through the
 * tar.gz and encryption streams to storage, and the read-back verification streams too, so a process capped at
 * 96 MB of old-generation heap (about 50 MB of it is the loaded modules: client-node, the AWS SDK, zod) backs up
 * and verifies 10,000 ConfigMaps holding 8 KB of random base64 each (80 MB of data, a 60 MB archive), which it
 * could not if it held the list or the archive. What it keeps per object is one manifest entry (~300 bytes) and
 * one key.
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createObject, resourcePath } from '../../k8s/index.js';
import { configMap } from './fixtures.js';
import { clientFor, controlPlane, testNamespace } from './harness.js';

const COUNT = 10_000;
const HEAP_MB = 96;

describe('backup: memory', () => {
  it(`backs up ${COUNT} objects (80 MB of random data), encrypted, with the heap capped at ${HEAP_MB} MB`, async () => {
    const admin = clientFor('admin', { qps: 2000, burst: 2000 });
    const ns = await testNamespace(admin, 'bk-mem');
    const t0 = performance.now();
    for (let i = 0; i < COUNT; i += 100) {
      await Promise.all(Array.from({ length: Math.min(100, COUNT - i) }, (_, j) => createObject(admin, configMap(ns, `cm-${i + j}`, { payload: randomBytes(6144).toString('base64') }))));
    }
    console.log(`created ${COUNT} ConfigMaps in ${Math.round(performance.now() - t0)} ms`);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cronflock-backup-mem-'));
    const params = {
      kind: 'backup',
      kubeconfig: controlPlane().users.admin.kubeconfig,
      qps: 500,
      pageSize: 250,
      resourceSets: [{ apiVersion: 'v1', kinds: ['ConfigMap'], namespaces: [ns] }],
      storage: { type: 'local', directory: dir },
      encryption: { key: { env: 'BACKUP_KEY' } },
    };
    const r = spawnSync(process.execPath, [`--max-old-space-size=${HEAP_MB}`, '--import', 'tsx', 'test/k8s/backup-memory-child.ts', JSON.stringify(params), String(Date.parse('2026-05-01T00:00:00Z'))], {
      encoding: 'utf8',
      timeout: 280_000,
      env: { ...process.env, BACKUP_KEY: randomBytes(32).toString('base64') },
    });
    try {
      expect(r.status, r.stderr.slice(-2000)).toBe(0);
      const out = JSON.parse(r.stdout.trim().split('\n').at(-1)!) as { report: { objects: number; bytes: number; encrypted: boolean }; peakHeapMb: number; peakRssMb: number; ms: number };
      expect(out.report).toMatchObject({ objects: COUNT, encrypted: true });
      expect(fs.readdirSync(dir)).toEqual(['memory-20260501T000000Z.tar.gz.enc']);
      // The bound is the cap itself (the child would die of it); the sampled peaks are logged.
      console.log(`backup of ${COUNT} objects: ${(out.report.bytes / 1048576).toFixed(1)} MiB archive, ${out.ms} ms (listing, writing, read-back), peak heap ${out.peakHeapMb} MB, peak RSS ${out.peakRssMb} MB`);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
      // Give the shared control plane its memory back (later tests measure timing): one deletecollection, which
      // on a loaded machine takes longer than the client's default 30 s for 10,000 objects.
      const patient = clientFor('admin', { timeoutMs: 300_000 });
      const info = await patient.discovery.resolve('v1', 'ConfigMap');
      await patient.request({ method: 'DELETE', path: resourcePath(info, { namespace: ns }) });
    }
  }, 700_000);
});
