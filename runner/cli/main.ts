/**
 * `cronflock`: the command line.
 *
 *   cronflock start [path]       run one replica (REDIS_URL or --redis; else a private redis-server); files
 *                                and/or the cluster's Schedule resources
 *   cronflock validate <path>    check schedule files; file:line:col errors; exit 1 when any file is refused
 *   cronflock next <path>        upcoming due times, fire times and window ends, in UTC and local time
 *   cronflock status             live replicas, schedules, backlog
 *   cronflock runs               run records from Redis
 *   cronflock trigger | backfill | suspend | resume <schedule>
 *   cronflock rbac <path>        the Kubernetes permissions of cleanup schedules
 *   cronflock restore <backup>   restore a backup into a cluster (--dry-run: the plan only)
 *   cronflock convert [paths]    Kubernetes CronJobs as Schedules
 *   cronflock ui                 the dashboard and the HTTP API of a flock (read-only without --api-token-file)
 *   cronflock audit              the audit log: who triggered, suspended, resumed or backfilled what, and why
 *
 * Exit codes: 0 done; 1 `validate` refused a file, or an unexpected failure (printed with its stack); 2 bad
 * input or an unusable Redis (the message says what is wrong and what to try); `start` exits 130/143 when a
 * second SIGINT/SIGTERM forces it.
 */
import { Command, CommanderError } from 'commander';
import { boundedIntArg, isoTimeArg } from './arg-parsers.js';
import { loadSchedules } from '../config/load.js';
import { MAX_NEXT_COUNT, nextRows, noteOf, truncationNote, type NextRow } from './next-rows.js';
import { packageVersion } from './package-info.js';
import { OptionsError } from '../engine/options.js';
import { CliError } from './redis-target.js';
import { addStartCommand, reportLoad } from './start-command.js';
import { flagNames } from './start-options.js';
import { table } from './text.js';

/** Exit code of bad input: a usage error, a bad value, a refused URL (see the module doc). */
export const EXIT_BAD_INPUT = 2;

const ENVIRONMENT = `
Environment (a flag given on the command line wins):
  REDIS_URL                 --redis: the flock's Redis (redis://, rediss://, redis+sentinel://, redis+cluster://)
  REDIS_TLS_CA_FILE         --redis-tls-ca; also REDIS_TLS_CERT_FILE, REDIS_TLS_KEY_FILE, REDIS_TLS_INSECURE=1
  CRONFLOCK_NAMESPACE       --namespace: key namespace of the flock (default cronflock)
  CRONFLOCK_REDIS_TIMEOUT   --redis-timeout of status, runs, audit, trigger, backfill, suspend, resume, apply,
                            delete, list, tenants: seconds to wait for a Redis that took the connection but
                            does not answer (default 10)
  CRONFLOCK_REPLICA         start --replica: this replica's name (default host-pid-random)
  CRONFLOCK_ADMIN           start --admin: where /metrics, /healthz, /readyz listen (default 127.0.0.1:9464)
  CRONFLOCK_WATCH_SCHEDULES start --watch-schedules: auto (default) | on | off
  CRONFLOCK_SCHEDULE_METRICS
                            start --schedule-metrics: per-schedule health series: on (default) | off | top:N
  OTEL_EXPORTER_OTLP_ENDPOINT
                            start --otel: send OpenTelemetry traces over OTLP/HTTP (off when neither is set)
  CRONFLOCK_LOG_LEVEL       trace | debug | info (default) | warn | error; logs are JSON lines (pipe to pino-pretty)
  CRONFLOCK_DEMO_PORT       npm start: port of the demo's receiver (default 8787; 0: any free port)
  CRONFLOCK_UI_LISTEN       ui, start --ui: --listen, where the dashboard and API listen (default 127.0.0.1:8080)
  CRONFLOCK_API_TOKEN_FILE  ui, start --ui: --api-token-file, the bearer tokens that allow actions
  KUBECONFIG                Kubernetes jobs, Schedules, rbac and restore: the kubeconfig (default ~/.kube/config, in-cluster)

Exit codes: 0 done; 1 validate refused a file, or an unexpected failure; 2 bad input or an unusable Redis
(the message says what to fix); start: 130/143 when a second SIGINT/SIGTERM forces the exit.
`;

