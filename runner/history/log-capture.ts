/**
 * Keeps the log lines of each run with its history, so that a run's logs can be read after the replica that
 * ran it is gone: the job's `context.log` lines and the engine's lines about the occurrence (every line that
 * carries `occurrence`, and `attempt` inside an attempt).
 *
 * The process logger hands every line to {@link LogCapture.write} (runner/log.ts): a substring check, and for a
 * line about an occurrence a copy into a bounded in-memory buffer — it never waits on Redis. Every second the
 * buffers are appended to Redis (a LIST per attempt, kept for `--history`), so a killed replica loses at most its
 * last second of lines. Bounds per attempt: the last {@link MAX_LINES} lines and {@link MAX_BYTES} bytes; a line
 * is cut to {@link MAX_LINE_BYTES}. Engine lines about an occurrence outside an attempt (attempt 0): the last
 * {@link MAX_ENGINE_LINES}.
 */
import type { RedisClient } from '../redis/connect.js';
import type { Keyspace } from '../redis/keys.js';
import { HistoryKeys } from './keys.js';

/** Lines kept per attempt (the last ones). */
export const MAX_LINES = 200;
/** Bytes kept per attempt (the last ones). */
export const MAX_BYTES = 64 * 1024;
/** Longest line kept; a longer one keeps its time, level and message, cut. */
export const MAX_LINE_BYTES = 2048;
/** Engine lines about an occurrence outside its attempts (e.g. a delivery closed without a run). */
export const MAX_ENGINE_LINES = 50;
/** How often buffers are written to Redis. */
const FLUSH_MS = 1_000;
/** A buffer with no new line for this long is dropped from memory (its lines are in Redis). */
const IDLE_MS = 30_000;
/** Most buffers held at once; beyond, lines of new occurrences are not kept (a flood of runs must not grow memory). */
const MAX_BUFFERS = 5_000;

interface LineBuffer {
  key: string;
  attempt: number;
  lines: string[];
  bytes: number;
  /** Lines at the end not yet in Redis. */
  unflushed: number;
  /** Lines were dropped from the front since the last flush: Redis gets the whole buffer again. */
  rewrite: boolean;
  lastWriteMs: number;
}

const OCCURRENCE = '"occurrence":"';

/** Collects run log lines and appends them to Redis; see the module doc. */
export class LogCapture {
  private readonly buffers = new Map<string, LineBuffer>();
  private target: { redis: RedisClient; hk: HistoryKeys; ttlMs: number } | undefined;
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> = Promise.resolve();

  /** Takes one serialized log line (pino's JSON, with its newline). Never throws, never waits. */
  write(line: string): void {
    if (!this.target) return;
    const at = line.indexOf(OCCURRENCE);
    if (at < 0) return;
    const end = line.indexOf('"', at + OCCURRENCE.length);
    if (end < 0) return;
    const key = line.slice(at + OCCURRENCE.length, end);
    const m = /"attempt":(\d+)/.exec(line);
    const attempt = m ? Number(m[1]) : 0;
    const id = `${key}\n${attempt}`;
    let b = this.buffers.get(id);
    if (!b) {
      if (this.buffers.size >= MAX_BUFFERS) return;
      b = { key, attempt, lines: [], bytes: 0, unflushed: 0, rewrite: false, lastWriteMs: 0 };
      this.buffers.set(id, b);
    }
    const kept = cut(line.trimEnd());
    b.lines.push(kept);
    b.bytes += Buffer.byteLength(kept);
    b.unflushed++;
    b.lastWriteMs = Date.now();
    const maxLines = attempt === 0 ? MAX_ENGINE_LINES : MAX_LINES;
    while (b.lines.length > 1 && (b.lines.length > maxLines || b.bytes > MAX_BYTES)) {
      b.bytes -= Buffer.byteLength(b.lines.shift()!);
      if (b.unflushed > b.lines.length) b.unflushed = b.lines.length;
      else b.rewrite = true;
    }
  }

  /**
   * Starts writing to the flock's Redis (a connection of its own, so that lines written while a replica stops
   * still reach Redis after its other connections close).
   * @param historyMs how long the lines are kept (`--history`).
   */
  attach(redis: RedisClient, keys: Keyspace, historyMs: number): void {
    this.target = { redis, hk: new HistoryKeys(keys), ttlMs: historyMs };
    const loop = (): void => {
      this.timer = setTimeout(() => {
        void this.flush().finally(loop);
      }, FLUSH_MS);
      this.timer.unref();
    };
    loop();
  }

  /** Writes what is buffered (one pipeline); Redis errors leave the lines for the next flush. */
  flush(): Promise<void> {
    this.flushing = this.flushing.then(() => this.flushOnce()).catch(() => undefined);
    return this.flushing;
  }

  private async flushOnce(): Promise<void> {
    const t = this.target;
    if (!t) return;
    const now = Date.now();
    const pipe = t.redis.pipeline();
    const sent: [LineBuffer, number, boolean][] = [];
    for (const [id, b] of this.buffers) {
      if (b.unflushed === 0 && !b.rewrite) {
        if (now - b.lastWriteMs > IDLE_MS) this.buffers.delete(id);
        continue;
      }
      const k = t.hk.log(b.key, b.attempt);
      if (b.rewrite) pipe.del(k).rpush(k, ...b.lines);
      else pipe.rpush(k, ...b.lines.slice(b.lines.length - b.unflushed));
      if (b.attempt === 0) pipe.ltrim(k, -MAX_ENGINE_LINES, -1);
      pipe.pexpire(k, t.ttlMs);
      sent.push([b, b.unflushed, b.rewrite]);
    }
    if (sent.length === 0) return;
    const res = await pipe.exec();
    if (!res || res.some(([err]) => err)) return; // kept for the next flush (a partial append may repeat lines)
    for (const [b, n, rewrite] of sent) {
      b.unflushed = Math.max(0, b.unflushed - n);
      if (rewrite) b.rewrite = false;
    }
  }

  /** Stops the timer and writes what is left (bounded by the caller). */
  async stop(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    await this.flush();
    this.target = undefined;
  }
}

/** A line within {@link MAX_LINE_BYTES}: a longer one keeps its level, time and message (cut). */
function cut(line: string): string {
  if (Buffer.byteLength(line) <= MAX_LINE_BYTES) return line;
  try {
    const o = JSON.parse(line) as { level?: unknown; time?: unknown; msg?: unknown };
    return JSON.stringify({ level: o.level, time: o.time, msg: String(o.msg ?? '').slice(0, MAX_LINE_BYTES / 2), truncated: true });
  } catch {
    return JSON.stringify({ msg: line.slice(0, MAX_LINE_BYTES / 2), truncated: true });
  }
}
