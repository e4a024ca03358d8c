/** Reading the log lines kept with an occurrence (runner/history/log-capture.ts writes them). */
import type { RedisClient } from '../redis/connect.js';
import type { Keyspace } from '../redis/keys.js';
import { HistoryKeys } from './keys.js';
import type { LogLine } from './model.js';

/** pino's numeric levels. */
const LEVELS: Record<number, string> = { 10: 'trace', 20: 'debug', 30: 'info', 40: 'warn', 50: 'error', 60: 'fatal' };
/** Fields every line of a run carries: implied by where the line is shown. */
const IMPLIED = new Set(['level', 'time', 'msg', 'occurrence', 'attempt', 'fencingToken', 'pid', 'hostname']);

/** One stored line as a {@link LogLine}. */
export function toLogLine(attempt: number, raw: string): LogLine {
  let o: Record<string, unknown>;
  try {
    o = JSON.parse(raw) as Record<string, unknown>;
  } catch {
    return { attempt, level: 'info', msg: raw, fields: {} };
  }
  const fields: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(o)) if (!IMPLIED.has(k)) fields[k] = v;
  const t = typeof o.time === 'string' ? Date.parse(o.time) : typeof o.time === 'number' ? o.time : NaN;
  const line: LogLine = { attempt, level: LEVELS[Number(o.level)] ?? String(o.level ?? 'info'), msg: String(o.msg ?? ''), fields };
  if (Number.isFinite(t)) line.timeMs = t;
  return line;
}

/**
 * The log lines of an occurrence: engine lines outside attempts (attempt 0) and those of attempts 1…`attempts`,
 * in that order per attempt.
 */
export async function readLogs(redis: RedisClient, keys: Keyspace, key: string, attempts: number): Promise<LogLine[]> {
  const hk = new HistoryKeys(keys);
  const pipe = redis.pipeline();
  for (let a = 0; a <= attempts; a++) pipe.lrange(hk.log(key, a), 0, -1);
  const res = (await pipe.exec()) ?? [];
  const out: LogLine[] = [];
  res.forEach(([err, lines], a) => {
    if (err) throw err;
    for (const l of lines as string[]) out.push(toLogLine(a, l));
  });
  return out.sort((x, y) => (x.timeMs ?? 0) - (y.timeMs ?? 0));
}