const program = new Command('cronflock')
  .description('Leaderless scheduled jobs: every replica equal, one claimant per occurrence, on Redis')
  .version(packageVersion())
  // One line after an error, not the whole help; every bad input exits 2 (commander's own errors exit 1).
  .showHelpAfterError('(add --help for usage)')
  .exitOverride((err: CommanderError) => process.exit(err.exitCode === 0 ? 0 : EXIT_BAD_INPUT))
  .addHelpText('after', ENVIRONMENT);

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
  .description("print upcoming due times, fire times and jitter window ends, in UTC and in the schedule's time zone")
  .argument('<path>', 'schedule file or directory')
  .option('-s, --schedule <name>', 'only this schedule')
  .option(
    '-n, --count <n>',
    `occurrences per schedule (at most ${MAX_NEXT_COUNT.toLocaleString('en-US')})`,
    boundedIntArg(MAX_NEXT_COUNT, 'to see further, run next again with --from the last due time it printed'),
    5,
  )
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
      if (next.truncated) process.stderr.write(`${truncationNote(s.name, next.rows.length, o.count, next.scannedToMs!)}\n`);
    }
    if (o.json) process.stdout.write(`${JSON.stringify(rows, null, 2)}\n`);
    else {
      process.stdout.write(
        table(
          ['SCHEDULE', 'DUE (UTC)', 'FIRE (UTC)', 'WINDOW END (UTC)', 'FIRE (LOCAL)', 'ZONE', 'NOTE'],
          rows.map((r) => [r.schedule, r.dueAt, r.fireAt, r.windowEnd, r.fireLocal, r.timeZone, noteOf(r)]),
        ),
      );
    }
  });

addStartCommand(program);
// `cronflock start …` (a replica) registers only what it runs: the other commands' modules, and what they alone
// import, are not loaded (~45 ms of CPU on Node 20 at every replica start). Any other command line, `--help`
// included, registers them all, in this order.
if (process.argv[2] !== 'start') {
  const [status, runs, control, store, rbac, restore, convert, ui, audit, alertRules] = await Promise.all([
    import('./status-command.js'),
    import('./runs-command.js'),
    import('./control-commands.js'),
    import('./store-commands.js'),
    import('./rbac-command.js'),
    import('./restore-command.js'),
    import('./convert-command.js'),
    import('./ui-command.js'),
    import('./audit-command.js'),
    import('./alert-rules-command.js'),
  ]);
  status.addStatusCommand(program);
  runs.addRunsCommand(program);
  control.addControlCommands(program);
  store.addStoreCommands(program);
  rbac.addRbacCommand(program);
  restore.addRestoreCommand(program);
  convert.addConvertCommand(program);
  ui.addUiCommand(program);
  audit.addAuditCommand(program);
  alertRules.addAlertRulesCommand(program);
}

// `cronflock runs | head`: a closed pipe ends the output, not the process with a stack trace.
process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  if (err.code === 'EPIPE') process.exit(0);
  throw err;
});
// `cronflock start bad.yaml 2>&1 | head -1`: the same for the error output (it hung on the closed pipe).
process.stderr.on('error', (err: NodeJS.ErrnoException) => {
  if (err.code === 'EPIPE') process.exit(typeof process.exitCode === 'number' && process.exitCode !== 0 ? process.exitCode : EXIT_BAD_INPUT);
  throw err;
});

program.parseAsync(process.argv).catch((err: unknown) => {
  const code = (err as { code?: unknown })?.code;
  if (err instanceof CliError) {
    process.stderr.write(`cronflock: ${err.message}\n`);
    process.exit(EXIT_BAD_INPUT);
  }
  if (typeof code === 'string' && /^[A-Z][A-Z_]+$/.test(code)) {
    // Our typed errors (options, namespace, Redis URL …) say what is wrong and how to fix it: no stack. Option
    // names become flags only in the runner's own option errors: a job's message ("namespace shop does not
    // exist") means the word.
    const message = (err as Error).message;
    process.stderr.write(`cronflock: ${err instanceof OptionsError || code === 'NAMESPACE_INVALID' ? flagNames(message) : message}\n`);
    process.exit(EXIT_BAD_INPUT);
  }
  process.stderr.write(`cronflock: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
