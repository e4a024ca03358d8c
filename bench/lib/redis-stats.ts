/**
 * Redis-side cost of a phase: deltas of `INFO commandstats` (every command, those run inside Lua scripts
 * included, which Redis 7 counts too) and `INFO cpu` (user + system CPU of the server process).
 */
import type { Redis } from 'ioredis';

export interface RedisCounters {
  /** All commands except INFO/CLIENT (our own probes). */
  calls: number;
  /** EVAL/EVALSHA/FCALL calls. */
  scripts: number;
  /** Server CPU, user + system, ms. */
  cpuMs: number;
  /** Per command, for debugging. */
  byCommand: Map<string, number>;
}

export async function redisCounters(redis: Redis): Promise<RedisCounters> {
  const stats = await redis.info('commandstats');
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
  const cpu = await redis.info('cpu');
  const get = (k: string): number => Number(new RegExp(`^${k}:([\\d.]+)`, 'm').exec(cpu)?.[1] ?? 0);
  return { calls, scripts, cpuMs: (get('used_cpu_sys') + get('used_cpu_user')) * 1000, byCommand };
}

/** b − a. */
export function counterDelta(a: RedisCounters, b: RedisCounters): RedisCounters {
  const byCommand = new Map<string, number>();
  for (const [k, v] of b.byCommand) byCommand.set(k, v - (a.byCommand.get(k) ?? 0));
  return { calls: b.calls - a.calls, scripts: b.scripts - a.scripts, cpuMs: b.cpuMs - a.cpuMs, byCommand };
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
