/**
 * `cronflock start [path]`: one replica of the flock on schedule files and/or the cluster's Schedule resources
 * (runner/sources/), with reload when a file or a Schedule changes and on SIGHUP, and a shutdown that ends
 * whatever Redis does:
 *
 * - SIGINT or SIGTERM (or, for a replica started with an IPC channel, its parent going away): no new claims;
 *   running runs get `--grace`, then are handed over; the connections close; a private redis-server stops
 *   last. Every step that waits on Redis has a time limit (replica.ts), and the whole stop has one too:
 *   `--grace` + {@link STOP_LIMIT_MARGIN_MS}, after which the process exits with code 1.
 * - A second signal (at least a second after the first: stop-signals.ts) exits at once, with 130 (SIGINT) or
 *   143 (SIGTERM).
 * - A private redis-server never outlives the process: it is stopped on every exit path, and its watchdog
 *   stops it after a SIGKILL (server-process.ts).
 */
import { Option, type Command } from 'commander';
import type { LoadResult } from '../config/load.js';
import { compileOptions, DEFAULT_OPTIONS, OptionsError, type RunnerOptions } from '../engine/options.js';
import { Replica, ReplicaStartAborted } from '../engine/replica.js';
import { parseListenAddress } from '../admin/server.js';
import { createLogger } from '../log.js';
import { redactRedisUrl } from '../redis/connect.js';
import { formatDurationMs } from '../time/duration.js';
import { settlesWithin } from '../time/wait.js';
import { durationArg, nonNegativeIntArg, positiveIntArg } from './arg-parsers.js';
import { addRedisOptions, CliError, resolveRedis, type RedisFlags, type RedisTarget } from './redis-target.js';
import { onStopSignals, signalExitCode } from './stop-signals.js';
import type { WatchMode } from '../kubernetes/watch-mode.js';
import type { StartedSources } from '../sources/start.js';
// dashboard
import { startReplicaExtras } from '../api/replica-extras.js';
import { DEFAULT_HISTORY_MS, MIN_HISTORY_MS } from '../history/config.js';
import { LogCapture } from '../history/log-capture.js';
import { packageVersion } from './package-info.js';
import { addApiOptions, apiSettings } from './ui-command.js';
import { parseScheduleMetricsMode, type ScheduleMetricsMode } from '../admin/schedule-health.js';
import { otelFlagEndpoint, startTracing, tracingWanted, type OccurrenceTracer } from '../tracing/tracer.js';

/** The whole stop may take `--grace` plus this (hand-overs, closing connections, stopping a private Redis). */
export const STOP_LIMIT_MARGIN_MS = 30_000;

/** Option names as users type them: `lockMs` → `--lock`. */
const FLAGS: Record<string, string> = {
  lockMs: '--lock',
  stalledIntervalMs: '--stalled-interval',
  shutdownGraceMs: '--grace',
  horizonMs: '--horizon',
  retentionMs: '--retention',
  lookaheadMs: '--lookahead',
  tickMs: '--tick',
  maxStalls: '--max-stalls',
  concurrency: '--concurrency',
  backlogConcurrency: '--backlog-concurrency',
  backfillConcurrency: '--backfill-concurrency',
  prefetchMs: 'prefetch',
  replica: '--replica',
  namespace: '--namespace',
};

/** Replaces option names in a message with the flags users type. */
export function flagNames(message: string): string {
  return message.replace(new RegExp(`\\b(${Object.keys(FLAGS).join('|')})\\b`, 'g'), (m) => FLAGS[m] ?? m);
}

const d = (ms: number): string => formatDurationMs(ms);

/** Prints refused files' errors to stderr; returns the number of refused files. */
export function reportLoad(res: LoadResult, verbose: boolean): number {
  for (const e of res.errors) process.stderr.write(`${e.format()}\n`);
  for (const w of res.warnings) process.stderr.write(`warning: ${w.format()}\n`);
  if (verbose) for (const f of res.files) process.stdout.write(`${f.ok ? 'ok     ' : 'REFUSED'} ${f.file} (${f.scheduleCount} schedules)\n`);
  return res.files.filter((f) => !f.ok).length + (res.files.length === 0 ? 1 : 0);
}

