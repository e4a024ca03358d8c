/**
 * `cronflock ui`: the dashboard and the HTTP API for a flock, from Redis alone (no replica needed). Stateless: run
 * as many copies as you like. Read-only unless `--api-token-file` gives operator tokens.
 */
import { Option, type Command } from 'commander';
import { parseListenAddress } from '../admin/server.js';
import { loadTokenFile, READ_ONLY, TokenFileError } from '../api/auth.js';
import { DEFAULT_UI_LISTEN, startDashboard } from '../api/dashboard.js';
import { createLogger } from '../log.js';
import { redactRedisUrl } from '../redis/connect.js';
import { packageVersion } from './package-info.js';
import { addOneShotRedisOptions, CliError, DEFAULT_REDIS_TIMEOUT_S, resolveRedis, type RedisFlags } from './redis-target.js';
import { onStopSignals, signalExitCode } from './stop-signals.js';

/** Adds `--listen` and `--api-token-file` (shared by `ui` and `start --ui`). */
export function addApiOptions(c: Command, listenDefault: string | undefined): Command {
  const listen = new Option('--listen <host:port>', `where the dashboard and API listen${listenDefault ? '' : ` (with --ui; default ${DEFAULT_UI_LISTEN})`}`).env('CRONFLOCK_UI_LISTEN');
  if (listenDefault) listen.default(listenDefault);
  return c
    .addOption(listen)
    .addOption(
      new Option('--api-token-file <file>', 'bearer tokens for actions (one operator token, or YAML {reads, tokens: [{name, role: viewer|operator, token|sha256}]}); without it, actions are off').env(
        'CRONFLOCK_API_TOKEN_FILE',
      ),
    );
}

/**
 * What the dashboard's `--listen` failure means and what to do: a port in use (another process, or another
 * `cronflock ui`), a port that needs privileges, an address not on this machine, a host name that does not resolve;
 * else Node's words.
 */
export function listenErrorMessage(listen: { host: string; port: number }, err: unknown): string {
  const at = `--listen ${listen.host.includes(':') ? `[${listen.host}]` : listen.host}:${listen.port}`;
  const other = `pick another with --listen ${listen.host.includes(':') ? `[${listen.host}]` : listen.host}:<port> (port 0: any free port)`;
  switch ((err as NodeJS.ErrnoException)?.code) {
    case 'EADDRINUSE':
      return `${at}: port ${listen.port} is already in use (another process listens on it); ${other}`;
    case 'EACCES':
      return `${at}: not allowed to listen on port ${listen.port} (ports below 1024 need privileges); ${other}`;
    case 'EADDRNOTAVAIL':
      return `${at}: ${listen.host} is not an address of this machine; use 127.0.0.1, 0.0.0.0 (every interface) or one of its addresses`;
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return `${at}: the host ${listen.host} does not resolve; --listen takes host:port with an address or name of this machine, e.g. --listen 127.0.0.1:8080 (0.0.0.0:8080: every interface; [::1]:8080: IPv6)`;
    default:
      return `${at}: cannot listen: ${(err as Error)?.message ?? String(err)}`;
  }
}

/** The access rules and listen address from the flags. @throws CliError for a bad address or token file. */
export function apiSettings(o: { listen?: string; apiTokenFile?: string }): { listen: { host: string; port: number }; rules: ReturnType<typeof loadTokenFile> } {
  let listen;
  try {
    listen = parseListenAddress(o.listen ?? DEFAULT_UI_LISTEN, '--listen', DEFAULT_UI_LISTEN);
  } catch (err) {
    throw new CliError((err as Error).message);
  }
  try {
    return { listen, rules: o.apiTokenFile ? loadTokenFile(o.apiTokenFile) : READ_ONLY };
  } catch (err) {
    if (err instanceof TokenFileError) throw new CliError(err.message);
    throw err;
  }
}

/** Adds `ui` to the program. */
export function addUiCommand(program: Command): void {
  const c = program.command('ui').description('serve the dashboard and the HTTP API (/api/v1) of a flock; needs only its Redis');
  addOneShotRedisOptions(c); // --redis-timeout: how long a request waits for Redis before it is answered 503
  addApiOptions(c, DEFAULT_UI_LISTEN).action(async (o: RedisFlags & { listen: string; apiTokenFile?: string }) => {
    const { listen, rules } = apiSettings(o);
    const log = createLogger({ component: 'ui' });
    const target = await resolveRedis(o.redis, false, log, o);
    let ui;
    try {
      ui = await startDashboard({
        redisUrl: target.url,
        redisTls: target.tls,
        namespace: o.namespace,
        listen,
        rules,
        version: packageVersion(),
        redisTimeoutMs: (o.redisTimeout ?? DEFAULT_REDIS_TIMEOUT_S) * 1000,
      });
    } catch (err) {
      throw new CliError(listenErrorMessage(listen, err));
    }
    log.info(
      { url: ui.url, redis: redactRedisUrl(target.url), actions: rules.actions ? 'token' : 'off', readsNeedToken: rules.readsNeedToken },
      `dashboard on ${ui.url} (API ${ui.url}api/v1, actions ${rules.actions ? 'with an operator token' : 'off: no --api-token-file'})`,
    );
    const dashboard = ui;
    onStopSignals({
      stop: () =>
        void dashboard.close().then(() => {
          log.info('stopped');
          process.exit(0);
        }),
      force: (signal) => process.exit(signalExitCode(signal)),
    });
  });
}
