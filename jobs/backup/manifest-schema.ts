/**
 * The schema of `manifest.json` (format.ts `BackupManifest`), which every reader applies before it uses any
 * field: a manifest is data from storage, and a restore acts on it (paths, identities and uids of objects, the
 * selection prune deletes within). Each field is held to what Kubernetes allows for it (names, namespaces,
 * groups, versions, kinds), and the fields that depend on each other agree: `namespace` is there exactly for
 * namespaced entries, `path` is the layout path of the entry, paths and uids are unique, `counts` are the
 * entries' counts. Unknown fields are dropped (nothing acts on them). Light: zod only.
 */
import { z } from 'zod';
import { regexString } from '../../runner/validate/zod-regex.js';
import { objectPath, type BackupManifest } from './format.js';

// Kubernetes' own validation (k8s.io/apimachinery/pkg/util/validation): namespaces are DNS-1123 labels, API
// groups DNS-1123 subdomains; object names at least path segments (RBAC names such as `system:admin` are only
// that); resources are lower-case plurals; versions `v1`, `v1beta2`.
const LABEL = '[a-z0-9](?:[-a-z0-9]*[a-z0-9])?';
const dnsLabel = z.string().max(63).regex(new RegExp(`^${LABEL}$`), 'must be a DNS-1123 label (lower-case letters, digits, -)');
const group = z
  .string()
  .max(253)
  .regex(new RegExp(`^(?:${LABEL}(?:\\.${LABEL})*)?$`), 'must be an API group (a DNS-1123 subdomain, or empty for the core group)');
const version = z.string().regex(/^[a-z0-9]+$/, 'must be an API version such as v1 or v1beta1');
const resource = z.string().regex(new RegExp(`^${LABEL}$`), 'must be a resource name (lower-case plural, e.g. configmaps)');
const kind = z.string().regex(/^[A-Za-z][A-Za-z0-9]*$/, 'must be a Kind (letters and digits, e.g. ConfigMap)');
const objectName = z
  .string()
  .min(1)
  .max(253)
  .refine((s) => s !== '.' && s !== '..' && !s.includes('/') && !s.includes('%'), 'must be a Kubernetes object name (not . or .., no / or %)');
const apiVersion = z.string().regex(new RegExp(`^(?:${LABEL}(?:\\.${LABEL})*/)?[a-z0-9]+$`), 'must be an apiVersion such as v1 or apps/v1');
const names = z.array(z.string().min(1));

/** One object entry. */
export const manifestEntrySchema = z
  .object({
    group,
    version,
    resource,
    kind,
    namespaced: z.boolean(),
    namespace: dnsLabel.optional(),
    name: objectName,
    uid: z.string().max(128),
    sha256: z.string().regex(/^[0-9a-f]{64}$/, 'must be 64 lower-case hex digits'),
    path: z.string(),
  })
  .superRefine((e, ctx) => {
    if (e.namespaced && e.namespace === undefined) ctx.addIssue({ code: 'custom', path: ['namespace'], message: 'a namespaced entry needs a namespace' });
    if (!e.namespaced && e.namespace !== undefined) ctx.addIssue({ code: 'custom', path: ['namespace'], message: 'a cluster-scoped entry has no namespace' });
    let want: string;
    try {
      want = objectPath(e);
    } catch {
      return; // a bad name or namespace, reported on its own field
    }
    if (e.path !== want) ctx.addIssue({ code: 'custom', path: ['path'], message: `is ${JSON.stringify(e.path)}; this entry's file is ${want}` });
  });

/** One resource set of the selection (prune deletes within it). */
const resourceSetSchema = z.object({
  apiVersion,
  kinds: names.optional(),
  kindsRegexp: regexString.optional(),
  names: names.optional(),
  nameRegexp: regexString.optional(),
  namespaces: z.array(dnsLabel).optional(),
  namespaceRegexp: regexString.optional(),
  labelSelector: z.string().optional(),
  fieldSelector: z.string().optional(),
  excludeKinds: names.optional(),
  excludeNameRegexps: z.array(regexString).optional(),
  excludeNamespaces: z.array(dnsLabel).optional(),
});

const nullableString = z.string().nullable();

/** The whole manifest. */
export const manifestSchema = z
  .object({
    formatVersion: z.number().int().min(1),
    cronflockVersion: z.string(),
    kubernetesVersion: z.string(),
    clusterId: z.string(),
    createdAt: z.string().refine((s) => Number.isFinite(Date.parse(s)), 'must be an ISO-8601 time'),
    schedule: nullableString,
    occurrence: nullableString,
    dueTime: nullableString,
    manual: z.boolean(),
    name: z.string().min(1),
    selection: z.object({ resourceSets: z.array(resourceSetSchema) }),
    encryption: z.object({ algorithm: z.string(), keyId: z.string() }).nullable(),
    objects: z.array(manifestEntrySchema),
    counts: z.record(z.string(), z.number().int().min(0)),
  })
  .superRefine((m, ctx) => {
    const paths = new Map<string, number>();
    const uids = new Map<string, number>();
    const counts: Record<string, number> = {};
    m.objects.forEach((e, i) => {
      const p = paths.get(e.path);
      if (p !== undefined) ctx.addIssue({ code: 'custom', path: ['objects', i, 'path'], message: `${e.path} is also objects[${p}]` });
      else paths.set(e.path, i);
      // Owner references are rewritten by uid: two entries with one uid would give a dependent the wrong owner.
      const u = e.uid === '' ? undefined : uids.get(e.uid);
      if (u !== undefined) ctx.addIssue({ code: 'custom', path: ['objects', i, 'uid'], message: `${e.uid} is also the uid of objects[${u}]` });
      else if (e.uid !== '') uids.set(e.uid, i);
      const k = e.group ? `${e.resource}.${e.group}` : e.resource;
      counts[k] = (counts[k] ?? 0) + 1;
    });
    for (const k of new Set([...Object.keys(counts), ...Object.keys(m.counts)])) {
      if (counts[k] !== m.counts[k]) ctx.addIssue({ code: 'custom', path: ['counts', k], message: `is ${m.counts[k] ?? 'missing'}; the objects hold ${counts[k] ?? 0}` });
    }
  });

/** Where in the manifest and what: `objects[3].namespace: must be a DNS-1123 label …`. */
export function describeIssue(issue: z.core.$ZodIssue): string {
  const path = issue.path.map((p, i) => (typeof p === 'number' ? `[${p}]` : i === 0 ? String(p) : `.${String(p)}`)).join('');
  return `${path || '(top level)'}: ${issue.message}`;
}

/**
 * Validates a parsed manifest. Returns it typed, or the issues (at most `maxIssues`, each `field.path: what`),
 * so the caller can name the archive. A manifest whose `formatVersion` is newer than the reader's is the
 * caller's check, before this one (its fields may differ).
 */
export function validateManifest(value: unknown, maxIssues = 5): { manifest: BackupManifest } | { issues: string[]; more: number } {
  const r = manifestSchema.safeParse(value);
  if (r.success) return { manifest: r.data as BackupManifest };
  const issues = r.error.issues.map(describeIssue);
  return { issues: issues.slice(0, maxIssues), more: Math.max(0, issues.length - maxIssues) };
}
