/**
 * `cronflock status`: the flock at a glance — live replicas, schedules (suspended ones with their note, next
 * fire time, last result, overdue occurrences) and the backlog. Reads a bounded amount whatever the number of
 * schedules (runner/records/status.ts).
 */
import { closeLanes, openLanes } from '../engine/enqueue.js';
import { Option, type Command } from 'commander';
import { Keyspace } from '../redis/keys.js';
import { readFlockStatus, type FlockStatus, type ScheduleStatus } from '../records/status.js';
import { settlesWithin } from '../time/wait.js';
import { durationArg, positiveIntArg } from './arg-parsers.js';
import { addOneShotRedisOptions, withOneShotRedis, type RedisFlags } from './redis-target.js';
import { formatSpanMs, iso, table } from './text.js';

const ago = (ms: number, nowMs: number): string => `${formatSpanMs(nowMs - ms)} ago`;

function lastResult(s: ScheduleStatus, nowMs: number): string {
  if (!s.last) return '-';
  const what = [s.last.state, s.last.reason && s.last.reason !== s.last.state ? s.last.reason : undefined, s.last.error]
    .filter(Boolean)
    .join(': ');
  const text = what.length > 60 ? `${what.slice(0, 59)}…` : what;
  return `${text} (${ago(s.last.endMs ?? s.last.dueMs, nowMs)})`;
}

function suspendedText(s: ScheduleStatus, nowMs: number): string {
  if (!s.suspended) return 'no';
  return `yes, ${ago(s.suspended.sinceMs, nowMs)} by ${s.suspended.by}${s.suspended.note ? `: ${s.suspended.note}` : ''}`;
}

/** The status as text for a person. */
export function formatStatus(st: FlockStatus, namespace: string): string {
  const now = st.nowMs;
  let out = `flock "${namespace}" at ${iso(now)} (Redis time)\n\n`;
  out += `replicas: ${st.replicas.length} live\n`;
  if (st.replicas.length > 0) {
    const digests = new Set(st.replicas.map((r) => r.definitions));
    out += indent(table(['REPLICA', 'MEMBERSHIP LAPSES IN', 'DEFINITIONS'], st.replicas.map((r) => [r.name, formatSpanMs(r.expiresInMs), r.definitions || '-'])));
    if (digests.size > 1) out += '  (replicas run different schedule files: a rollout in progress, or files that differ)\n';
  } else out += '  none: no replica has sent a heartbeat within its membership time; nothing is planned or run\n';
  const sch = st.schedules;
  // Both kinds of suspension, each named (a schedule can be both, so they are not added up).
  out += `\nschedules: ${sch.total} published, suspended: ${sch.suspended} at run time (cronflock suspend), ${sch.suspendedByDefinition} by their definition (suspend: true)\n`;
  if (sch.shown.length > 0) {
    out += indent(
      table(
        ['SCHEDULE', 'CRON', 'ZONE', 'NEXT FIRE (UTC)', 'LAST RESULT', 'LAST SUCCESS', 'OVERDUE', 'SUSPENDED'],
        sch.shown.map((s) => [
          s.name,
          s.cron,
          s.timeZone,
          s.nextFireMs === null ? 'never' : iso(s.nextFireMs).replace(/\.\d{3}Z$/, 'Z'),
          lastResult(s, now),
          s.lastSuccessMs === undefined ? '-' : ago(s.lastSuccessMs, now),
          String(s.overdue),
          suspendedText(s, now),
        ]),
        { right: [6] },
      ),
    );
  }
  if (sch.shown.length < sch.total && sch.unknown.length === 0) {
    out += `  (${sch.shown.length} of ${sch.total} shown: suspended and overdue first; --limit <n> or --schedule <name> for others)\n`;
  }
  for (const n of sch.unknown) out += `  ${n}: no replica publishes a schedule of this name\n`;
  const b = st.backlog;
  out +=
    `\nbacklog: ${b.pending} planned and not yet claimed, ${b.overdue} of them overdue (fire time more than ${formatSpanMs(b.overdueAfterMs)} ago)\n` +
    `queue: ${b.queue.waiting} waiting for a replica, ${b.queue.delayed} delayed (planned ahead or retrying), ${b.queue.active} held by replicas\n`;
  return out;
}

const indent = (text: string): string => text.replace(/^(?=.)/gm, '  ');

/** Adds `status` to the program. */
export function addStatusCommand(program: Command): void {
  const c = program
    .command('status')
    .description('show the flock: live replicas, schedules (suspended, next fire, last result, overdue) and the backlog')
    .option('-s, --schedule <name...>', 'only these schedules')
    .option('--limit <n>', 'schedules shown in detail (suspended and overdue ones first)', positiveIntArg, 50)
    .addOption(new Option('--overdue-after <duration>', 'an unclaimed occurrence this long past its fire time is overdue').argParser(durationArg).default(10_000, '10s'))
    .option('--json', 'print JSON');
  addOneShotRedisOptions(c).action(async (o: RedisFlags & { schedule?: string[]; limit: number; overdueAfter: number; json?: boolean }) => {
    const keys = new Keyspace(o.namespace);
    const st = await withOneShotRedis(o, 'cannot read the status from', async (redis) => {
      const lanes = openLanes(redis, keys);
      try {
        return await readFlockStatus(redis, keys, lanes, { names: o.schedule, limit: o.limit, overdueAfterMs: o.overdueAfter });
      } finally {
        await settlesWithin(closeLanes(lanes), 2_000);
      }
    });
    process.stdout.write(o.json ? `${JSON.stringify({ namespace: o.namespace, ...st }, null, 2)}\n` : formatStatus(st, o.namespace));
  });
}
