/**
 * Concurrency groups and rate limits as written in a schedule file (issue 17, points 3 and 4):
 *
 * ```yaml
 * groups:
 *   cluster-prod: {maxConcurrent: 2, rateLimit: {max: 10, per: 1s}}
 * schedules:
 *   - name: cleanup-a
 *     group: cluster-prod
 *     rateLimit: {max: 1, per: 10s}     # this schedule's own limit, besides its group's
 * ```
 *
 * A group is named in the file that defines it; the same name in two files of a flock is one group flock-wide
 * (its slots and its bucket live in Redis under the name). What the limits mean at run time:
 * runner/redis/lua/includes/gates.lua.
 */
import { z } from 'zod';
import type { ConfigErrorCode } from './errors.js';
import { positiveDurationMs } from '../validate/zod-duration.js';
import { editDistance } from '../text/edit-distance.js';

/** Group names are DNS-1123 labels, like schedule names (schema.ts; not imported: schema.ts imports this file). */
const GROUP_NAME_PATTERN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/** `rateLimit: {max, per}`: at most `max` runs start in any window of length `per` (a sliding window). */
export const rateLimitSchema = z
  .strictObject({
    max: z.int('must be a whole number').min(1, 'must be at least 1').max(100_000, 'must be at most 100000').describe('The most runs that start in any window of length per.'),
    per: positiveDurationMs.describe('Length of the window, a duration such as 1s, 1m, 1h.'),
  })
  .describe(
    'At most max runs start in any window of length per, across the flock (on the Redis clock). A run over the limit starts as soon as the window allows, in fire-time order; it is recorded missed only past its starting deadline.',
  );

/** A rate limit as compiled: `perMs` in milliseconds. */
export interface RateLimit {
  max: number;
  perMs: number;
}

/** One group's limits: at least one of the two. */
export const groupSchema = z
  .strictObject({
    maxConcurrent: z
      .int('must be a whole number')
      .min(1, 'must be at least 1')
      .optional()
      .describe('The most runs of the group\'s schedules at once, across every replica of the flock.'),
    rateLimit: rateLimitSchema.optional(),
  })
  .superRefine((g, ctx) => {
    if (g.maxConcurrent === undefined && g.rateLimit === undefined) {
      ctx.addIssue({ code: 'custom', message: 'a group needs a limit: maxConcurrent, rateLimit or both', params: { code: 'SCHEMA_INVALID' satisfies ConfigErrorCode } });
    }
  })
  .describe('A concurrency group: schedules that name it with group: share its limits.');

/** `groups:` at the top of a schedule file: group name → limits. */
export const groupsSchema = z
  .record(
    z.string().regex(GROUP_NAME_PATTERN, 'a group name is a DNS-1123 label (lowercase letters, digits and "-")'),
    groupSchema,
  )
  .describe('Concurrency groups (name → limits) that schedules join with group: <name>. See README "Concurrency groups and rate limits".');

/** A group as compiled for the engine. */
export interface GroupLimits {
  name: string;
  /** null: no limit on runs at once. */
  maxConcurrent: number | null;
  /** null: no rate limit. */
  rateLimit: RateLimit | null;
}

/**
 * File-level check: every schedule's `group:` names a group of the file's `groups:`. The issue (code
 * GROUP_UNKNOWN) is at `schedules[i].group`, so the loader reports it with file:line:col; its hint names the
 * closest known group (did you mean) and lists them.
 */
export function checkGroupNames(value: unknown, ctx: z.RefinementCtx): void {
  const v = value as { groups?: unknown; schedules?: unknown } | null;
  if (v === null || typeof v !== 'object' || !Array.isArray(v.schedules)) return;
  const groups = v.groups !== null && typeof v.groups === 'object' && !Array.isArray(v.groups) ? Object.keys(v.groups) : [];
  v.schedules.forEach((s: unknown, i) => {
    const group = (s as { group?: unknown } | null)?.group;
    if (typeof group !== 'string' || groups.includes(group)) return;
    const near = groups.filter((k) => editDistance(k, group, 4) <= 2).slice(0, 3);
    const hint =
      groups.length === 0
        ? `define it at the top of this file: groups: {${group}: {maxConcurrent: 2}}`
        : `${near.length > 0 ? `did you mean ${near.map((n) => `"${n}"`).join(' or ')}? ` : ''}groups of this file: ${groups.join(', ')}`;
    ctx.addIssue({ code: 'custom', path: ['schedules', i, 'group'], message: `no group named "${group}" under groups: in this file`, params: { code: 'GROUP_UNKNOWN' satisfies ConfigErrorCode, hint } });
  });
}
