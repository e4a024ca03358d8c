/**
 * What a replica adds for the dashboard, beside the engine: the flock's `--history` for the scripts, its run log
 * lines kept in Redis (runner/history/log-capture.ts), its self-description for the flock page
 * (replica-info.ts), and with `--ui` the dashboard itself. On a Redis connection of its own, so that the log
 * lines written while the replica stops still reach Redis after the engine's connections close.
 */
import type { Replica } from '../engine/replica.js';
import { DEFAULT_HISTORY_MS, publishHistoryMs, readHistoryMs } from '../history/config.js';
import type { LogCapture } from '../history/log-capture.js';
import type { Logger } from '../log.js';
import { connectCommands, type RedisTlsFiles } from '../redis/connect.js';
import { settlesWithin } from '../time/wait.js';
import type { AccessRules } from './auth.js';
import { startDashboard, whenReady, type Dashboard } from './dashboard.js';
import { startReplicaInfo } from './replica-info.js';
import { redisFailure } from '../redis/outage.js';

/**
 * Starts the extras of a running replica.
 * @returns stop: closes the dashboard, stops the info loop, writes the last log lines (bounded), disconnects.
 * @throws the dashboard's listen error (everything started here is closed then).
 */
export async function startReplicaExtras(
  replica: Replica,
  o: {
    redisUrl: string;
    redisTls?: RedisTlsFiles;
    /** `--history`, published for the flock's scripts; undefined (the library's replicas): the flock's is kept and read. */
    historyMs?: number;
    capture: LogCapture;
    version: string;
    log: Logger;
    ui?: { listen: { host: string; port: number }; rules: AccessRules };
  },
): Promise<() => Promise<void>> {
  const name = replica.opts.replica;
  const redis = connectCommands(o.redisUrl, `cronflock:${name}:history`, o.redisTls);
  redis.on('error', () => undefined); // the engine's connections report Redis problems
  await whenReady(redis, 5_000);
  let historyMs = o.historyMs ?? DEFAULT_HISTORY_MS;
  if (o.historyMs !== undefined) {
    await publishHistoryMs(redis, replica.keys, o.historyMs).catch((err: Error) => {
      const f = redisFailure(err);
      o.log.warn(f.fields, `could not publish --history (${f.text}); the scripts keep 30 d`);
    });
  } else {
    historyMs = await readHistoryMs(redis, replica.keys).catch(() => DEFAULT_HISTORY_MS);
  }
  // The run log lines, for both kinds of replica (cronflock start and the library's startReplica).
  o.capture.attach(redis, replica.keys, historyMs);
  const stopInfo = startReplicaInfo(redis, replica.keys, {
    name,
    version: o.version,
    nowMs: () => replica.clock.now(),
    skewMs: () => -replica.clock.offsetMs,
    activeRuns: () => replica.executor.activeCount,
  });
  let ui: Dashboard | undefined;
  if (o.ui) {
    try {
      ui = await startDashboard({
        redisUrl: o.redisUrl,
        redisTls: o.redisTls,
        namespace: replica.opts.namespace,
        listen: o.ui.listen,
        rules: o.ui.rules,
        version: o.version,
        retentionMs: replica.opts.retentionMs,
        clientName: `cronflock:${name}:ui`,
      });
      o.log.info({ url: ui.url, actions: o.ui.rules.actions ? 'token' : 'off' }, `dashboard on ${ui.url}`);
    } catch (err) {
      await stopInfo();
      await o.capture.stop();
      redis.disconnect();
      throw err;
    }
  }
  return async () => {
    // Independent steps, each bounded, side by side: with a hung Redis the stop waits for the longest one only,
    // not for their sum on top of the engine's own bounded steps.
    await Promise.all([
      settlesWithin(ui?.close() ?? Promise.resolve(), 3_000),
      settlesWithin(stopInfo(), 2_000),
      settlesWithin(o.capture.stop(), 2_000),
    ]);
    redis.disconnect();
  };
}
