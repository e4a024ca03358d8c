/**
 * `cronflock`: the command line.
 *
 *   cronflock start [path]       run one replica (REDIS_URL or --redis; else a private redis-server); files
 *                                and/or the cluster's Schedule resources
 *   cronflock validate <path>    check schedule files; file:line:col errors; exit 1 when any file is refused
 *   cronflock next <path>        upcoming due times, fire times and window ends
 *   cronflock runs               run records from Redis
 *   cronflock restore <backup>   restore a backup into a cluster (--dry-run: the plan only)
 *   cronflock convert [paths]    Kubernetes CronJobs as Schedules
 */
import { Command, Option } from 'commander';
import { durationArg, isoTimeArg, nonNegativeIntArg, positiveIntArg } from './arg-parsers.js';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { loadSchedules, type LoadResult } from '../config/load.js';
import { compileOptions, OptionsError, type RunnerOptions } from '../engine/options.js';
import { Replica } from '../engine/replica.js';
import { parseListenAddress } from '../admin/server.js';
import { createLogger } from '../log.js';
import { connectOneShot, redactRedisUrl } from '../redis/connect.js';
import { Keyspace } from '../redis/keys.js';
import { listRuns, type RunRecord } from '../records/runs.js';
import { fireTimeMs } from '../schedule/occurrence.js';
import { formatDurationMs } from '../time/duration.js';
import { addControlCommands } from './control-commands.js';
import { addConvertCommand } from './convert-command.js';
import { addRbacCommand } from './rbac-command.js';
import { addRestoreCommand } from './restore-command.js';
import { addRedisTlsOptions, CliError, resolveRedis, type RedisTlsFlags } from './redis-target.js';
import type { WatchMode } from '../kubernetes/watch-mode.js';
import type { StartedSources } from '../sources/start.js';

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
  .option('--json', 'print JSON')
  .action(async (path: string, o: { schedule?: string; count: number; from?: number; json?: boolean }) => {
    const res = await loadSchedules(path);
    if (reportLoad(res, false) > 0 && res.schedules.length === 0) throw new CliError('no valid schedules');
    const list = o.schedule ? res.schedules.filter((s) => s.name === o.schedule) : res.schedules;
    if (o.schedule && list.length === 0) throw new CliError(`no schedule named "${o.schedule}" in ${path}`);
    const rows: { schedule: string; dueAt: string; fireAt: string; windowEnd: string }[] = [];
    for (const s of list) {
      let t = o.from ?? Date.now();
      for (let i = 0; i < o.count; i++) {
        const due = s.due.next(t);
        if (due === null) break;
        rows.push({
          schedule: s.name,
          dueAt: iso(due),
          fireAt: iso(fireTimeMs(s.name, due, s.jitterMs)),
          windowEnd: iso(due + s.jitterMs),
        });
        t = due;
      }
    }
    if (o.json) process.stdout.write(`${JSON.stringify(rows, null, 2)}\n`);
    else {
      process.stdout.write(`${'SCHEDULE'.padEnd(24)} ${'DUE'.padEnd(24)} ${'FIRE'.padEnd(24)} WINDOW END\n`);
      for (const r of rows) process.stdout.write(`${r.schedule.padEnd(24)} ${r.dueAt} ${r.fireAt} ${r.windowEnd}\n`);
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
  .description('run one replica of the flock on the schedules at [path] and/or the Schedule resources of the cluster')
  .argument('[path]', 'schedule file or directory (optional when Schedules come from the cluster)')
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
  .addOption(new Option('--watch-schedules <mode>', 'Schedule resources of the cluster: auto (in a pod, when the CRD is installed), on, off').choices(['auto', 'on', 'off']).default(process.env.CRONFLOCK_WATCH_SCHEDULES ?? 'auto'))
  .option('--watch-namespaces <list>', 'comma-separated namespaces whose Schedules run here (default: all it may list)', (v: string) => v.split(',').map((x) => x.trim()).filter(Boolean))
  .option('--schedule-selector <labels>', 'only Schedules with these labels, e.g. cronflock.io/flock=a')
  .option('--kubeconfig <path>', 'kubeconfig for watching Schedules (default: KUBECONFIG, ~/.kube/config, in-cluster)')
  .option('--kube-context <name>', 'kubeconfig context')
  .addOption(new Option('--kube-qps <n>', 'requests per second to the API server (status, Events, watches)').argParser(positiveIntArg))
  .option('--admin <host:port|off>', 'serve /metrics, /healthz, /readyz here', process.env.CRONFLOCK_ADMIN ?? '127.0.0.1:9464')
  .action(async (path: string | undefined, o: Record<string, unknown>) => {
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
    // Schedule files and the cluster's Schedule resources, combined (runner/sources/).
    let sources: StartedSources;
    try {
      const { openStartSources } = await import('../sources/start.js');
      sources = await openStartSources({
        ...(path !== undefined ? { path } : {}),
        watchSchedules: o.watchSchedules as WatchMode,
        watchNamespaces: (o.watchNamespaces as string[] | undefined) ?? [],
        ...pickStrings(o, { kubeconfig: 'kubeconfig', kubeContext: 'kubeContext', scheduleSelector: 'scheduleSelector' }),
        ...(o.kubeQps !== undefined ? { kubeQps: o.kubeQps as number } : {}),
        replica: options.replica,
        log,
      });
    } catch (err) {
      throw new CliError((err as Error).message);
    }
    const first = sources.first;
    for (const e of first.fileErrors) {
      process.stderr.write(`${e.format()}\n`);
      log.error({ file: e.file, line: e.line, col: e.col, field: e.field }, e.reason);
    }
    if (first.runs.length === 0 && !sources.watchingCluster) {
      throw new CliError(path === undefined ? 'no schedule path, and Schedules from the cluster are not watched (--watch-schedules on); nothing to run' : `no valid schedules in ${path}; nothing to run`);
    }
    if (first.refusedFiles.length > 0) log.warn({ refused: first.refusedFiles }, 'refused files are ignored; valid files run');
    const schedules = first.runs.map((r) => r.schedule);
    const target = await resolveRedis(o.redis as string | undefined, true, log, o as RedisTlsFlags);
    log.info(
      { redis: redactRedisUrl(target.url), schedules: schedules.length, names: schedules.slice(0, 20).map((s) => s.name), lockMs: options.lockMs },
      `replica starting with ${schedules.length} schedules (lock ${formatDurationMs(options.lockMs)})`,
    );
    let replica: Replica;
    try {
      replica = await Replica.start({ redisUrl: target.url, redisTls: target.tls, schedules, options, log, admin, ...sources.hooks });
    } catch (err) {
      await target.private?.cleanup();
      throw new CliError((err as Error).message);
    }
    log.info('replica running');
    // Reloads (one at a time) when a file or a Schedule changes; refused definitions keep their running versions.
    sources.started(replica, o.watch !== false);

    let stopping = false;
    const stop = async (signal: string): Promise<void> => {
      if (stopping) {
        log.warn({ signal }, 'second signal: exiting now');
        process.exit(130);
      }
      stopping = true;
      log.info({ signal, graceMs: options.shutdownGraceMs }, 'stopping: no new claims; running runs finish or are handed over');
      await sources.stopWatching();
      await replica.stop();
      await sources.stop();
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
addConvertCommand(program);

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

/** The string options of `o` named in `names` (flag key → result key), left out when unset. */
function pickStrings(o: Record<string, unknown>, names: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [flag, key] of Object.entries(names)) if (typeof o[flag] === 'string') out[key] = o[flag];
  return out;
}

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
