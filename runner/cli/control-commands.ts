/**
 * `cronflock trigger | backfill | suspend | resume`: operate a running flock through Redis (see
 * runner/engine/control.ts). They need the same Redis and namespace as the replicas.
 */
import { Command, InvalidArgumentError } from 'commander';
import { durationArg, isoTimeArg, positiveIntArg } from './arg-parsers.js';
import { toRunRecord, type RunRecord } from '../records/runs.js';
import { formatDurationMs } from '../time/duration.js';
import { hostname } from 'node:os';
import {
  BACKFILL_CANCELLED,
  BACKFILL_CONFIRM_ABOVE,
  backfill,
  cancelBackfill,
  ControlError,
  resume,
  suspend,
  trigger,
  type ControlContext,
} from '../engine/control.js';
import { closeLanes, openLanes } from '../engine/enqueue.js';
import { DEFAULT_OPTIONS } from '../engine/options.js';
import { RedisClock } from '../redis/clock.js';
import { Keyspace } from '../redis/keys.js';
import { Store } from '../redis/store.js';
import { settlesWithin } from '../time/wait.js';
import { addOneShotRedisOptions, CliError, withOneShotRedis, type RedisFlags } from './redis-target.js';
import { recordAudit, type AuditAction } from '../history/audit.js';
import { userInfo } from 'node:os';

/**
 * Who a control command acts as: `user@host` (`unknown@host` without a user name, e.g. a container without a
 * passwd entry). The one rule for the audit log's `who` and what the action records (a suspension's `by`, an
 * occurrence's `plannedBy`), so that `suspend` and `audit` name the same person.
 */
export function cliIdentity(): string {
  let user = 'unknown';
  try {
    user = userInfo().username;
  } catch {
    /* no user name */
  }
  return `${user}@${hostname()}`;
}

/** Records a CLI action that changed something in the audit log (runner/history/audit.ts), as {@link cliIdentity}. */
async function audit(c: ControlContext, action: AuditAction, schedule: string, reason: string | undefined, outcome: string): Promise<void> {
  await recordAudit(c.redis, c.keys, { who: c.by, via: 'cli', action, schedule, reason, outcome });
}

/** How long `trigger` waits by default for its occurrence to start or be skipped (`--wait`), and at most. */
export const TRIGGER_WAIT_MS = 5_000;
export const MAX_TRIGGER_WAIT_MS = 60_000;

/** `--wait`: a duration up to {@link MAX_TRIGGER_WAIT_MS}; longer is refused (not shortened silently). */
const waitArg = (v: string): number => {
  const ms = durationArg(v);
  if (ms > MAX_TRIGGER_WAIT_MS) throw new InvalidArgumentError(`must be at most 60s (got ${v}); follow a longer run with cronflock runs`);
  return ms;
};

/**
 * The run record of `key` once it has left `scheduled` (started, or skipped/missed by the concurrency policy,
 * a blackout, a suspension …), polling every 100 ms for at most `waitMs`; still `scheduled` (or absent) then.
 */
