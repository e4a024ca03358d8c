/**
 * `cronflock`: the command line.
 *
 *   cronflock start <path>       run one replica (REDIS_URL or --redis; else a private redis-server)
 *   cronflock validate <path>    check schedule files; file:line:col errors; exit 1 when any file is refused
 *   cronflock next <path>        upcoming due times, fire times and window ends
 *   cronflock runs               run records from Redis
 *   cronflock restore <backup>   restore a backup into a cluster (--dry-run: the plan only)
 */
import { Command, Option } from 'commander';
import { durationArg, isoTimeArg, nonNegativeIntArg, positiveIntArg } from './arg-parsers.js';
import { readFileSync, statSync, watch } from 'node:fs';
import { basename, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadSchedules, type LoadResult } from '../config/load.js';
import { compileOptions, OptionsError, type RunnerOptions } from '../engine/options.js';
import { Replica } from '../engine/replica.js';
import { parseListenAddress } from '../admin/server.js';
import { createLogger } from '../log.js';
import { connectOneShot, redactRedisUrl } from '../redis/connect.js';
import { Keyspace } from '../redis/keys.js';
import { listRuns, type RunRecord } from '../records/runs.js';
import { formatDurationMs } from '../time/duration.js';
import { addControlCommands } from './control-commands.js';
import { MAX_SCANNED, nextRows, noteOf, type NextRow } from './next-rows.js';
import { addRbacCommand } from './rbac-command.js';
import { addRestoreCommand } from './restore-command.js';
import { addRedisTlsOptions, CliError, resolveRedis, type RedisTlsFlags } from './redis-target.js';

const pkg = JSON.parse(readFileSync(fileURLToPath(new URL('../../../package.json', import.meta.url)), 'utf8')) as {
  version: string;
};

const iso = (ms: number | undefined): string => (ms === undefined ? '-' : new Date(ms).toISOString());

/** Prints refused files' errors to stderr; returns the number of refused files. */
function reportLoad(res: LoadResult, verbose: boolean): number {
  for (const e of res.errors) process.stderr.write(`${e.format()}\n`);
  if (verbose) for (const f of res.files) process.stdout.write(`${f.ok ? 'ok     ' : 'REFUSED'} ${f.file} (${f.scheduleCount} schedules)\n`);
  return res.files.filter((f) => !f.ok).length + (res.files.length === 0 ? 1 : 0);
}

const program = new Command('cronflock')
  .description('Leaderless scheduled jobs: every replica equal, one claimant per occurrence, on Redis')
  .version(pkg.version)
  .showHelpAfterError();

program
  .command('validate')
  .description('check schedule files (a file or a directory); exit 1 when any file is refused')
  .argument('<path>', 'schedule file or directory')
  .action(async (path: string) => {
    const res = await loadSchedules(path);
    const refused = reportLoad(res, true);
    process.stdout.write(`${res.schedules.length} schedules valid, ${refused} file(s) refused\n`);
    process.exitCode = refused > 0 ? 1 : 0;
  });

program
  .command('next')
  .description('print upcoming due times with their fire times and jitter window ends (UTC)')
  .argument('<path>', 'schedule file or directory')
  .option('-s, --schedule <name>', 'only this schedule')
  .option('-n, --count <n>', 'occurrences per schedule', positiveIntArg, 5)
  .option('--from <iso>', 'start after this instant (default: now)', isoTimeArg)
  .option('--hide-skipped', 'leave out occurrences the calendar or a blackout skips (-n counts the others)')
  .option('--json', 'print JSON')
  .action(async (path: string, o: { schedule?: string; count: number; from?: number; hideSkipped?: boolean; json?: boolean }) => {
    const res = await loadSchedules(path);
    if (reportLoad(res, false) > 0 && res.schedules.length === 0) throw new CliError('no valid schedules');
    const list = o.schedule ? res.schedules.filter((s) => s.name === o.schedule) : res.schedules;
    if (o.schedule && list.length === 0) throw new CliError(`no schedule named "${o.schedule}" in ${path}`);
    const rows: NextRow[] = [];
    for (const s of list) {
      const next = nextRows(s, o.from ?? Date.now(), o.count, o.hideSkipped === true);
      rows.push(...next.rows);
      if (next.truncated) process.stderr.write(`${s.name}: only ${next.rows.length} occurrences run among its next ${MAX_SCANNED} due times\n`);
    }
    if (o.json) process.stdout.write(`${JSON.stringify(rows, null, 2)}\n`);
    else {
      process.stdout.write(`${'SCHEDULE'.padEnd(24)} ${'DUE'.padEnd(24)} ${'FIRE'.padEnd(24)} ${'WINDOW END'.padEnd(24)} NOTE\n`);
      for (const r of rows) process.stdout.write(`${r.schedule.padEnd(24)} ${r.dueAt} ${r.fireAt.padEnd(24)} ${r.windowEnd} ${noteOf(r)}`.trimEnd() + '\n');
    }
  });