/** Adds `start` to the program. */
export function addStartCommand(program: Command): void {
  const c = program
    .command('start')
    .description('run one replica of the flock on the schedules at [path] and/or the Schedule resources of the cluster')
    .argument('[path]', 'schedule file or directory (optional when Schedules come from the cluster)');
  addRedisOptions(c, 'Redis URL (without it and REDIS_URL: a private redis-server for this replica only)');
  c.addOption(new Option('--replica <name>', 'name of this replica (default: host-pid-random)').env('CRONFLOCK_REPLICA'))
    .addOption(new Option('--lock <duration>', `claim lease; failover takes about lock + lock/2 (default ${d(DEFAULT_OPTIONS.lockMs)})`).argParser(durationArg))
    .addOption(new Option('--stalled-interval <duration>', 'stall check period (default: lock/2)').argParser(durationArg))
    .addOption(new Option('--grace <duration>', `on SIGTERM, time for running runs to finish before hand-over (default ${d(DEFAULT_OPTIONS.shutdownGraceMs)})`).argParser(durationArg))
    .addOption(new Option('--horizon <duration>', `how far back occurrences are accounted for (default ${d(DEFAULT_OPTIONS.horizonMs)})`).argParser(durationArg))
    .addOption(new Option('--retention <duration>', `how long run records are kept (default ${d(DEFAULT_OPTIONS.retentionMs)})`).argParser(durationArg))
    .addOption(new Option('--lookahead <duration>', `how far ahead occurrences are planned (default ${d(DEFAULT_OPTIONS.lookaheadMs)})`).argParser(durationArg))
    .addOption(new Option('--tick <duration>', `planner period (default ${d(DEFAULT_OPTIONS.tickMs)})`).argParser(durationArg))
    .addOption(new Option('--max-stalls <n>', `re-claims after stalls before an occurrence fails (default ${DEFAULT_OPTIONS.maxStalls})`).argParser(nonNegativeIntArg))
    .addOption(new Option('--concurrency <n>', `live occurrences held at once by this replica (default ${DEFAULT_OPTIONS.concurrency})`).argParser(positiveIntArg))
    .addOption(
      new Option(
        '--backlog-concurrency <n>',
        `runs of triggers, resume runs, catch-up runs and backfill held at once by this replica (default ${DEFAULT_OPTIONS.backlogConcurrency})`,
      ).argParser(positiveIntArg),
    )
    .addOption(
      new Option('--backfill-concurrency <n>', `backfill occurrences running at once across the whole flock (default ${DEFAULT_OPTIONS.backfillConcurrency})`).argParser(
        positiveIntArg,
      ),
    )
    .option('--no-watch', 'do not reload when the schedule files change (SIGHUP still reloads)')
    .addOption(
      new Option('--watch-schedules <mode>', 'Schedule resources of the cluster: auto (in a pod, when the CRD is installed), on, off')
        .choices(['auto', 'on', 'off'])
        .env('CRONFLOCK_WATCH_SCHEDULES')
        .default('auto'),
    )
    .option('--watch-namespaces <list>', 'comma-separated namespaces whose Schedules run here (default: all it may list)', (v: string) => v.split(',').map((x) => x.trim()).filter(Boolean))
    .option('--schedule-selector <labels>', 'only Schedules with these labels, e.g. cronflock.io/flock=a')
    .option('--kubeconfig <path>', 'kubeconfig for watching Schedules (default: KUBECONFIG, ~/.kube/config, in-cluster)')
    .option('--kube-context <name>', 'kubeconfig context')
    .addOption(new Option('--kube-qps <n>', 'requests per second to the API server (status, Events, watches)').argParser(positiveIntArg))
    .addOption(new Option('--admin <host:port|off>', 'serve /metrics, /healthz, /readyz here').env('CRONFLOCK_ADMIN').default('127.0.0.1:9464'))
    .addOption(
      new Option('--schedule-metrics <on|off|top:N>', 'per-schedule health series: all schedules, none, or the N most overdue or failing')
        .env('CRONFLOCK_SCHEDULE_METRICS')
        .default('on'),
    )
    .addOption(
      new Option('--otel [endpoint]', 'send OpenTelemetry traces (one per occurrence) over OTLP/HTTP; on by itself when OTEL_EXPORTER_OTLP_ENDPOINT is set (default endpoint: that, else http://localhost:4318)'),
    );
  // ---- dashboard (runner/api/replica-extras.ts) ----
  c.addOption(new Option('--history <duration>', `how long finished occurrences, their log lines and the audit log are kept (default ${d(DEFAULT_HISTORY_MS)})`).argParser(durationArg))
    .option('--ui', 'also serve the dashboard and the HTTP API (see cronflock ui)');
  addApiOptions(c, undefined);
  // ---- end dashboard ----
  c.action(start);
}