async function firstOutcome(c: ControlContext, key: string, waitMs: number): Promise<RunRecord | null> {
  const deadline = Date.now() + waitMs;
  for (;;) {
    const r = toRunRecord(await c.redis.hgetall(c.keys.occurrence(key)));
    if ((r && r.state !== 'scheduled') || Date.now() >= deadline) return r;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/**
 * What `trigger` says about its occurrence: started (running, or already finished), not run (skipped or missed,
 * with the reason: e.g. Forbid with a run in progress; exit 1), or still queued after the wait. Each points at
 * `cronflock runs` to follow it.
 */
export function triggerOutcome(
  schedule: string,
  key: string,
  r: RunRecord | null,
  waitedMs: number,
): { state: string; reason?: string; runs: boolean; text: string } {
  const follow = `follow it with: cronflock runs --schedule ${schedule}`;
  const state = r?.state ?? 'scheduled';
  if (state === 'skipped' || state === 'missed') {
    return { state, ...(r?.reason ? { reason: r.reason } : {}), runs: false, text: `${key} was queued but not run: ${state}${r?.reason ? ` (${r.reason})` : ''}; ${follow}` };
  }
  if (state === 'scheduled') {
    const waited = waitedMs > 0 ? `, not started within ${formatDurationMs(waitedMs)} (it waits for a backlog slot; the concurrency policy applies when it starts)` : '';
    return { state, runs: true, text: `triggered ${key}: queued${waited}; ${follow}` };
  }
  return { state, ...(r?.reason ? { reason: r.reason } : {}), runs: true, text: `triggered ${key}: ${state}; ${follow}` };
}

type Flags = RedisFlags & { json?: boolean; reason?: string };

/** Connects, runs `fn` with a control context, and turns refusals and Redis errors into CLI errors. */
function withControl<T>(o: Flags, fn: (c: ControlContext) => Promise<T>): Promise<T> {
  return withOneShotRedis(o, 'Redis', async (redis) => {
    const keys = new Keyspace(o.namespace);
    const lanes = openLanes(redis, keys);
    const clock = new RedisClock(redis, undefined, keys.ns); // TIME from the node that owns our slot
    try {
      return await fn({
        redis,
        keys,
        store: new Store(redis, keys),
        lanes,
        clock,
        options: { retentionMs: DEFAULT_OPTIONS.retentionMs, prefetchMs: DEFAULT_OPTIONS.prefetchMs },
        by: cliIdentity(),
      });
    } catch (err) {
      if (err instanceof ControlError) throw new CliError(err.message);
      throw err;
    } finally {
      await settlesWithin(closeLanes(lanes), 2_000);
    }
  });
}

function common(c: Command): Command {
  addOneShotRedisOptions(c).option('--json', 'print JSON').option('--reason <text>', 'why (kept in the audit log: cronflock audit)');
  return c;
}

const print = (o: Flags, value: unknown, text: string): void => {
  process.stdout.write(o.json ? `${JSON.stringify(value, null, 2)}\n` : `${text}\n`);
};

/** Adds the control commands to the program. */
export function addControlCommands(program: Command): void {
  common(
    program
      .command('trigger')
      .description('run a schedule now, as a manual occurrence (the concurrency policy applies), and say how it starts')
      .argument('<schedule>', 'schedule name')
      .option('--wait <duration>', 'how long to wait for the occurrence to start or be skipped (0: do not wait; at most 60s)', waitArg, TRIGGER_WAIT_MS),
  ).action(async (schedule: string, o: Flags & { wait: number }) => {
    const { key, record } = await withControl(o, async (c) => {
      const k = await trigger(c, schedule);
      await audit(c, 'trigger', schedule, o.reason, `triggered ${k}`);
      return { key: k, record: await firstOutcome(c, k, o.wait) };
    });
    const out = triggerOutcome(schedule, key, record, o.wait);
    print(o, { occurrence: key, state: out.state, ...(out.reason ? { reason: out.reason } : {}) }, out.text);
    if (!out.runs) process.exitCode = 1;
  });

  common(
    program
      .command('backfill')
      .description(
        'run the occurrences due in a past range that have no record yet, oldest first, a few at a time across the flock ' +
          '(--backfill-concurrency of the replicas), never in place of a live occurrence',
      )
      .argument('<schedule>', 'schedule name')
      .option('--from <iso>', 'first due time to consider (inclusive)', isoTimeArg)
      .option('--to <iso>', 'last due time to consider (inclusive)', isoTimeArg)
      .option('--dry-run', 'print how many occurrences would be backfilled, and their first and last due times; write nothing')
      .option('--yes', `backfill a range of more than ${BACKFILL_CONFIRM_ABOVE} occurrences`)
      .option('--max <n>', 'refuse (and write nothing) if more than n occurrences would be backfilled', positiveIntArg)
      .option('--cancel', `drop the schedule's backfill occurrences that have not started (recorded skipped: ${BACKFILL_CANCELLED})`),
  ).action(async (schedule: string, o: Flags & { from?: number; to?: number; dryRun?: boolean; yes?: boolean; max?: number; cancel?: boolean }) => {
    if (o.cancel) {
      if (o.from !== undefined || o.to !== undefined || o.dryRun || o.yes || o.max !== undefined) {
        throw new CliError('--cancel takes only the schedule name: it cancels every backfill occurrence of it that has not started');
      }
      const r = await withControl(o, async (c) => {
        const x = await cancelBackfill(c, schedule);
        if (x.cancelled > 0) await audit(c, 'backfill-cancel', schedule, o.reason, `cancelled ${x.cancelled} backfill occurrence(s)`);
        return x;
      });
      print(o, r, `cancelled ${r.cancelled} backfill occurrence(s) of ${schedule} (recorded skipped: ${BACKFILL_CANCELLED}); ${r.started} already started and finish`);
      return;
    }
    if (o.from === undefined || o.to === undefined) {
      throw new CliError('backfill needs --from and --to (ISO 8601 times, e.g. --from 2026-01-01T00:00:00Z --to 2026-01-02T00:00:00Z), or --cancel');
    }
    const { from, to } = o;
    const r = await withControl(o, async (c) => {
      const x = await backfill(c, schedule, from, to, { dryRun: o.dryRun, yes: o.yes, max: o.max });
      if (!x.dryRun && x.count > 0) await audit(c, 'backfill', schedule, o.reason, `enqueued ${x.count} occurrence(s), due ${x.firstDueAt} to ${x.lastDueAt}`);
      return x;
    });
    const due = r.count > 0 ? `, due ${r.firstDueAt} to ${r.lastDueAt}` : '';
    const text = r.dryRun
      ? `would backfill ${r.count} occurrence(s) of ${schedule}${due}; ${r.existing.length} already have a record; nothing was written`
      : `enqueued ${r.count} occurrence(s) of ${schedule}${due}; ${r.existing.length} already had a record and were left alone`;
    print(o, r, text);
  });

  common(
    program
      .command('suspend')
      .description('suspend a schedule on every replica: its occurrences are recorded skipped until resume')
      .argument('<schedule>', 'schedule name')
      .option('--note <text>', 'why (shown by `cronflock status` and kept in the audit log; --reason says the same)'),
  ).action(async (schedule: string, o: Flags & { note?: string }) => {
    const note = o.note ?? o.reason;
    const s = await withControl(o, async (c) => {
      const x = await suspend(c, schedule, note);
      if (!x.alreadySuspended) await audit(c, 'suspend', schedule, note, `suspended ${schedule}`);
      return x;
    });
    const since = `since ${new Date(s.sinceMs).toISOString()} by ${s.by}${s.note ? `: ${s.note}` : ''}`;
    const backfill = s.backfillWaiting
      ? `; its ${s.backfillWaiting} backfill occurrence(s) wait until resume (backfill ${schedule} --cancel drops them)`
      : '';
    print(
      o,
      { schedule, ...s },
      s.alreadySuspended ? `${schedule} was already suspended (${since}); nothing changed${backfill}` : `suspended ${schedule}${backfill}`,
    );
  });

  common(
    program
      .command('resume')
      .description('resume a suspended schedule (onResume: latest runs the latest missed occurrence once)')
      .argument('<schedule>', 'schedule name'),
  ).action(async (schedule: string, o: Flags) => {
    const r = await withControl(o, async (c) => {
      const x = await resume(c, schedule, { via: 'cli', ...(o.reason !== undefined ? { reason: o.reason } : {}) });
      if (x.wasSuspended) await audit(c, 'resume', schedule, o.reason, `resumed ${schedule}${x.ran ? `; running ${x.ran}` : ''}`);
      return x;
    });
    const backfill = r.backfillWaiting ? `; ${r.backfillWaiting} backfill occurrence(s) go on` : '';
    const text = !r.wasSuspended
      ? `${schedule} was not suspended`
      : `resumed ${schedule}${r.definitionVersion !== undefined ? `; its stored definition no longer says suspend: true (version ${r.definitionVersion})` : ''}${r.ran ? `; running ${r.ran}` : ''}${r.note ? ` (${r.note})` : ''}${backfill}`;
    print(o, r, text);
  });
}
