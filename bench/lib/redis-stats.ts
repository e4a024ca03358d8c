/**
 * Redis-side cost of a phase: deltas of `INFO commandstats` (every command, those run inside Lua scripts
 * included, which Redis 7 counts too) and `INFO cpu` (user + system CPU of the server process), read in one
 * `INFO server commandstats cpu` snapshot (Redis ≥ 7 takes several sections) together with the server's
 * `run_id`, so that a delta is only ever taken between two snapshots of the same server process.
 */
import { readFileSync } from 'node:fs';
import type { Redis } from 'ioredis';

export interface RedisCounters {
  /** `run_id` of the server (a new one per process start). */
  runId: string;
  /** All commands except INFO/CLIENT (our own probes). */
  calls: number;
  /** EVAL/EVALSHA/FCALL calls. */
  scripts: number;
  /** Server CPU, user + system, ms. */
  cpuMs: number;
  /** Per command, for debugging. */
  byCommand: Map<string, number>;
  /**
   * Times the server woke from waiting for input: its voluntary context switches (`/proc/<pid>/status`, Linux;
   * the server runs on this host in the bench). Each costs it tens of µs (`npm run bench -- wakeup`). NaN when
   * not readable.
   */
  wakeups: number;
}

/** Voluntary context switches of process `pid` (Linux /proc), NaN when not readable. */
function voluntarySwitches(pid: number): number {
  try {
    return Number(/^voluntary_ctxt_switches:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? NaN);
  } catch {
    return NaN;
  }
}

/**
 * Counters of the server `redis` is connected to. With `expectRunId`, throws when that server is not the
 * expected process (e.g. another process took the port), so that nobody else's commands are measured.
 */
export async function redisCounters(redis: Redis, expectRunId?: string): Promise<RedisCounters> {
  const stats = String(await redis.call('INFO', 'server', 'commandstats', 'cpu'));
  const runId = /^run_id:(\w+)/m.exec(stats)?.[1] ?? '';
  if (expectRunId !== undefined && runId !== expectRunId) {
    throw new Error(`the Redis server measured (run_id ${runId || 'unknown'}) is not the one the bench started (run_id ${expectRunId})`);
  }
  let calls = 0;
  let scripts = 0;
  const byCommand = new Map<string, number>();
  for (const m of stats.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) {
    const cmd = m[1]!;
    const n = Number(m[2]);
    byCommand.set(cmd, n);
    if (cmd !== 'info' && !cmd.startsWith('client')) calls += n;
    if (cmd === 'evalsha' || cmd === 'eval' || cmd === 'fcall' || cmd === 'evalsha_ro') scripts += n;
  }
  const get = (k: string): number => Number(new RegExp(`^${k}:([\\d.]+)`, 'm').exec(stats)?.[1] ?? 0);
  return { runId, calls, scripts, cpuMs: (get('used_cpu_sys') + get('used_cpu_user')) * 1000, byCommand, wakeups: voluntarySwitches(get('process_id')) };
}

/** b − a. @throws when a and b are of different server processes (a restart in between, or another server). */
export function counterDelta(a: RedisCounters, b: RedisCounters): RedisCounters {
  if (a.runId !== b.runId) throw new Error(`Redis counters of two server processes (run_id ${a.runId} → ${b.runId}): no delta`);
  const byCommand = new Map<string, number>();
  for (const [k, v] of b.byCommand) byCommand.set(k, v - (a.byCommand.get(k) ?? 0));
  return { runId: b.runId, calls: b.calls - a.calls, scripts: b.scripts - a.scripts, cpuMs: b.cpuMs - a.cpuMs, byCommand, wakeups: b.wakeups - a.wakeups };
}

/** The busiest commands of a delta, e.g. "evalsha 120k, hset 80k". */
export function topCommands(d: RedisCounters, n = 6): string {
  return [...d.byCommand]
    .filter(([, v]) => v > 0)
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(([k, v]) => `${k} ${v}`)
    .join(', ');
}
