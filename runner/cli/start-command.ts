/**
 * `cronflock start [path]`: one replica of the flock on schedule files and/or the cluster's Schedule resources
 * (runner/sources/), with reload (runner/sources/sources.ts: its rules) when a file or a Schedule changes and on SIGHUP, and a shutdown that ends
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
 *
 * Started with an IPC channel (a supervisor such as the demo, runner/demo/flock.ts), the replica also sends its
 * run events ({@link RunMessage}) to the parent, and stops when the parent goes away.
 */
import type { Command } from 'commander';
import type { CompiledSchedule, LoadResult } from '../config/load.js';
import { compileOptions, OptionsError, type RunnerOptions } from '../engine/options.js';
import { EngineEvents, type RunEvent } from '../engine/events.js';
import { Replica, ReplicaStartAborted } from '../engine/replica.js';
import { parseListenAddress } from '../admin/server.js';
import { createLogger } from '../log.js';
import { redactRedisUrl } from '../redis/connect.js';
import { formatDurationMs } from '../time/duration.js';
import { settlesWithin } from '../time/wait.js';
import { flagNames, flagOption, optionsFromFlags, START_FLAGS } from './start-options.js';
import { addRedisOptions, CliError, resolveRedis, type RedisFlags, type RedisTarget } from './redis-target.js';
import { onStopSignals, signalExitCode } from './stop-signals.js';
import type { WatchMode } from '../kubernetes/watch-mode.js';
import type { StartedSources } from '../sources/start.js';
// dashboard
import { startReplicaExtras } from '../api/replica-extras.js';
import { DEFAULT_HISTORY_MS, MIN_HISTORY_MS } from '../history/config.js';
import { LogCapture } from '../history/log-capture.js';
import { packageVersion } from './package-info.js';
import { addApiOptions, apiSettings, listenErrorMessage } from './ui-command.js';
import { parseScheduleMetricsMode, type ScheduleMetricsMode } from '../admin/schedule-health.js';
import { releaseLoadMemory, RELEASE_AFTER_SCHEDULES } from '../memory.js';
import { otelFlagEndpoint, startTracing, tracingWanted, type OccurrenceTracer } from '../tracing/tracer.js';

/** What a replica started with an IPC channel sends its parent for each run event (engine/events.ts). */
export interface RunMessage {
  type: 'cronflock:run';
  event: RunEvent;
}

/** The whole stop may take `--grace` plus this (hand-overs, closing connections, stopping a private Redis). */
export const STOP_LIMIT_MARGIN_MS = 30_000;

const d = (ms: number): string => formatDurationMs(ms);

/**
 * Whether `start` also writes a schedule file's errors as JSON log lines (stdout) besides the `file:line:col`
 * text (stderr): not when both are the same person's terminal, who would read every error twice; yes when the
 * log goes elsewhere (a pipe, a file, a log collector), which must see them too.
 */
export function fileErrorsAlsoLogged(stdoutIsTTY: boolean, stderrIsTTY: boolean): boolean {
  return !(stdoutIsTTY && stderrIsTTY);
}

/**
 * What `start` says with no schedule path when it does not watch the cluster's Schedules either: the mode in
 * force and why it does not watch, and the two ways to give it something to run.
 */
export function noPathMessage(mode: WatchMode): string {
  const why = mode === 'off' ? '--watch-schedules is off' : '--watch-schedules is auto, which watches only in a Kubernetes pod';
  return `nothing to run: no schedule path, and Schedules from the cluster are not watched (${why}); give a schedule file or directory, the --redis (or REDIS_URL) of a flock whose stored schedules to run, or use --watch-schedules on`;
}

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
    .argument('[path]', 'schedule file or directory (optional: without it, the stored schedules and/or the Schedules of the cluster run)');
  addRedisOptions(c, 'Redis URL (without it and REDIS_URL: a private redis-server for this replica only)');
  for (const f of START_FLAGS) c.addOption(flagOption(f));
  addApiOptions(c, undefined);
  c.action(start);
}

