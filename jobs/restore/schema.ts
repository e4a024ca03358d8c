/**
 * Parameters of `kind: restore`: which backup (a name, or the newest of a schedule), where it is and with which
 * keys (the same `storage:` and `encryption:` blocks as the backup job, so they can be copied), prune, dry run,
 * and the lock. Durations are strings in the file (`15s`) and milliseconds after validation.
 *
 * `lockWait` defaults to twice `lockTtl`'s default: when a claimant dies mid-restore, the re-claim (seconds later,
 * on another replica) finds the restore lock still leased to the dead claimant until `lockTtl` passes; it must wait
 * that out to resume rather than fail.
 */
import { z } from 'zod';
import { contextField, kubeconfigField, qpsField } from '../kube-target-schema.js';
import { durationMs } from '../../runner/validate/zod-duration.js';
import { archiveLimitsSchema } from '../backup/limits.js';
import { keySourceSchema, storageSchema } from '../backup/schema.js';

/** `latest:<schedule>`: the newest published backup of that schedule. */
export const LATEST_PREFIX = 'latest:';

/** The `job:` block of a restore schedule. */
export const restoreJobSchema = z.strictObject({
  kind: z.literal('restore').describe('restore Kubernetes objects from a backup archive (plan first, in dependency order, one restore per cluster at a time)'),
  kubeconfig: kubeconfigField.describe('kubeconfig path of the target cluster (relative to the schedule file); default: KUBECONFIG, ~/.kube/config, in-cluster'),
  context: contextField,
  backup: z
    .string()
    .min(1)
    .regex(/^(latest:[a-z0-9]([a-z0-9-]*[a-z0-9])?|[^/\s]+)$/, 'must be an archive name (e.g. nightly-20261130T020000Z.tar.gz.enc) or latest:<schedule>')
    .describe('archive name in the storage, or latest:<schedule> for the newest backup that schedule published'),
  storage: storageSchema.describe('where the archives are: the backup job\'s storage block ({type: local, directory} or {type: s3, bucket, ...})'),
  encryption: z
    .strictObject({
      key: keySourceSchema.describe('the key-encryption key: {secret: {namespace, name, key}}, {file} or {env}'),
      previousKeys: z.array(keySourceSchema).optional().describe('older keys, for archives written before a key rotation'),
    })
    .optional()
    .describe('keys of encrypted archives (the backup job\'s encryption block; the archive names the key id it needs)'),
  prune: z.boolean().default(false).describe("delete objects the backup's own selection selects now but the backup does not contain (never protected ones); default false"),
  allowUnauthenticatedPrune: z
    .boolean()
    .default(false)
    .describe('prune also from a plain (not encrypted, so not authenticated) archive, whose selection anyone who can write to the storage could have written; default false'),
  limits: archiveLimitsSchema
    .optional()
    .describe('what an archive may hold at most, checked as it is read (defaults: maxObjectSize 8Mi, maxManifestSize 128Mi, maxObjects 250000, maxTotalSize 1Gi, maxCompressionRatio 200)'),
  dryRun: z.boolean().default(false).describe('only plan: a server-side dry run of every object, recorded as the result; nothing is written'),
  lockTtl: durationMs.default(15_000).describe('lease of the per-cluster restore lock, renewed every third of it (default 15s)'),
  lockWait: durationMs
    .default(30_000)
    .describe("how long to wait for another restore of the same cluster (default 30s: longer than lockTtl, so a re-claimed restore outlasts its dead claimant's lease and resumes)"),
  concurrency: z.number().int().min(1).max(50).default(5).describe('applies in flight at once (default 5)'),
  crdTimeout: durationMs.default(60_000).describe('how long a restored CRD may take to become Established (default 60s)'),
  qps: qpsField,
});

/** Validated parameters (durations in ms). */
export type RestoreParams = z.output<typeof restoreJobSchema>;
