/** Structured JSON logs (pino). Every line of a run carries the occurrence key, attempt and fencing token. */
import { pino, type Logger } from 'pino';

/** Creates the process logger; level from `CRONFLOCK_LOG_LEVEL` (default info). */
export function createLogger(bindings: Record<string, unknown> = {}): Logger {
  return pino({
    level: process.env.CRONFLOCK_LOG_LEVEL ?? 'info',
    base: bindings,
    timestamp: pino.stdTimeFunctions.isoTime,
    redact: { paths: ['headers', '*.headers', 'job.headers', 'redisUrl'], censor: '[redacted]' },
  });
}

export type { Logger };
