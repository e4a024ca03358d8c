/**
 * Parameters of `kind: cleanup`: which objects (resource selectors or presets), how old, what to do with them,
 * and the safety limits. Durations are strings in the file (`1h`, `7d`) and milliseconds after validation.
 */
import { z } from 'zod';
import { contextField, kubeconfigField, qpsField } from '../kube-target-schema.js';
import { regexString } from '../../runner/validate/zod-regex.js';
import { durationMs } from '../../runner/validate/zod-duration.js';
import { compileFilter } from './filter.js';

/** Namespaces no rule touches unless `allowProtectedNamespaces` names them. */
export const PROTECTED_NAMESPACES = ['kube-system', 'kube-public', 'kube-node-lease'] as const;

/** Label or annotation that protects an object from every rule (value `"true"`). */
export const PROTECT_KEY = 'cronflock.io/protect';

/** TTL annotations honoured by `ttl: true` (see ttl.ts). */
export const TTL_ANNOTATIONS = ['cronflock.io/ttl', 'janitor/ttl', 'janitor/expires', 'cleanup.kyverno.io/ttl'] as const;

/** Built-in selections (see presets.ts). */
export const PRESETS = ['finished-jobs', 'finished-pods', 'unused-configmaps', 'unused-secrets'] as const;

const validRegex = regexString;

const selectorSchema = z
  .strictObject({
    preset: z.enum(PRESETS).optional().describe('a built-in selection: finished-jobs, finished-pods, unused-configmaps, unused-secrets (apiVersion/kind implied)'),
    apiVersion: z.string().min(1).optional().describe('e.g. v1, batch/v1, example.com/v1 (required without preset)'),
    kind: z.string().min(1).optional().describe('e.g. Job, Pod, ConfigMap, or a CRD kind (required without preset)'),
    namespaces: z.array(z.string().min(1)).optional().describe('only these namespaces (default: all)'),
    namespaceSelector: z.string().min(1).optional().describe('only namespaces with these labels, e.g. team=a,env!=prod'),
    excludeNamespaces: z.array(z.string().min(1)).default([]).describe('never these namespaces'),
    labelSelector: z.string().min(1).optional().describe('label selector of the objects, e.g. app=batch'),
    fieldSelector: z.string().min(1).optional().describe('field selector of the objects (fields the kind supports)'),
    nameRegex: validRegex.optional().describe('object names must match this regular expression'),
    filter: z
      .string()
      .min(1)
      .superRefine((e, ctx) => {
        try {
          compileFilter(e);
        } catch (err) {
          ctx.addIssue({ code: 'custom', message: `is not a valid CEL expression: ${(err instanceof Error ? err.message : String(err)).split('\n')[0]}` });
        }
      })
      .optional()
      .describe('CEL expression over `object` (and `now`); only objects for which it is true are selected, e.g. object.status.phase == "Failed"'),
    olderThan: durationMs.optional().describe('minimum age, e.g. 1h, 7d'),
    from: z.enum(['created', 'finished']).default('created').describe('age from creationTimestamp or from when the object finished'),
    ttl: z.boolean().default(false).describe('select objects past their TTL annotation (cronflock.io/ttl, janitor/ttl, janitor/expires, cleanup.kyverno.io/ttl)'),
    includeControlled: z.boolean().default(false).describe('also act on objects with a controller owner (default: skipped)'),
    includeCronJobOwned: z.boolean().default(false).describe('finished-jobs: also Jobs owned by a CronJob'),
    includeTerminating: z.boolean().default(false).describe('also objects already being deleted (default: skipped)'),
  })
  .superRefine((s, ctx) => {
    if (!s.preset && (!s.apiVersion || !s.kind)) {
      ctx.addIssue({ code: 'custom', message: 'apiVersion and kind are required unless a preset is given', path: s.apiVersion ? ['kind'] : ['apiVersion'] });
    }
    if (s.preset && (s.apiVersion || s.kind)) {
      ctx.addIssue({ code: 'custom', message: `preset ${s.preset} sets apiVersion and kind itself`, path: ['preset'] });
    }
    if (s.namespaces && s.namespaceSelector) {
      ctx.addIssue({ code: 'custom', message: 'use namespaces or namespaceSelector, not both', path: ['namespaceSelector'] });
    }
    if (s.olderThan === undefined && !s.ttl && (s.preset === 'finished-jobs' || s.preset === 'finished-pods')) {
      ctx.addIssue({ code: 'custom', message: `preset ${s.preset} needs olderThan`, path: ['olderThan'] });
    }
  });

