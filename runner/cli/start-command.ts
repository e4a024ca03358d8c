/**
 * `cronflock start <path>`: one replica of the flock, with reload on file changes and SIGHUP (engine/reload.ts),
 * and a shutdown that ends whatever Redis does:
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
import { Option, type Command } from 'commander';
import { loadSchedules, type LoadResult } from '../config/load.js';
import { compileOptions, OptionsError, type RunnerOptions } from '../engine/options.js';
import { EngineEvents, type RunEvent } from '../engine/events.js';
import { ScheduleReloader } from '../engine/reload.js';
import { Replica, ReplicaStartAborted } from '../engine/replica.js';
import { parseListenAddress } from '../admin/server.js';
import { createLogger } from '../log.js';
import { redactRedisUrl } from '../redis/connect.js';
import { formatDurationMs } from '../time/duration.js';
import { settlesWithin } from '../time/wait.js';
import { flagNames, flagOption, optionsFromFlags, START_FLAGS } from './start-options.js';
import { addRedisOptions, CliError, resolveRedis, type RedisFlags, type RedisTarget } from './redis-target.js';
import { onStopSignals, signalExitCode } from './stop-signals.js';

/** What a replica started with an IPC channel sends its parent for each run event (engine/events.ts). */
export interface RunMessage {
  type: 'cronflock:run';
  event: RunEvent;
}

/** The whole stop may take `--grace` plus this (hand-overs, closing connections, stopping a private Redis). */
export const STOP_LIMIT_MARGIN_MS = 25_000;

const d = (ms: number): string => formatDurationMs(ms);

/** Prints refused files' errors to stderr; returns the number of refused files. */
export function reportLoad(res: LoadResult, verbose: boolean): number {
  for (const e of res.errors) process.stderr.write(`${e.format()}\n`);
  if (verbose) for (const f of res.files) process.stdout.write(`${f.ok ? 'ok     ' : 'REFUSED'} ${f.file} (${f.scheduleCount} schedules)\n`);
  return res.files.filter((f) => !f.ok).length + (res.files.length === 0 ? 1 : 0);
}

/** Adds `start` to the program. */
export function addStartCommand(program: Command): void {
  const c = program
    .command('start')
    .description('run one replica of the flock on the schedules at <path>')
    .argument('<path>', 'schedule file or directory');
  addRedisOptions(c, 'Redis URL (without it and REDIS_URL: a private redis-server for this replica only)');
  for (const f of START_FLAGS) c.addOption(flagOption(f));
  c.option('--no-watch', 'do not reload when the schedule files change (SIGHUP still reloads)')
    .addOption(new Option('--admin <host:port|off>', 'serve /metrics, /healthz, /readyz here').env('CRONFLOCK_ADMIN').default('127.0.0.1:9464'))
    .action(start);
}

async function start(path: string, o: Record<string, unknown> & RedisFlags): Promise<void> {
  const user: Partial<RunnerOptions> = { namespace: o.namespace, ...optionsFromFlags(o) };
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

  const events = new EngineEvents();
  // A supervisor with an IPC channel (the demo) follows the runs; a closed channel is not this replica's problem.
  if (process.send) {
    const send = process.send.bind(process);
    events.on('run', (event) => void send({ type: 'cronflock:run', event } satisfies RunMessage, undefined, undefined, () => undefined));
  }

  // From here on a stop request is honoured at every point: what has been started stops, in reverse order.
  const aborted = new AbortController();
  let target: RedisTarget | undefined;
  let replica: Replica | undefined;
  process.on('exit', () => target?.private?.stopNow()); // never leave a private server behind
  const starting = (async (): Promise<void> => {
    target = await resolveRedis(o.redis, true, log, o);
    if (aborted.signal.aborted) return;
    log.info(
      { redis: redactRedisUrl(target.url), schedules: res.schedules.length, names: res.schedules.slice(0, 20).map((s) => s.name), lockMs: options.lockMs },
      `replica starting with ${res.schedules.length} schedules (lock ${d(options.lockMs)})`,
    );
    replica = await Replica.start({ redisUrl: target.url, redisTls: target.tls, schedules: res.schedules, options, log, admin, events, signal: aborted.signal });
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
    await replica?.stop();
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

  // Reloads (engine/reload.ts): on file changes unless --no-watch, and on SIGHUP.
  const reloader = new ScheduleReloader(running, path, res.schedules, log);
  if (o.watch !== false) reloader.watch();
  process.on('SIGHUP', () => void reloader.reload('SIGHUP'));
}
