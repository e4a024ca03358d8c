/**
 * Flock-wide job locks with fencing tokens, and fenced checkpoints beside them: the Redis side of
 * {@link JobCoordination} (jobs/types.ts). Used by `kind: restore` and `cronflock restore` for "one restore per
 * target cluster at a time; a re-claimed restore resumes".
 *
 * Keys (all under the flock's hash tag, so the scripts stay in one Cluster slot):
 * - `{ns}:joblock:<name>` HASH owner, token, until (Redis ms); expires with the lease (PEXPIRE).
 * - `{ns}:jobfence:<name>` STRING: the fencing counter, INCR on every acquisition; never expires, so a token is
 *   never handed out twice for one name.
 * - `{ns}:jobckpt:<name>:<scope>` HASH: checkpoints; expire {@link CHECKPOINT_RETENTION_MS} after the last write.
 *
 * Every decision is taken in Lua on the Redis clock (`TIME`), like the claim scripts (lua/job-lock-*.lua,
 * lua/job-checkpoint.lua): a lease that lapsed there is
 * never renewed, and a checkpoint write is accepted only from the current token while its lease is live. The
 * holder side is the claims' own lease machine ({@link HeldLease}, redis/lease.ts): renewed every ttl/3, its signal
 * fires as soon as it can know the lease is gone (refused renewal, or ttl passed on the monotonic clock since the
 * last renewal was sent: e.g. after SIGSTOP/SIGCONT).
 */
import type { JobCheckpoints, JobCoordination, JobLock, JobLockOptions } from '../../jobs/types.js';
import type { RedisClient } from './connect.js';
import type { Keyspace } from './keys.js';
import { Scripts } from './script-loader.js';
import { sleep } from '../time/wait.js';
import { HeldLease, type LeaseLogger } from './lease.js';

/** How long checkpoints outlive their last write, in ms (7 days). */
export const CHECKPOINT_RETENTION_MS = 7 * 24 * 3600_000;

/** Another holder keeps the lock (code `LOCK_HELD`). */
export class JobLockHeldError extends Error {
  readonly code = 'LOCK_HELD';
  constructor(
    readonly lockName: string,
    /** Owner string of the current holder. */
    readonly holder: string,
    /** Its fencing token. */
    readonly holderToken: number,
    /** Lease left on the Redis clock when last asked, in ms. */
    readonly remainingMs: number,
  ) {
    super(
      `lock ${lockName} is held by ${holder} (fencing token ${holderToken}, lease ${Math.ceil(remainingMs / 1000)} s left): ` +
        'another run has it; wait for it to finish, or pass a longer wait',
    );
    this.name = 'JobLockHeldError';
  }
}

/** The lock was lost while held (code `LOCK_LOST`): refused renewal or checkpoint write, or a lapsed lease. */
export class JobLockLostError extends Error {
  readonly code = 'LOCK_LOST';
  constructor(message: string) {
    super(message);
    this.name = 'JobLockLostError';
  }
}

/** Waiting for a lock was aborted by the caller's signal (code `ABORTED`). */
export class JobLockAbortedError extends Error {
  readonly code = 'ABORTED';
  constructor(lockName: string) {
    super(`stopped waiting for lock ${lockName}`);
    this.name = 'JobLockAbortedError';
  }
}

/** Redis-backed {@link JobCoordination} for one flock namespace; one instance per connection is enough. */
export class RedisJobCoordination implements JobCoordination {
  private readonly scripts: Scripts;