program
  .command('runs')
  .description('print run records (newest first)')
  .option('-s, --schedule <name>', 'only this schedule')
  .option('--limit <n>', 'records per schedule', positiveIntArg, 50)
  .option('--json', 'print JSON')
  .option('--show', 'also print each run\'s result (e.g. a cleanup report)')
  .option('--redis <url>', 'Redis URL (default: REDIS_URL)')
  .option('--namespace <ns>', 'key namespace of the flock', process.env.CRONFLOCK_NAMESPACE ?? 'cronflock')
  .action(async (o: { schedule?: string; limit: number; json?: boolean; redis?: string; namespace: string } & RedisTlsFlags) => {
    const { url, tls } = await resolveRedis(o.redis, false, undefined, o);
    const redis = connectOneShot(url, 'cronflock:cli', tls);
    // Connection errors explain a failed command (a Cluster reports its nodes' errors apart: 'node error').
    const seen = new Set<string>();
    for (const ev of ['error', 'node error']) redis.on(ev, (err: Error) => void (seen.size < 5 && seen.add(err.message)));
    try {
      const runs = await listRuns(redis, new Keyspace(o.namespace), { schedule: o.schedule, limit: o.limit });
      if (o.json) process.stdout.write(`${JSON.stringify(runs, null, 2)}\n`);
      else {
        printRuns(runs);
        if ((o as { show?: boolean }).show) printResults(runs);
      }
    } catch (err) {
      seen.delete((err as Error).message);
      const cause = seen.size > 0 ? ` (connection: ${[...seen].join('; ')})` : '';
      throw new CliError(`cannot read runs from ${redactRedisUrl(url)}: ${(err as Error).message}${cause}`);
    } finally {
      redis.disconnect();
    }
  });

/**
 * Calls `onChange` (debounced 300 ms) when the schedule file, or a file of the schedule directory, changes.
 * Watches the directory, so editors that replace files and Kubernetes ConfigMap updates (a symlink swap) are
 * seen.
 */
function watchSchedules(path: string, onChange: () => void): void {
  let dir = path;
  let only: string | undefined;
  try {
    if (!statSync(path).isDirectory()) {
      dir = dirname(path);
      only = basename(path);
    }
    let timer: NodeJS.Timeout | undefined;
    watch(dir, (_event, file) => {
      // Only schedule files (and a ConfigMap mount's `..data` swap) matter: an editor's swap file or a note
      // beside them must not make every replica re-read and re-publish thousands of schedules.
      const name = file === null ? undefined : String(file);
      // Calendars' .ics files beside the schedule files count too (they are read at load).
      if (name !== undefined && !name.startsWith('..') && !/^[^.].*\.ics$/.test(name) && (only ? name !== only : !/^[^.].*\.ya?ml$/.test(name))) return;
      if (timer) clearTimeout(timer);
      timer = setTimeout(onChange, 300);
    }).unref();
  } catch {
    /* a path that cannot be watched still reloads on SIGHUP */
  }
}

/** The result each run recorded (a job's JSON return value, e.g. a cleanup report), indented under its key. */
function printResults(runs: RunRecord[]): void {
  for (const r of runs) {
    if (!r.result) continue;
    let text = r.result;
    try {
      text = JSON.stringify(JSON.parse(r.result), null, 2);
    } catch {
      /* not JSON: print as stored */
    }
    process.stdout.write(`\n${r.key} (${r.state}):\n${text.replace(/^/gm, '  ')}\n`);
  }
}