/** The `job:` block of a cleanup schedule. */
export const cleanupJobSchema = z
  .strictObject({
    kind: z.literal('cleanup').describe('delete, scale down, label or report Kubernetes objects'),
    kubeconfig: kubeconfigField,
    context: contextField,
    resources: z.array(selectorSchema).min(1).describe('what to select: one or more resource selectors or presets'),
    action: z.enum(['delete', 'scale', 'patch', 'plan']).default('plan').describe('delete, scale (to zero), patch (labels/annotations) or plan (report only; default)'),
    patch: z
      .strictObject({
        labels: z.record(z.string(), z.string().nullable()).optional(),
        annotations: z.record(z.string(), z.string().nullable()).optional(),
      })
      .optional()
      .describe('action patch: labels and annotations to set (null removes one)'),
    propagationPolicy: z.enum(['Background', 'Foreground', 'Orphan']).default('Background').describe('delete: how dependents go (default Background)'),
    dryRun: z.boolean().default(false).describe('report what would be done (server-side dry run); write nothing'),
    allowProtectedNamespaces: z.array(z.string().min(1)).default([]).describe('protected namespaces (kube-system, kube-public, kube-node-lease, protectedNamespaces) this job may touch'),
    protectedNamespaces: z.array(z.string().min(1)).default([]).describe("more protected namespaces, e.g. cronflock's own"),
    maxCount: z.number().int().min(0).default(1000).describe('blast radius: abort before any write when more objects would be acted on (default 1000)'),
    maxPercent: z.number().min(0).max(100).default(100).describe('blast radius: abort when more than this percentage of the scanned objects would be acted on'),
    concurrency: z.number().int().min(1).max(50).default(5).describe('writes in flight at once (default 5)'),
    pageSize: z.number().int().min(1).max(5000).default(500).describe('objects per list request (default 500)'),
    qps: qpsField,
    notify: z
      .strictObject({
        on: z.enum(['always', 'changes', 'failure']).default('always').describe('when: after every run (default), only when something was acted on or failed, or only on failure'),
        webhook: z
          .strictObject({
            url: z.url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL' }).describe('receives a JSON summary (POST)'),
            secretEnv: z.string().min(1).optional().describe('environment variable holding the HMAC-SHA256 key (header x-cronflock-signature: t=<unix s>,v1=<hex>)'),
            retries: z.number().int().min(0).max(10).default(3).describe('retries on network errors, 429 and 5xx (default 3)'),
          })
          .optional(),
        slack: z
          .strictObject({
            webhookUrl: z.url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL' }).describe('Slack incoming-webhook URL'),
            retries: z.number().int().min(0).max(10).default(3),
          })
          .optional(),
      })
      .optional()
      .describe('deprecated: read as the schedule-level notify (on: failure → [failed]; always, changes → [failed, succeeded]); write notify: beside job: instead'),
    reportObjects: z.number().int().min(0).max(1000).default(20).describe('objects listed in the stored report at most (counts are always complete)'),
  })
  .superRefine((p, ctx) => {
    if (p.action === 'patch' && !p.patch?.labels && !p.patch?.annotations) {
      ctx.addIssue({ code: 'custom', message: 'action patch needs patch.labels or patch.annotations', path: ['patch'] });
    }
  });

/** Validated parameters (durations in ms). */
export type CleanupParams = z.output<typeof cleanupJobSchema>;
/** One validated selector. */
export type CleanupSelector = CleanupParams['resources'][number];
