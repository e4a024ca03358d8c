/**
 * What the history says about occurrences, as zod schemas: the one definition of these shapes for the code that
 * reads them (runner/history/), the HTTP API that serves them and its OpenAPI document (runner/api/). Times are
 * UTC ms on the Redis clock.
 */
import { z } from 'zod';

/** The named schemas of the HTTP API: each becomes a component of its OpenAPI document (runner/api/openapi.ts). */
export const apiSchemas = z.registry<{ id: string }>();

/** States of an occurrence (see runner/records/runs.ts): open ones and final ones. */
export const runStateSchema = z.enum(['scheduled', 'running', 'retrying', 'succeeded', 'failed', 'missed', 'skipped']);
export type RunStateName = z.infer<typeof runStateSchema>;

/** The final states: what the history keeps. */
export const FINAL_STATES = ['succeeded', 'failed', 'missed', 'skipped'] as const;

/** Why a claim was taken: the first one, a retry after a failed attempt, or a re-claim after a stall or a hand-over. */
export const claimReasonSchema = z.enum(['first', 'retry', 'stalled', 'handover']);

/** One attempt (claim) of an occurrence. */
export const attemptSchema = z
  .object({
    attempt: z.number().int().describe('1 for the first claim'),
    fencingToken: z.number().int().describe('the fencing token this claim got (grows with every claim)'),
    replica: z.string().describe('the replica that claimed'),
    startMs: z.number().describe('when the claim was taken (Redis ms)'),
    latenessMs: z.number().describe('start minus fire time'),
    why: claimReasonSchema,
  })
  .register(apiSchemas, { id: 'Attempt' });
export type Attempt = z.infer<typeof attemptSchema>;

/** One occurrence: from its run record while kept (`--retention`), else from the history (`--history`). */
export const occurrenceSchema = z
  .object({
    key: z.string().describe('<schedule>@<due ISO>[~tag]'),
    schedule: z.string(),
    origin: z.enum(['schedule', 'manual', 'backfill', 'resume']),
    state: runStateSchema,
    reason: z.string().optional().describe('why it was missed, skipped or failed'),
    dueMs: z.number(),
    fireMs: z.number(),
    startMs: z.number().optional().describe('start of its first attempt'),
    endMs: z.number().optional(),
    latenessMs: z.number().optional().describe('first start minus fire time'),
    error: z.string().optional(),
    result: z.unknown().optional().describe("the job's return value (JSON)"),
    replica: z.string().optional().describe('the replica that closed it, when it never ran'),
    plannedBy: z.string().optional().describe('who asked for it (trigger, backfill, resume)'),
    refused: z.number().int().describe('completions refused because their fencing token was stale'),
    attempts: z.array(attemptSchema),
    from: z.enum(['record', 'history']).describe('where this view comes from'),
  })
  .register(apiSchemas, { id: 'Occurrence' });
export type OccurrenceView = z.infer<typeof occurrenceSchema>;

/** One log line of an occurrence. */
export const logLineSchema = z
  .object({
    attempt: z.number().int().describe('0: an engine line about the occurrence outside an attempt'),
    timeMs: z.number().optional(),
    level: z.string(),
    msg: z.string(),
    fields: z.record(z.string(), z.unknown()).describe('the line\'s other fields'),
  })
  .register(apiSchemas, { id: 'LogLine' });
export type LogLine = z.infer<typeof logLineSchema>;
