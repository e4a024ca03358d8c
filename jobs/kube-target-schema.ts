/**
 * The schedule-file fields that say which cluster a Kubernetes job kind (job, cleanup, backup, restore) talks to
 * and how fast: one definition, so that the four kinds accept and describe them alike. Only zod here: the schemas
 * load without the Kubernetes client.
 */
import { z } from 'zod';

/** `kubeconfig`: path relative to the schedule file; absent: KUBECONFIG, ~/.kube/config, in-cluster. */
export const kubeconfigField = z
  .string()
  .min(1)
  .optional()
  .describe('kubeconfig path (relative to the schedule file); default: KUBECONFIG, ~/.kube/config, in-cluster');

/** `context`: a kubeconfig context; absent: its current-context. */
export const contextField = z.string().min(1).optional().describe('kubeconfig context (default: its current-context)');

/** `qps`: client-side request rate in requests per second (> 0), default 20. */
export const qpsField = z.number().positive().default(20).describe('client-side request rate (default 20/s)');