  /**
   * @param redis a connection that fails fast while Redis is away (renewals retry on their own schedule)
   * @param keys the flock's keyspace (keys go under its hash tag)
   * @param defaultOwner owner recorded when a lock call names none (e.g. the replica name)
   * @param log where a held lock's failed renewals are logged (none: not logged)
   */
  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keyspace,
    private readonly defaultOwner: string,
    private readonly log?: LeaseLogger,
  ) {
    this.scripts = Scripts.on(redis);
  }

  /** Key of lock `name`. */
  lockKey(name: string): string {
    return this.keys.jobLock(name);
  }

  /** Key of the checkpoints of `scope` under lock `name`. */
  checkpointKey(name: string, scope: string): string {
    return this.keys.jobCheckpoints(name, scope);
  }

  /** See {@link JobCoordination.lock}. `RangeError` for a ttl under 300 ms or a name with spaces. */
  async lock(name: string, o: JobLockOptions): Promise<JobLock> {
    if (!/^\S{1,200}$/.test(name)) throw new RangeError(`lock name ${JSON.stringify(name)} must be 1–200 characters without spaces`);
    if (!(o.ttlMs >= 300)) throw new RangeError(`lock ttl must be at least 300 ms, got ${o.ttlMs}`);
    const owner = o.owner ?? this.defaultOwner;
    const deadline = performance.now() + (o.waitMs ?? 0);
    for (;;) {
      if (o.signal?.aborted) throw new JobLockAbortedError(name);
      const sent = performance.now();
      const out = (await this.scripts.run('job-lock-acquire', [this.lockKey(name), this.keys.jobFence(name)], [owner, o.ttlMs])) as (
        | number
        | string
      )[];
      const token = Number(out[0]);
      if (token > 0) return new HeldLock(this, name, token, o.ttlMs, sent, o.signal, this.log);
      const held = new JobLockHeldError(name, String(out[1]), Number(out[3]), Number(out[2]));
      const left = deadline - performance.now();
      if (left <= 0) throw held;
      await sleep(Math.min(left, Math.max(50, Math.min(held.remainingMs + 10, 500))), o.signal);
    }
  }

  /** @internal renew; 0 = lost. */
  async renew(name: string, token: number, ttlMs: number): Promise<number> {
    return Number(await this.scripts.run('job-lock-renew', [this.lockKey(name)], [token, ttlMs]));
  }

  /** @internal release; true when it was ours. */
  async release(name: string, token: number): Promise<boolean> {
    return Number(await this.scripts.run('job-lock-release', [this.lockKey(name)], [token])) === 1;
  }

  /** @internal fenced write; false = refused. */
  async writeCheckpoint(name: string, scope: string, token: number, op: 'set' | 'clear', fields: Record<string, string> = {}): Promise<boolean> {
    const args: string[] = [];
    for (const [k, v] of Object.entries(fields)) args.push(k, v);
    const out = await this.scripts.run('job-checkpoint', [this.lockKey(name), this.checkpointKey(name, scope)], [token, CHECKPOINT_RETENTION_MS, op, ...args]);
    return Number(out) === 1;
  }

  /** Reads every checkpoint of `scope` under lock `name` (no lock needed to read). */
  async readCheckpoints(name: string, scope: string): Promise<Map<string, string>> {
    const h = await this.redis.hgetall(this.checkpointKey(name, scope));
    return new Map(Object.entries(h));
  }
}

class HeldLock implements JobLock {
  private readonly lease: HeldLease<JobLockLostError>;
  private released = false;
  private readonly onOuterAbort: () => void;

  constructor(
    private readonly c: RedisJobCoordination,
    readonly name: string,
    readonly fencingToken: number,
    ttlMs: number,
    sentMono: number,
    private readonly outer: AbortSignal | undefined,
    log: LeaseLogger | undefined,
  ) {
    this.lease = new HeldLease<JobLockLostError>({
      ttlMs,
      sentMono,
      log,
      renew: async () => (await c.renew(name, fencingToken, ttlMs)) !== 0,
      lostError: (why) =>
        new JobLockLostError(
          why === 'lapsed'
            ? `lock ${name} (fencing token ${fencingToken}) lapsed: not renewed within ${ttlMs} ms`
            : `lock ${name} (fencing token ${fencingToken}) was taken over or lapsed`,
        ),
    });
    this.onOuterAbort = () => void this.release();
    outer?.addEventListener('abort', this.onOuterAbort, { once: true });
  }

  get signal(): AbortSignal {
    return this.lease.signal;
  }

  checkpoints(scope: string): JobCheckpoints {
    if (!/^\S{1,300}$/.test(scope)) throw new RangeError(`checkpoint scope ${JSON.stringify(scope)} must be 1–300 characters without spaces`);
    const write = async (op: 'set' | 'clear', fields?: Record<string, string>): Promise<void> => {
      if (this.signal.aborted) throw this.signal.reason as Error;
      const ok = await this.c.writeCheckpoint(this.name, scope, this.fencingToken, op, fields);
      if (!ok) {
        const err = new JobLockLostError(`lock ${this.name} (fencing token ${this.fencingToken}) is no longer held: checkpoint refused`);
        this.lease.abort(err);
        throw err;
      }
    };
    return {
      getAll: () => this.c.readCheckpoints(this.name, scope),
      set: (fields) => write('set', fields),
      clear: () => write('clear'),
    };
  }

  async release(): Promise<void> {
    if (this.released) return;
    this.released = true;
    this.lease.close();
    this.outer?.removeEventListener('abort', this.onOuterAbort);
    this.lease.abort(new JobLockLostError(`lock ${this.name} released`));
    await this.c.release(this.name, this.fencingToken).catch(() => false);
  }
}
