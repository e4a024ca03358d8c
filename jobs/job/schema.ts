/**
 * Parameters of `kind: job`, the CronJob replacement: the `jobTemplate` of a Kubernetes CronJob (a `batch/v1`
 * JobTemplateSpec) and the CronJob's history limits. The template is checked here for what would otherwise
 * fail only at run time (a pod template without containers, `restartPolicy: Always`, a name cronflock sets);
 * the API server validates the rest when the Job is created.
 */
import { z } from 'zod';
import { contextField, kubeconfigField, qpsField } from '../kube-target-schema.js';
import type { ScheduleIssue } from '../types.js';

/** Label every Job (and its pods) carries: the schedule's name. Lists a schedule's Jobs for history and policies. */
export const SCHEDULE_LABEL = 'cronflock.io/schedule';
/** Annotation: the occurrence key the Job runs (`<schedule>@<due ISO>`). */
export const OCCURRENCE_ANNOTATION = 'cronflock.io/occurrence';
/** Annotation: the fencing token of the claim that created or last adopted the Job. */
export const FENCING_TOKEN_ANNOTATION = 'cronflock.io/fencing-token';
/** Annotation: the occurrence's due time, RFC 3339 UTC (the CronJob controller's scheduled time). */
export const SCHEDULED_TIME_ANNOTATION = 'cronflock.io/scheduled-time';

/**
 * What the kind does to `jobs.batch` in the Jobs' namespace (get, create, adopt, watch, list the schedule's Jobs,
 * delete for Replace and the history limits): the RBAC it needs. The Helm chart grants exactly these
 * (test/k8s/helm.test.ts checks it).
 */
export const JOB_KIND_VERBS = ['create', 'delete', 'get', 'list', 'patch', 'watch'] as const;

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const stringMap = z.record(z.string(), z.string());

const podTemplateSchema = z.looseObject({
  metadata: z.looseObject({ labels: stringMap.optional(), annotations: stringMap.optional() }).optional(),
  spec: z.looseObject({
    restartPolicy: z.enum(['Never', 'OnFailure'], {
      error: "must be Never or OnFailure (a Job's pods may not restart Always; the API server refuses it)",
    }),
    containers: z
      .array(z.looseObject({ name: z.string().regex(DNS_LABEL, 'must be a DNS-1123 label'), image: z.string().min(1, 'must not be empty') }))
      .min(1, 'must list at least one container'),
  }),
});

/** A `batch/v1` JobTemplateSpec, as in a CronJob's `spec.jobTemplate`. */
export const jobTemplateSchema = z
  .strictObject({
    metadata: z
      .strictObject({
        labels: stringMap.optional().describe('labels of the Job'),
        annotations: stringMap.optional().describe('annotations of the Job'),
      })
      .optional()
      .describe('labels and annotations of each Job (its name, namespace and owner are set by cronflock)'),
    spec: z
      .looseObject({
        template: podTemplateSchema.describe('the pod template (spec.template of a batch/v1 Job)'),
        activeDeadlineSeconds: z.int().min(1).optional().describe("the Job's own deadline; the schedule's timeout sets it too (the shorter wins)"),
      })
      .describe('a batch/v1 JobSpec: template, backoffLimit, completions, parallelism, ttlSecondsAfterFinished, ...'),
  })
  .superRefine((t, ctx) => {
    for (const where of [
      ['metadata', 'labels'],
      ['spec', 'template', 'metadata', 'labels'],
    ] as const) {
      const labels = where.length === 2 ? t.metadata?.labels : t.spec.template.metadata?.labels;
      if (labels && SCHEDULE_LABEL in labels) {
        ctx.addIssue({ code: 'custom', path: [...where, SCHEDULE_LABEL], message: 'is set by cronflock (the schedule name): remove it' });
      }
    }
  });

/** The `job:` block of a `kind: job` schedule. */
export const jobJobSchema = z.strictObject({
  kind: z.literal('job').describe('create one Kubernetes batch Job per occurrence (the CronJob replacement) and wait for it to finish'),
  kubeconfig: kubeconfigField,
  context: contextField,
  namespace: z
    .string()
    .regex(DNS_LABEL, 'must be a DNS-1123 label (a namespace name)')
    .optional()
    .describe("namespace of the Jobs (default: the kubeconfig context's namespace, or the pod's own in-cluster)"),
  jobTemplate: jobTemplateSchema.describe("the Jobs to create: a CronJob's spec.jobTemplate (batch/v1 JobTemplateSpec)"),
  successfulJobsHistoryLimit: z.int().min(0).default(3).describe("finished Jobs of this schedule that succeeded to keep (default 3, as CronJob); older ones are deleted"),
  failedJobsHistoryLimit: z.int().min(0).default(1).describe('failed Jobs of this schedule to keep (default 1, as CronJob)'),
  owner: z
    .strictObject({
      apiVersion: z.string().min(1),
      kind: z.string().min(1),
      name: z.string().min(1),
      uid: z.string().min(1),
    })
    .optional()
    .describe(
      "controller owner of the Jobs (set by cronflock for a schedule from a Schedule resource: its Jobs are deleted with it); must live in the Jobs' namespace",
    ),
  qps: qpsField,
});

/** Validated parameters. */
export type JobJobParams = z.output<typeof jobJobSchema>;

/**
 * Schedule fields `kind: job` cannot honour: `retries` (a retry of an occurrence would find that occurrence's
 * failed Job again, by its name; the Job retries its own pods with `jobTemplate.spec.backoffLimit`).
 */
export function checkJobSchedule(schedule: Readonly<Record<string, unknown>>): ScheduleIssue[] {
  const retries = schedule.retries;
  if (typeof retries === 'number' && retries > 0) {
    return [
      {
        path: ['retries'],
        message:
          "kind: job does not retry at the schedule level (an occurrence has one Job, found again by its name on a retry); set jobTemplate.spec.backoffLimit, which retries the Job's pods, and remove retries",
      },
    ];
  }
  return [];
}
