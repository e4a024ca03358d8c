/**
 * Shared set-up of multi-replica tests: a real redis-server, an HTTP receiver, a temporary schedule file, and
 * helpers to read the run records the replicas wrote.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { Keyspace } from '../../runner/redis/keys.js';
import { RedisServerProcess } from '../../runner/redis/server-process.js';
import { listRuns, type RunRecord } from '../../runner/records/runs.js';
import { Receiver } from './receiver.js';
import { ReplicaProcess, type ReplicaProcessOptions } from './replica.js';

/** Everything a multi-replica test needs; call {@link Flock.close} in afterEach. */
export class Flock {
  readonly replicas: ReplicaProcess[] = [];
  private client: Redis | undefined;

  private constructor(
    readonly redis: RedisServerProcess,
    readonly receiver: Receiver,
    readonly dir: string,
  ) {}

  static async start(redisArgs: string[] = []): Promise<Flock> {
    const dir = mkdtempSync(join(tmpdir(), 'cronflock-test-'));
    return new Flock(await RedisServerProcess.start({ args: redisArgs }), await Receiver.start(), dir);
  }

  /** Writes a schedule file into the test's directory and returns its path. */
  writeSchedules(yaml: string, name = 'schedules.yaml'): string {
    const p = join(this.dir, name);
    writeFileSync(p, yaml);
    return p;
  }

  /** Starts a replica process against this flock's Redis. */
  async startReplica(o: Omit<ReplicaProcessOptions, 'redisUrl'>): Promise<ReplicaProcess> {
    const r = await ReplicaProcess.start({ ...o, redisUrl: this.redis.url });
    this.replicas.push(r);
    return r;
  }

  /** A client on this flock's Redis (reconnects after a restart). */
  get redisClient(): Redis {
    this.client ??= new Redis(this.redis.url, { maxRetriesPerRequest: 3 });
    return this.client;
  }

  /**
   * Whether `replica` is a live member of the planning membership now, on the Redis clock (its registration in
   * `keys.replicas` has not expired).
   */
  async isLiveMember(replica: string, keys: Keyspace = new Keyspace()): Promise<boolean> {
    const [[, expiry], [, time]] = (await this.redisClient.multi().zscore(keys.replicas, replica).time().exec()) as [[null, string | null], [null, [string, string]]];
    return expiry !== null && Number(expiry) > Number(time[0]) * 1000 + Math.floor(Number(time[1]) / 1000);
  }

  /** Run records of a schedule (or all), newest first. */
  runs(schedule?: string): Promise<RunRecord[]> {
    return listRuns(this.redisClient, new Keyspace(), { schedule, limit: 100_000 });
  }

  async close(): Promise<void> {
    // Tests that exercise a graceful stop do it themselves; here speed matters.
    for (const r of this.replicas) r.signal("SIGCONT");
    for (const r of this.replicas) r.signal("SIGKILL");
    await Promise.all(this.replicas.map((r) => r.exited));
    this.client?.disconnect();
    await this.receiver.close();
    await this.redis.cleanup();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** Whether `r` logged a line whose message contains `text`. */
export function hasLogged(r: ReplicaProcess, text: string): boolean {
  return r.lines.some((l) => typeof l.msg === 'string' && l.msg.includes(text));
}

/** Resolves after `ms`. */
export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Polls `pred` until true or throws after `timeoutMs`. */
export async function until(pred: () => boolean | Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await pred())) {
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(50);
  }
}
