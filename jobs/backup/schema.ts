/**
 * Parameters of `kind: backup`: what to back up (resource sets or presets), where (a local directory or S3),
 * encryption, retention, and the client's limits. Durations are strings in the file (`30d`) and milliseconds
 * after validation.
 */
import { z } from 'zod';
import { contextField, kubeconfigField, qpsField } from '../kube-target-schema.js';
import { regexString } from '../../runner/validate/zod-regex.js';
import { durationMs } from '../../runner/validate/zod-duration.js';

/** Built-in selections (see presets.ts). */
export const BACKUP_PRESETS = ['namespace-apps', 'cluster-config'] as const;

const validRegex = regexString;

const name = z.string().min(1);

const resourceSetSchema = z
  .strictObject({
    preset: z.enum(BACKUP_PRESETS).optional().describe('a built-in selection: namespace-apps (workloads, config, services of namespaces) or cluster-config (CRDs, RBAC, namespaces, storage classes, admission)'),
    apiVersion: z.string().min(1).optional().describe('e.g. v1, apps/v1, example.com/v1 (required without preset)'),
    kinds: z.array(name).optional().describe('kinds (Kind or plural resource name, e.g. ConfigMap or configmaps); with kindsRegexp: either matches; neither: every listable kind of apiVersion'),
    kindsRegexp: validRegex.optional().describe('kinds whose Kind or plural name matches this regular expression'),
    names: z.array(name).optional().describe('only objects with these names (with nameRegexp: either matches)'),
    nameRegexp: validRegex.optional().describe('only objects whose name matches this regular expression'),
    namespaces: z.array(name).optional().describe('only these namespaces (with namespaceRegexp: either matches; neither: all)'),
    namespaceRegexp: validRegex.optional().describe('only namespaces matching this regular expression'),
    labelSelector: z.string().min(1).optional().describe('label selector, e.g. app=web,tier!=db'),
    fieldSelector: z.string().min(1).optional().describe('field selector (fields the kinds support)'),
    excludeKinds: z.array(name).optional().describe('never these kinds (Kind or plural name)'),
    excludeNameRegexps: z.array(validRegex).optional().describe('leave out objects whose name matches any of these'),
    excludeNamespaces: z.array(name).optional().describe('never these namespaces'),
  })
  .superRefine((s, ctx) => {
    if (!s.preset && !s.apiVersion) ctx.addIssue({ code: 'custom', message: 'apiVersion is required unless a preset is given', path: ['apiVersion'] });
    if (s.preset) {
      for (const f of ['apiVersion', 'kinds', 'kindsRegexp', 'excludeKinds', 'fieldSelector'] as const) {
        if (s[f] !== undefined) ctx.addIssue({ code: 'custom', message: `preset ${s.preset} chooses the kinds itself: remove ${f}`, path: [f] });
      }
    }
    if (s.preset === 'namespace-apps' && !s.namespaces && !s.namespaceRegexp) {
      ctx.addIssue({ code: 'custom', message: 'preset namespace-apps needs namespaces or namespaceRegexp (which namespaces to back up)', path: ['namespaces'] });
    }
  });

const secretKeyRef = z.strictObject({
  namespace: name.describe('namespace of the Secret'),
  name: name.describe('name of the Secret'),
  key: name.describe('key in the Secret'),
});

/** The `storage:` block (shared with `kind: restore`): a local directory or S3. */
export const storageSchema = z.discriminatedUnion('type', [
  z.strictObject({
    type: z.literal('local').describe('a directory (e.g. a mounted volume)'),
    directory: z.string().min(1).describe('directory of the archives (relative to the schedule file); created when missing'),
  }),
  z.strictObject({
    type: z.literal('s3').describe('S3 or an S3-compatible server (MinIO, Ceph, moto)'),
    bucket: z.string().min(3).describe('bucket (must exist)'),
    prefix: z.string().optional().describe('key prefix, e.g. prod/cluster-a/'),
    endpoint: z.url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL' }).optional().describe('endpoint of an S3-compatible server, e.g. http://minio:9000 (default: AWS)'),
    region: z.string().min(1).optional().describe('region (default us-east-1)'),
    forcePathStyle: z.boolean().optional().describe('path-style URLs (default: true when endpoint is set, as MinIO needs)'),
    credentials: z
      .union([
        z.strictObject({
          env: z.strictObject({
            accessKeyId: name.default('AWS_ACCESS_KEY_ID').describe('variable holding the access key id'),
            secretAccessKey: name.default('AWS_SECRET_ACCESS_KEY').describe('variable holding the secret access key'),
          }),
        }),
        z.strictObject({
          secret: z.strictObject({
            namespace: name,
            name,
            accessKeyIdKey: name.default('accessKeyId'),
            secretAccessKeyKey: name.default('secretAccessKey'),
          }),
        }),
      ])
      .optional()
      .describe("credentials from environment variables or a Secret (default: the AWS SDK's chain: env, profile, IRSA)"),
  }),
]);

/** Where a key-encryption key comes from (shared with `kind: restore`): a Secret key, a file or an env var. */
export const keySourceSchema = z.union([
  z.strictObject({ secret: secretKeyRef.describe('a key of a Kubernetes Secret holding base64 (or hex) of 32 random bytes') }),
  z.strictObject({ file: z.string().min(1).describe('a file (relative to the schedule file) holding base64 (or hex) of 32 random bytes') }),
  z.strictObject({ env: name.describe('an environment variable holding base64 (or hex) of 32 random bytes') }),
]);

/** The `job:` block of a backup schedule. */
export const backupJobSchema = z
  .strictObject({
    kind: z.literal('backup').describe('back up Kubernetes objects to a tar.gz archive (optionally encrypted) in a directory or S3'),
    kubeconfig: kubeconfigField,
    context: contextField,
    resourceSets: z.array(resourceSetSchema).min(1).describe('what to back up: resource sets or presets; an object selected by several is stored once'),
    storage: storageSchema.describe('where archives go: {type: local, directory} or {type: s3, bucket, ...}'),
    encryption: z
      .strictObject({ key: keySourceSchema.describe('the key-encryption key: {secret: {namespace, name, key}}, {file} or {env}') })
      .optional()
      .describe('encrypt the whole archive (AES-256-GCM, random data key wrapped by this key); needed when Secrets are selected'),
    allowPlaintextSecrets: z.boolean().default(false).describe('allow a backup that selects Secrets without encryption (default: refused)'),
    retention: z
      .strictObject({
        count: z.number().int().min(1).optional().describe("keep this many of the schedule's newest successful backups"),
        maxAge: durationMs.optional().describe("delete the schedule's backups older than this (by due time), e.g. 30d"),
      })
      .optional()
      .describe("after a successful backup, delete this schedule's older backups (never manual ones or other schedules')"),
    pageSize: z.number().int().min(1).max(5000).default(500).describe('objects per list request (default 500)'),
    qps: qpsField,
  })
  .superRefine((p, ctx) => {
    if (p.retention && p.retention.count === undefined && p.retention.maxAge === undefined) {
      ctx.addIssue({ code: 'custom', message: 'retention needs count or maxAge', path: ['retention'] });
    }
  });

/** Validated parameters (durations in ms). */
export type BackupParams = z.output<typeof backupJobSchema>;
/** One validated resource set or preset. */
export type BackupResourceSetParams = BackupParams['resourceSets'][number];
