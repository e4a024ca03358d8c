/**
 * `cronflock runs`: run records, newest due time first, as a table or JSON.
 */
import type { Command } from 'commander';
import { Keyspace } from '../redis/keys.js';
import { listRuns, type RunRecord } from '../records/runs.js';
import { positiveIntArg } from './arg-parsers.js';
import { addOneShotRedisOptions, CliError, withOneShotRedis, type RedisFlags } from './redis-target.js';
import { knownNamesText } from '../text/known-names.js';
import { formatSpanMs, iso, table } from './text.js';

/** A run record for `--json`: the record, with a result that is JSON (a job's return value) as JSON. */
export function runForJson(r: RunRecord): Omit<RunRecord, 'result'> & { result?: unknown } {
  if (r.result === undefined) return r;
  try {
    return { ...r, result: JSON.parse(r.result) as unknown };
  } catch {
    return r; // not JSON: as stored
  }
}

/** `HH:MM:SS.mmm` of `ms` when it falls on the UTC day of `dayOfMs`, else the full ISO time. */
function clock(ms: number | undefined, dayOfMs: number): string {
  if (ms === undefined) return '-';
  const s = iso(ms);
  return s.slice(0, 10) === iso(dayOfMs).slice(0, 10) ? s.slice(11, 23) : s;
}

/** The runs table: one line per record. LATE is the latest attempt's start after the fire time. */
export function formatRuns(runs: readonly RunRecord[]): string {
  const rows = runs.map((r) => {
    const ran = r.startMs !== undefined;
    return [
      iso(r.dueMs),
      r.schedule,
      r.state,
      r.origin ?? (r.manual ? 'manual' : 'schedule'),
      clock(r.fireMs, r.dueMs),
      clock(r.startMs, r.dueMs),
      clock(r.endMs, r.dueMs),
      ran && r.endMs !== undefined && r.state !== 'running' ? formatSpanMs(r.endMs - r.startMs!) : '-',
      ran ? formatSpanMs(r.startMs! - r.fireMs) : '-',
      r.replica ?? '-',
      String(r.attempt),
      String(r.fencingToken),
      [r.reason, r.error].filter(Boolean).join(': '),
    ];
  });
  return table(['DUE (UTC)', 'SCHEDULE', 'STATE', 'ORIGIN', 'FIRE', 'START', 'END', 'TOOK', 'LATE', 'REPLICA', 'ATT', 'TOKEN', 'REASON'], rows, {
    right: [10, 11],
  });
}

/** The result each run recorded (a job's JSON return value, e.g. a cleanup report), indented under its key. */
function formatResults(runs: readonly RunRecord[]): string {
  let out = '';
  for (const r of runs) {
    if (!r.result) continue;
    let text = r.result;
    try {
      text = JSON.stringify(JSON.parse(r.result), null, 2);
    } catch {
      /* not JSON: print as stored */
    }
    out += `\n${r.key} (${r.state}):\n${text.replace(/^/gm, '  ')}\n`;
  }
  return out;
}

/**
 * What `runs --schedule <name>` says for a name that has no run records and that no replica runs: the names
 * probably meant and the known ones (text/known-names.ts, as `trigger` and the other control commands say it).
 */
export function unknownScheduleMessage(name: string, known: readonly string[], namespace: string): string {
  return `--schedule: no run records of "${name}" and no replica runs a schedule of that name in namespace "${namespace}"; ${knownNamesText(name, known)}`;
}

/** Adds `runs` to the program. */
export function addRunsCommand(program: Command): void {
  const c = program
    .command('runs')
    .description('print run records (newest first): due, fire, start and end times, duration, lateness, origin')
    .option('-s, --schedule <name>', 'only this schedule')
    .option('--limit <n>', 'records per schedule', positiveIntArg, 50)
    .option('--json', 'print JSON')
    .option('--show', "also print each run's result (e.g. a cleanup report)");
  addOneShotRedisOptions(c).action(async (o: RedisFlags & { schedule?: string; limit: number; json?: boolean; show?: boolean }) => {
    const { runs, known } = await withOneShotRedis(o, 'cannot read runs from', async (redis) => {
      const keys = new Keyspace(o.namespace);
      const runs = await listRuns(redis, keys, { schedule: o.schedule, limit: o.limit });
      // No records of a name no replica runs: probably a typo (records of a removed schedule are still listed).
      const known = o.schedule !== undefined && runs.length === 0 ? (await redis.hkeys(keys.definitions)).sort() : [];
      return { runs, known };
    });
    if (o.schedule !== undefined && runs.length === 0 && known.length > 0 && !known.includes(o.schedule)) {
      throw new CliError(unknownScheduleMessage(o.schedule, known, o.namespace));
    }
    if (o.json) process.stdout.write(`${JSON.stringify(runs.map(runForJson), null, 2)}\n`);
    else if (runs.length === 0) process.stdout.write(`no run records${o.schedule ? ` of ${o.schedule}` : ''} in namespace "${o.namespace}"\n`);
    else process.stdout.write(`${formatRuns(runs)}${o.show ? formatResults(runs) : ''}`);
  });
}
