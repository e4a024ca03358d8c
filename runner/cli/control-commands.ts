/**
 * `cronflock trigger | backfill | suspend | resume`: operate a running flock through Redis (see
 * runner/engine/control.ts). They need the same Redis and namespace as the replicas.
 */
import { Queue } from 'bullmq';
import { Command } from 'commander';
import { isoTimeArg } from './arg-parsers.js';
import { hostname } from 'node:os';
import { backfill, ControlError, resume, suspend, trigger, type ControlContext } from '../engine/control.js';
import { DEFAULT_OPTIONS } from '../engine/options.js';
import { RedisClock } from '../redis/clock.js';
import { Keyspace } from '../redis/keys.js';
import { Store } from '../redis/store.js';
import { settlesWithin } from '../time/wait.js';
import { addRedisOptions, CliError, withOneShotRedis, type RedisFlags } from './redis-target.js';

type Flags = RedisFlags & { json?: boolean };

/** Connects, runs `fn` with a control context, and turns refusals and Redis errors into CLI errors. */
function withControl<T>(o: Flags, fn: (c: ControlContext) => Promise<T>): Promise<T> {
  return withOneShotRedis(o, 'Redis', async (redis) => {
    const keys = new Keyspace(o.namespace);
    const queue = new Queue(keys.queueName, { connection: redis, prefix: keys.ns });
    queue.on('error', () => undefined);
    const clock = new RedisClock(redis, undefined, keys.ns); // TIME from the node that owns our slot
    try {
      return await fn({
        redis,
        keys,
        store: new Store(redis, keys),
        queue,
        clock,
        options: { retentionMs: DEFAULT_OPTIONS.retentionMs, prefetchMs: DEFAULT_OPTIONS.prefetchMs },
        by: `cli@${hostname()}`,
      });
    } catch (err) {
      if (err instanceof ControlError) throw new CliError(err.message);
      throw err;
    } finally {
      await settlesWithin(queue.close(), 2_000);
    }
  });
}

function common(c: Command): Command {
  addRedisOptions(c).option('--json', 'print JSON');
  return c;
}

const print = (o: Flags, value: unknown, text: string): void => {
  process.stdout.write(o.json ? `${JSON.stringify(value, null, 2)}\n` : `${text}\n`);
};

/** Adds the control commands to the program. */
export function addControlCommands(program: Command): void {
  common(
    program
      .command('trigger')
      .description('run a schedule now, as a manual occurrence (the concurrency policy applies)')
      .argument('<schedule>', 'schedule name'),
  ).action(async (schedule: string, o: Flags) => {
    const key = await withControl(o, (c) => trigger(c, schedule));
    print(o, { occurrence: key }, `triggered ${key}`);
  });

  common(
    program
      .command('backfill')
      .description('run the occurrences due in a past range that have no record yet, oldest first')
      .argument('<schedule>', 'schedule name')
      .requiredOption('--from <iso>', 'first due time to consider (inclusive)', isoTimeArg)
      .requiredOption('--to <iso>', 'last due time to consider (inclusive)', isoTimeArg),
  ).action(async (schedule: string, o: Flags & { from: number; to: number }) => {
    const r = await withControl(o, (c) => backfill(c, schedule, o.from, o.to));
    print(o, r, `enqueued ${r.enqueued.length} occurrence(s); ${r.existing.length} already had a record and were left alone`);
  });

  common(
    program
      .command('suspend')
      .description('suspend a schedule on every replica: its occurrences are recorded skipped until resume')
      .argument('<schedule>', 'schedule name')
      .option('--note <text>', 'why (shown by `cronflock status`)'),
  ).action(async (schedule: string, o: Flags & { note?: string }) => {
    const s = await withControl(o, (c) => suspend(c, schedule, o.note));
    const since = `since ${new Date(s.sinceMs).toISOString()} by ${s.by}${s.note ? `: ${s.note}` : ''}`;
    print(o, { schedule, ...s }, s.alreadySuspended ? `${schedule} was already suspended (${since}); nothing changed` : `suspended ${schedule}`);
  });

  common(
    program
      .command('resume')
      .description('resume a suspended schedule (onResume: latest runs the latest missed occurrence once)')
      .argument('<schedule>', 'schedule name'),
  ).action(async (schedule: string, o: Flags) => {
    const r = await withControl(o, (c) => resume(c, schedule));
    const text = !r.wasSuspended
      ? `${schedule} was not suspended`
      : `resumed ${schedule}${r.ran ? `; running ${r.ran}` : ''}${r.note ? ` (${r.note})` : ''}`;
    print(o, r, text);
  });
}
