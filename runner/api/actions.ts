/**
 * Actions on the flock from the HTTP API: the same operations as `cronflock trigger | suspend | resume |
 * backfill` (runner/engine/control.ts, with its rules: backfill's dry run, 100-occurrence confirmation and --max),
 * each recorded in the audit log (runner/history/audit.ts) with who, what and why once it changed something.
 */
import { backfill, BACKFILL_CANCELLED, type BackfillNames, cancelBackfill, resume, suspend, trigger, type ControlContext } from '../engine/control.js';
import { recordAudit, type AuditAction } from '../history/audit.js';

/** The API's names of backfill's inputs (its body fields), for its refusals and their `field`. */
export const API_BACKFILL_NAMES: BackfillNames = { from: 'body.from', to: 'body.to', dryRun: 'body.dryRun', yes: 'body.yes', max: 'body.max' };

/** One action asked for. Times are UTC ms. */
export type ActionRequest =
  | { action: 'trigger'; schedule: string; reason?: string }
  | { action: 'suspend'; schedule: string; reason?: string }
  | { action: 'resume'; schedule: string; reason?: string }
  | { action: 'backfill'; schedule: string; fromMs: number; toMs: number; dryRun?: boolean; yes?: boolean; max?: number; reason?: string }
  | { action: 'backfill-cancel'; schedule: string; reason?: string };

/** What an action did. */
export interface ActionOutcome {
  /** False when it changed nothing (already suspended, not suspended, a dry run). */
  done: boolean;
  message: string;
  detail: Record<string, unknown>;
  /** Id of its audit entry (null when it changed nothing). */
  auditId: string | null;
}

/**
 * Performs `a` as `who` and records it in the audit log when it changed something.
 * @throws ControlError when the operation refuses (unknown schedule, a too large backfill …): nothing changed.
 */
export async function performAction(c: ControlContext, who: { who: string; via: 'api' | 'cli' | 'library' }, a: ActionRequest): Promise<ActionOutcome> {
  let done = true;
  let message: string;
  let detail: Record<string, unknown>;
  switch (a.action) {
    case 'trigger': {
      const key = await trigger(c, a.schedule);
      message = `triggered ${key}`;
      detail = { occurrence: key };
      break;
    }
    case 'suspend': {
      const s = await suspend(c, a.schedule, a.reason);
      done = !s.alreadySuspended;
      message = s.alreadySuspended ? `${a.schedule} was already suspended (by ${s.by}${s.note ? `: ${s.note}` : ''}); nothing changed` : `suspended ${a.schedule}`;
      detail = { ...s };
      break;
    }
    case 'resume': {
      const r = await resume(c, a.schedule, { via: who.via, ...(a.reason !== undefined ? { reason: a.reason } : {}) });
      done = r.wasSuspended;
      const cleared = r.definitionVersion !== undefined ? `; its stored definition no longer says suspend: true (version ${r.definitionVersion})` : '';
      message = r.wasSuspended ? `resumed ${a.schedule}${cleared}${r.ran ? `; running ${r.ran}` : ''}${r.note ? ` (${r.note})` : ''}` : `${a.schedule} was not suspended; nothing changed`;
      detail = { ...r };
      break;
    }
    case 'backfill': {
      const r = await backfill(c, a.schedule, a.fromMs, a.toMs, { dryRun: a.dryRun, yes: a.yes, max: a.max, names: API_BACKFILL_NAMES });
      done = !r.dryRun && r.count > 0;
      const due = r.count > 0 ? `, due ${r.firstDueAt} to ${r.lastDueAt}` : '';
      message = r.dryRun
        ? `would backfill ${r.count} occurrence(s) of ${a.schedule}${due}; ${r.existing.length} already have a record; nothing was written`
        : `enqueued ${r.count} occurrence(s) of ${a.schedule}${due}; ${r.existing.length} already had a record`;
      detail = { dryRun: r.dryRun, count: r.count, firstDueAt: r.firstDueAt, lastDueAt: r.lastDueAt, existing: r.existing.length };
      break;
    }
    case 'backfill-cancel': {
      const r = await cancelBackfill(c, a.schedule);
      done = r.cancelled > 0;
      message = `cancelled ${r.cancelled} backfill occurrence(s) of ${a.schedule} (recorded skipped: ${BACKFILL_CANCELLED}); ${r.started} already started and finish`;
      detail = { ...r };
      break;
    }
  }
  const auditId = done
    ? await recordAudit(c.redis, c.keys, { ...who, action: a.action as AuditAction, schedule: a.schedule, reason: a.reason, outcome: message })
    : null;
  return { done, message, detail, auditId };
}