async function start(path: string | undefined, o: Record<string, unknown> & RedisFlags): Promise<void> {
  const user: Partial<RunnerOptions> = { namespace: o.namespace };
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
    ['backlogConcurrency', 'backlogConcurrency'],
    ['backfillConcurrency', 'backfillConcurrency'],
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
  let scheduleMetrics: ScheduleMetricsMode;
  try {
    scheduleMetrics = parseScheduleMetricsMode(String(o.scheduleMetrics));
  } catch (err) {
    throw new CliError((err as Error).message);
  }
  try {
    otelFlagEndpoint(o.otel as boolean | string | undefined); // refused before anything starts
  } catch (err) {
    throw new CliError((err as Error).message);
  }
  // ---- dashboard: history length, API settings, and the run log lines kept with the history ----
  const historyMs = (o.history as number | undefined) ?? DEFAULT_HISTORY_MS;
  if (historyMs < MIN_HISTORY_MS) throw new CliError(`--history must be at least ${d(MIN_HISTORY_MS)} (got ${d(historyMs)})`);
  const api = o.ui ? apiSettings(o as { listen?: string; apiTokenFile?: string }) : undefined;
  const capture = new LogCapture();
  let stopExtras: (() => Promise<void>) | undefined;
  // ---- end dashboard ----
  const log = createLogger({ replica: options.replica }, capture);
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
  for (const w of first.fileWarnings) process.stderr.write(`warning: ${w.format()}\n`);
  if (first.runs.length === 0 && !sources.watchingCluster) {
    throw new CliError(
      path === undefined
        ? 'no schedule path, and Schedules from the cluster are not watched (--watch-schedules on); nothing to run'
        : `no valid schedules in ${path}; nothing to run`,
    );
  }
  if (first.refusedFiles.length > 0) log.warn({ refused: first.refusedFiles }, 'refused files are ignored; valid files run');
  const schedules = first.runs.map((r) => r.schedule);

  // From here on a stop request is honoured at every point: what has been started stops, in reverse order.
  const aborted = new AbortController();
  let target: RedisTarget | undefined;
  let replica: Replica | undefined;
  process.on('exit', () => target?.private?.stopNow()); // never leave a private server behind
  const starting = (async (): Promise<void> => {
    target = await resolveRedis(o.redis, true, log, o);
    if (aborted.signal.aborted) return;
    // The OpenTelemetry SDK is imported only when tracing is on.
    const otel = o.otel as boolean | string | undefined;
    const tracing: OccurrenceTracer | undefined = tracingWanted({ flag: otel, env: process.env })
      ? await startTracing({ flag: otel, env: process.env, replica: options.replica, namespace: options.namespace, log })
      : undefined;
    log.info(
      { redis: redactRedisUrl(target.url), schedules: schedules.length, names: schedules.slice(0, 20).map((s) => s.name), lockMs: options.lockMs },
      `replica starting with ${schedules.length} schedules (lock ${d(options.lockMs)})`,
    );
    replica = await Replica.start({ redisUrl: target.url, redisTls: target.tls, schedules, options, log, admin, signal: aborted.signal, scheduleMetrics, tracing, ...sources.hooks });
    stopExtras = await startReplicaExtras(replica, { redisUrl: target.url, redisTls: target.tls, historyMs, capture, version: packageVersion(), log, ui: api }); // dashboard
  })();

  let stopping: Promise<void> | undefined;
  const stop = (why: string): Promise<void> => (stopping ??= stopNow(why));
  const stopNow = async (why: string): Promise<void> => {
    log.info({ why, graceMs: options.shutdownGraceMs }, 'stopping: no new claims; running runs finish or are handed over');
    aborted.abort();
    const limitMs = options.shutdownGraceMs + STOP_LIMIT_MARGIN_MS;
    setTimeout(() => {
      log.error({ limitMs }, 'stopping took too long; exiting now (runs not handed over are re-claimed when their lease lapses)');
      target?.private?.stopNow();
      process.exit(1);
    }, limitMs).unref();
    // A start still waiting on Redis ends at once (aborted); one stuck on a hung Redis is not waited for long.
    await settlesWithin(starting, 5_000);
    await sources.stopWatching();
    await replica?.stop();
    await sources.stop(); // the last status and Events of the Schedules
    await stopExtras?.(); // dashboard: the last log lines, after the runs were handed over
    await target?.private?.cleanup();
    log.info('stopped');
    process.exit(0);
  };
  onStopSignals({
    stop: (signal) => void stop(signal),
    force: (signal) => {
      log.warn({ signal }, 'second signal: exiting now');
      target?.private?.stopNow();
      process.exit(signalExitCode(signal));
    },
  });
  // Started by a supervisor with an IPC channel (the demo does this): stop when it goes away, however it ends.
  if (process.channel) {
    process.channel.unref();
    process.once('disconnect', () => void stop('parent process exited'));
  }

  try {
    await starting;
  } catch (err) {
    if (err instanceof ReplicaStartAborted) return; // the stop in progress exits
    await target?.private?.cleanup();
    throw err instanceof CliError ? err : new CliError((err as Error).message);
  }
  if (!replica) return; // stopped while starting
  const running = replica;
  log.info('replica running');

  // Reloads (one at a time) when a file or a Schedule changes, and on SIGHUP; refused definitions keep their
  // running versions (runner/sources/).
  sources.started(running, o.watch !== false);
}

/** The string options of `o` named in `names` (flag key → result key), left out when unset. */
function pickStrings(o: Record<string, unknown>, names: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [flag, key] of Object.entries(names)) if (typeof o[flag] === 'string') out[key] = o[flag];
  return out;
}