function printRuns(runs: RunRecord[]): void {
  process.stdout.write(
    `${'DUE'.padEnd(24)} ${'SCHEDULE'.padEnd(20)} ${'STATE'.padEnd(10)} ${'REPLICA'.padEnd(22)} ATT TOKEN LATE(ms) REASON\n`,
  );
  for (const r of runs) {
    process.stdout.write(
      `${iso(r.dueMs)} ${r.schedule.padEnd(20)} ${r.state.padEnd(10)} ${(r.replica ?? '-').padEnd(22)} ${String(r.attempt).padStart(3)} ${String(r.fencingToken).padStart(5)} ${String(r.latenessMs ?? '-').padStart(8)} ${[r.reason, r.error].filter(Boolean).join(': ')}\n`,
    );
  }
}

program
  .command('start')
  .description('run one replica of the flock on the schedules at <path>')
  .argument('<path>', 'schedule file or directory')
  .option('--redis <url>', 'Redis URL (default: REDIS_URL; without either, a private redis-server)')
  .option('--namespace <ns>', 'key namespace of the flock', process.env.CRONFLOCK_NAMESPACE ?? 'cronflock')
  .option('--replica <name>', 'name of this replica (default: host-pid-random)', process.env.CRONFLOCK_REPLICA)
  .addOption(new Option('--lock <duration>', 'claim lease / queue lock; failover takes about lock + lock/2').argParser(durationArg))
  .addOption(new Option('--stalled-interval <duration>', 'stall check period (default lock/2)').argParser(durationArg))
  .addOption(new Option('--grace <duration>', 'on SIGTERM, time for running runs to finish before hand-over').argParser(durationArg))
  .addOption(new Option('--horizon <duration>', 'how far back occurrences are accounted for').argParser(durationArg))
  .addOption(new Option('--retention <duration>', 'how long run records are kept').argParser(durationArg))
  .addOption(new Option('--lookahead <duration>', 'how far ahead occurrences are planned').argParser(durationArg))
  .addOption(new Option('--tick <duration>', 'planner period').argParser(durationArg))
  .addOption(new Option('--max-stalls <n>', 're-claims after stalls before an occurrence fails').argParser(nonNegativeIntArg))
  .addOption(new Option('--concurrency <n>', 'runs held at once by this replica').argParser(positiveIntArg))
  .option('--no-watch', 'do not reload when the schedule files change (SIGHUP still reloads)')
  .option('--admin <host:port|off>', 'serve /metrics, /healthz, /readyz here', process.env.CRONFLOCK_ADMIN ?? '127.0.0.1:9464')
  .action(async (path: string, o: Record<string, unknown>) => {
    const user: Partial<RunnerOptions> = { namespace: o.namespace as string };
    if (o.replica) user.replica = o.replica as string;
    const map: [string, keyof RunnerOptions][] = [
      ['lock', 'lockMs'],
      ['stalledInterval', 'stalledIntervalMs'],
      ['grace', 'shutdownGraceMs'],
      ['horizon', 'horizonMs'],
      ['retention', 'retentionMs'],
      ['lookahead', 'lookaheadMs'],
      ['tick', 'tickMs'],
      ['maxStalls', 'maxStalls'],
      ['concurrency', 'concurrency'],
    ];
    for (const [flag, key] of map) if (o[flag] !== undefined) (user as Record<string, unknown>)[key] = o[flag];
    let options: RunnerOptions;
    try {
      options = compileOptions(user);
    } catch (err) {
      if (err instanceof OptionsError) throw new CliError(flagNames(err.message));
      throw err;
    }
    let admin: { host: string; port: number } | null = null;
    try {
      admin = o.admin === 'off' ? null : parseListenAddress(String(o.admin));
    } catch (err) {
      throw new CliError((err as Error).message);
    }
    const log = createLogger({ replica: options.replica });
    const res = await loadSchedules(path);
    if (reportLoad(res, false) > 0) {
      for (const e of res.errors) log.error({ file: e.file, line: e.line, col: e.col, field: e.field }, e.reason);
      if (res.schedules.length === 0) throw new CliError(`no valid schedules in ${path}; nothing to run`);
      log.warn({ refused: res.files.filter((f) => !f.ok).map((f) => f.file) }, 'refused files are ignored; valid files run');
    }
    const target = await resolveRedis(o.redis as string | undefined, true, log, o as RedisTlsFlags);
    log.info(
      { redis: redactRedisUrl(target.url), schedules: res.schedules.length, names: res.schedules.slice(0, 20).map((s) => s.name), lockMs: options.lockMs },
      `replica starting with ${res.schedules.length} schedules (lock ${formatDurationMs(options.lockMs)})`,
    );
    let replica: Replica;
    try {
      replica = await Replica.start({ redisUrl: target.url, redisTls: target.tls, schedules: res.schedules, options, log, admin });
    } catch (err) {
      await target.private?.cleanup();
      throw new CliError((err as Error).message);
    }
    log.info('replica running');
    // Reloads run one at a time. A file refused on reload keeps its previous (running) version: bad input
    // never stops what works; the errors are logged with their positions.
    let current = res.schedules;
    let reloading: Promise<void> = Promise.resolve();
    const reload = (why: string): Promise<void> =>
      (reloading = reloading.then(async () => {
        const next = await loadSchedules(path);
        for (const e of next.errors) log.error({ file: e.file, line: e.line, col: e.col, field: e.field }, `reload refused: ${e.reason}`);
        const refused = new Set(next.files.filter((f) => !f.ok).map((f) => f.file));
        const names = new Set(next.schedules.map((s) => s.name));
        const kept = current.filter((s) => refused.has(s.source.file) && !names.has(s.name));
        const schedules = [...next.schedules, ...kept];
        if (schedules.length === 0) {
          log.error({ why }, 'reload found no valid schedules; keeping the running ones');
          return;
        }
        current = schedules;
        await replica.reload(schedules);
      }).catch((err: Error) => log.error({ why, err: err.message }, 'reload failed; keeping the running schedules')));
    if (o.watch !== false) watchSchedules(path, () => void reload('file changed'));
    process.on('SIGHUP', () => void reload('SIGHUP'));

    let stopping = false;
    const stop = async (signal: string): Promise<void> => {
      if (stopping) {
        log.warn({ signal }, 'second signal: exiting now');
        process.exit(130);
      }
      stopping = true;
      log.info({ signal, graceMs: options.shutdownGraceMs }, 'stopping: no new claims; running runs finish or are handed over');
      await replica.stop();
      await target.private?.cleanup();
      log.info('stopped');
      process.exit(0);
    };
    process.on('SIGTERM', () => void stop('SIGTERM'));
    process.on('SIGINT', () => void stop('SIGINT'));
  });

