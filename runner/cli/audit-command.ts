/** `cronflock audit`: the audit log — every trigger, suspend, resume and backfill, from the API or the command line. */
import type { Command } from 'commander';
import { readAudit } from '../history/audit.js';
import { Keyspace } from '../redis/keys.js';
import { positiveIntArg } from './arg-parsers.js';
import { addOneShotRedisOptions, withOneShotRedis, type RedisFlags } from './redis-target.js';
import { iso, table } from './text.js';

/** Adds `audit` to the program. */
export function addAuditCommand(program: Command): void {
  const c = program
    .command('audit')
    .description('print the audit log, newest first: who did what to which schedule, when and why')
    .option('-s, --schedule <name>', 'only this schedule')
    .option('-n, --limit <n>', 'most entries', positiveIntArg, 50)
    .option('--json', 'print JSON');
  addOneShotRedisOptions(c).action(async (o: RedisFlags & { schedule?: string; limit: number; json?: boolean }) => {
    const page = await withOneShotRedis(o, 'cannot read the audit log from', (redis) =>
      readAudit(redis, new Keyspace(o.namespace), { limit: o.limit, schedule: o.schedule }),
    );
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
