import { describe, expect, it } from 'vitest';
import { backupJobSchema } from './schema.js';

function issues(job: Record<string, unknown>): string[] {
  const r = backupJobSchema.safeParse({ kind: 'backup', storage: { type: 'local', directory: '/b' }, ...job });
  return r.success ? [] : r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
}

describe('backup schema', () => {
  it('accepts resource sets, presets, both storages, key sources and retention (durations in ms)', () => {
    const p = backupJobSchema.parse({
      kind: 'backup',
      resourceSets: [{ preset: 'cluster-config' }, { preset: 'namespace-apps', namespaceRegexp: '^team-' }, { apiVersion: 'v1', kinds: ['ConfigMap'], excludeNameRegexps: ['^tmp-'] }],
      storage: { type: 's3', bucket: 'bkt', endpoint: 'http://minio:9000', credentials: { secret: { namespace: 'c', name: 's3' } } },
      encryption: { key: { file: './key' } },
      retention: { count: 3, maxAge: '30d' },
    });
    expect(p.retention).toEqual({ count: 3, maxAge: 30 * 86_400_000 });
    expect(p.storage).toMatchObject({ credentials: { secret: { accessKeyIdKey: 'accessKeyId', secretAccessKeyKey: 'secretAccessKey' } } });
    expect(p).toMatchObject({ allowPlaintextSecrets: false, pageSize: 500 });
  });

  it('refuses bad blocks naming the field', () => {
    expect(issues({ resourceSets: [{ kinds: ['ConfigMap'] }] })).toEqual(['resourceSets.0.apiVersion: apiVersion is required unless a preset is given']);
    expect(issues({ resourceSets: [{ preset: 'namespace-apps' }] })).toEqual(['resourceSets.0.namespaces: preset namespace-apps needs namespaces or namespaceRegexp (which namespaces to back up)']);
    expect(issues({ resourceSets: [{ preset: 'cluster-config', kinds: ['Secret'] }] })).toEqual(['resourceSets.0.kinds: preset cluster-config chooses the kinds itself: remove kinds']);
    expect(issues({ resourceSets: [{ apiVersion: 'v1', nameRegexp: '(' }] })).toEqual(['resourceSets.0.nameRegexp: is not a valid regular expression']);
    expect(issues({ resourceSets: [{ apiVersion: 'v1' }], retention: {} })).toEqual(['retention: retention needs count or maxAge']);
    expect(issues({ resourceSets: [{ apiVersion: 'v1' }], storage: { type: 'ftp' } })[0]).toMatch(/^storage/);
    expect(issues({ resourceSets: [{ apiVersion: 'v1' }], encryption: { key: { env: 'A', file: 'b' } } })[0]).toMatch(/^encryption\.key/);
  });
});