for (const c of program.commands) if (c.name() === 'runs' || c.name() === 'start') addRedisTlsOptions(c);

addControlCommands(program);
addRbacCommand(program);
addRestoreCommand(program);

// `cronflock runs | head`: a closed pipe ends the output, not the process with a stack trace.
process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  if (err.code === 'EPIPE') process.exit(0);
  throw err;
});
// `cronflock start bad.yaml 2>&1 | head -1`: the same for the error output (it hung on the closed pipe).
process.stderr.on('error', (err: NodeJS.ErrnoException) => {
  if (err.code === 'EPIPE') process.exit(typeof process.exitCode === 'number' && process.exitCode !== 0 ? process.exitCode : 2);
  throw err;
});

/** Option names as users type them: `lockMs` → `--lock`. */
function flagNames(message: string): string {
  const flags: Record<string, string> = {
    lockMs: '--lock',
    stalledIntervalMs: '--stalled-interval',
    shutdownGraceMs: '--grace',
    horizonMs: '--horizon',
    retentionMs: '--retention',
    lookaheadMs: '--lookahead',
    tickMs: '--tick',
    maxStalls: '--max-stalls',
    concurrency: '--concurrency',
    prefetchMs: 'prefetch',
    replica: '--replica',
    namespace: '--namespace',
  };
  return message.replace(/\b(lockMs|stalledIntervalMs|shutdownGraceMs|horizonMs|retentionMs|lookaheadMs|tickMs|maxStalls|concurrency|prefetchMs|replica|namespace)\b/g, (m) => flags[m] ?? m);
}

program.parseAsync(process.argv).catch((err: unknown) => {
  const code = (err as { code?: unknown })?.code;
  if (!(err instanceof CliError) && typeof code === 'string' && /^[A-Z][A-Z_]+$/.test(code)) {
    // Our typed errors (options, namespace, Redis URL …) say what is wrong and how to fix it: no stack.
    process.stderr.write(`cronflock: ${flagNames((err as Error).message)}\n`);
    process.exit(2);
  }
  if (err instanceof CliError) {
    process.stderr.write(`cronflock: ${err.message}\n`);
    process.exit(2);
  }
  process.stderr.write(`cronflock: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
