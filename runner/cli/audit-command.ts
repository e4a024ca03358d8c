/** `cronflock audit`: the audit log — every trigger, suspend, resume and backfill, from the API or the command line. */
import type { Command } from 'commander';
import { AUDIT_MAX_ENTRIES, readAudit, type AuditPage } from '../history/audit.js';
import type { RedisClient } from '../redis/connect.js';
import { Keyspace } from '../redis/keys.js';
import { positiveIntArg } from './arg-parsers.js';
import { addOneShotRedisOptions, withOneShotRedis, type RedisFlags } from './redis-target.js';
import { iso, table } from './text.js';

/** Log entries `audit --schedule` reads at most by default, looking for the schedule's (`--scan`). */
const DEFAULT_AUDIT_SCAN = 20_000;
/** Entries read per XREVRANGE while looking. */
const SCAN_PAGE = 1_000;

/**
 * The newest `limit` audit entries of `schedule`: the log holds every schedule's entries in one stream, so it is
 * read page by page (newest first, following each page's `next`) until `limit` of them are found, the log ends,
 * or `scan` entries were read. `next` is null when the log was read to its end.
 */
async function readScheduleAudit(redis: RedisClient, keys: Keyspace, schedule: string, limit: number, scan: number): Promise<AuditPage> {
  const items: AuditPage['items'] = [];
  let before: string | undefined;
  let scanned = 0;
  for (;;) {
    const count = Math.min(SCAN_PAGE, scan - scanned);
    const page = await readAudit(redis, keys, { limit: count, schedule, ...(before !== undefined ? { before } : {}) });
    scanned += count;
    items.push(...page.items);
    if (items.length >= limit || page.next === null) return { items: items.slice(0, limit), next: items.length >= limit ? null : page.next };
    if (scanned >= scan) return { items, next: page.next };
    before = page.next;
  }
}

/** Adds `audit` to the program. */
export function addAuditCommand(program: Command): void {
  const c = program
    .command('audit')
    .description('print the audit log, newest first: who did what to which schedule, when and why')
    .option('-s, --schedule <name>', 'only this schedule')
    .option('-n, --limit <n>', 'most entries', positiveIntArg, 50)
    .option('--scan <n>', `with --schedule: most log entries to read looking for its entries (newest first)`, positiveIntArg, DEFAULT_AUDIT_SCAN)
    .option('--json', 'print JSON');
  addOneShotRedisOptions(c).action(async (o: RedisFlags & { schedule?: string; limit: number; scan: number; json?: boolean }) => {
    const page = await withOneShotRedis(o, 'cannot read the audit log from', (redis) =>
      o.schedule === undefined ? readAudit(redis, new Keyspace(o.namespace), { limit: o.limit }) : readScheduleAudit(redis, new Keyspace(o.namespace), o.schedule, o.limit, o.scan),
    );
    if (o.schedule !== undefined && page.next !== null && page.items.length < o.limit) {
      process.stderr.write(
        `scanned the newest ${o.scan.toLocaleString('en-US')} entries of the audit log and found ${page.items.length} of schedule "${o.schedule}"; older entries were not read: raise --scan (the log keeps up to ${AUDIT_MAX_ENTRIES.toLocaleString('en-US')})\n`,
      );
    }
    if (o.json) process.stdout.write(`${JSON.stringify(page.items, null, 2)}\n`);
    else {
      process.stdout.write(
        table(
          ['WHEN (UTC)', 'WHO', 'VIA', 'ACTION', 'SCHEDULE', 'WHY', 'WHAT IT DID'],
          page.items.map((e) => [iso(e.atMs), e.who, e.via, e.action, e.schedule, e.reason, e.outcome]),
        ),
      );
    }
  });
}