async function start(path: string | undefined, o: Record<string, unknown> & RedisFlags): Promise<void> {
  let options: RunnerOptions;
  try {
    const user: Partial<RunnerOptions> = { namespace: o.namespace, ...optionsFromFlags(o) };
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
  const logFileErrors = fileErrorsAlsoLogged(process.stdout.isTTY === true, process.stderr.isTTY === true);
  for (const e of first.fileErrors) {
    process.stderr.write(`${e.format()}\n`);
    if (logFileErrors) log.error({ file: e.file, line: e.line, col: e.col, field: e.field }, e.reason);
  }
  for (const w of first.fileWarnings) process.stderr.write(`warning: ${w.format()}\n`);
  if (first.runs.length === 0 && !sources.watchingCluster && path !== undefined) throw new CliError(`no valid schedules in ${path}; nothing to run`);
  if (path === undefined && !sources.watchingCluster && o.redis === undefined) {
    // A private redis-server holds no stored schedules: nothing could ever run.
    throw new CliError(noPathMessage(o.watchSchedules as WatchMode));
  }
  if (first.refusedFiles.length > 0) log.warn({ refused: first.refusedFiles }, 'refused files are ignored; valid files run');
  let closeStored: (() => Promise<void>) | undefined;
  const schedules = first.runs.map((r) => r.schedule);
  // What the stored schedules' step below compares with, not the first combination itself: a closure's variable
  // lives as long as the replica, and the first combination's list of runs is ~4 MB at 100,000 schedules.
  const firstErrorMessages = new Set(first.fileErrors.map((f) => f.message));
  const firstRefusedCount = first.refusedFiles.length;

  const events = new EngineEvents();
  // A supervisor with an IPC channel (the demo) follows the runs; a closed channel is not this replica's problem.
  if (process.send) {
    const send = process.send.bind(process);
    events.on('run', (event) => void send({ type: 'cronflock:run', event } satisfies RunMessage, undefined, undefined, () => undefined));
  }
  sources.subscribe(events); // the Schedules' status and Events (runner/kubernetes/reporter.ts)

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
    // The third source, the stored schedules (runner/sources/stored.ts): read in full once Redis answers (the
    // replica waits for it, saying why, with its admin server up) and BEFORE the replica joins, publishes, plans
    // or claims anything, so a file or Schedule that defines a stored name is refused (combine.ts) before any of
    // it runs; then followed.
    let opened: Awaited<ReturnType<typeof import('../sources/stored.js').openStoredSchedules>> | undefined;
    const resolveSchedules = async (): Promise<CompiledSchedule[]> => {
      const { openStoredSchedules } = await import('../sources/stored.js');
      opened = await openStoredSchedules({ redisUrl: target!.url, redisTls: target!.tls, namespace: options.namespace, replica: options.replica, log });
      closeStored = opened.close;
      await sources.addStored(opened.stored);
      for (const e of sources.first.fileErrors) {
        if (firstErrorMessages.has(e.message)) continue;
        process.stderr.write(`${e.format()}\n`);
        if (logFileErrors) log.error({ file: e.file, line: e.line, col: e.col, field: e.field }, e.reason);
      }
      if (sources.first.refusedFiles.length > firstRefusedCount) log.warn({ refused: sources.first.refusedFiles }, 'refused files are ignored; valid files run');
      return sources.schedules();
    };
    replica = await Replica.start({ redisUrl: target.url, redisTls: target.tls, schedules, options, log, admin, events, signal: aborted.signal, scheduleMetrics, tracing, resolveSchedules });
    if (aborted.signal.aborted || !opened) return;
    if (path === undefined && !sources.watchingCluster) log.info({ stored: opened.stored.schedules().length }, 'no schedule path: running the stored schedules alone');
    try {
      stopExtras = await startReplicaExtras(replica, { redisUrl: target.url, redisTls: target.tls, historyMs, capture, version: packageVersion(), log, ui: api }); // dashboard
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (api && (code === 'EADDRINUSE' || code === 'EACCES' || code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND' || code === 'EAI_AGAIN')) throw new CliError(listenErrorMessage(api.listen, err));
      throw err;
    }
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
    await closeStored?.();
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
  // A large load leaves hundreds of MB of garbage that V8 keeps resident: give it back once (runner/memory.ts).
  const loaded = running.scheduleCount;
  if (loaded >= RELEASE_AFTER_SCHEDULES) {
    // Under the loading hold (a 30 s membership): the collection blocks the event loop, at 1M schedules on a busy
    // host for longer than the 2 s membership TTL, and a lapse would make the others take its share for a moment.
    // Redis away for the hold's heartbeat: nothing to keep, collect all the same.
    const r = await running.planner.whileLoading(async () => releaseLoadMemory()).catch(() => releaseLoadMemory());
    if (r) log.info({ schedules: loaded, heapUsedMb: mb(r.heapUsedAfter), heapTotalMb: mb(r.heapTotalAfter), rssMb: mb(r.rssAfter), rssBeforeMb: mb(r.rssBefore), tookMs: Math.round(r.tookMs) }, 'memory of the load given back');
  }

  // Reloads (one at a time) when a file or a Schedule changes, and on SIGHUP; refused definitions keep their
  // running versions (runner/sources/).
  sources.started(running, o.watch !== false);
}

/** Bytes as whole MB, for log lines. */
function mb(bytes: number): number {
  return Math.round(bytes / 1048576);
}

/** The string options of `o` named in `names` (flag key → result key), left out when unset. */
function pickStrings(o: Record<string, unknown>, names: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [flag, key] of Object.entries(names)) if (typeof o[flag] === 'string') out[key] = o[flag];
  return out;
}
