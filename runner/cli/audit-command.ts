/** `cronflock audit`: the audit log — every trigger, suspend, resume and backfill, from the API or the command line. */
import type { Command } from 'commander';
import { AUDIT_MAX_ENTRIES, readAudit, scanAudit, type AuditPage, type AuditScanPage } from '../history/audit.js';
import { Keyspace } from '../redis/keys.js';
import { positiveIntArg } from './arg-parsers.js';
import { addOneShotRedisOptions, withOneShotRedis, type RedisFlags } from './redis-target.js';
import { iso, table } from './text.js';

/** Log entries `audit --schedule` reads at most by default, looking for the schedule's (`--scan`). */
const DEFAULT_AUDIT_SCAN = 20_000;

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
    const page: AuditPage & Partial<AuditScanPage> = await withOneShotRedis(o, 'cannot read the audit log from', (redis) =>
      o.schedule === undefined
        ? readAudit(redis, new Keyspace(o.namespace), { limit: o.limit })
        : scanAudit(redis, new Keyspace(o.namespace), { schedule: o.schedule, limit: o.limit, scanMax: o.scan }),
    );
    if (o.schedule !== undefined && page.scanLimitReached === true) {
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
