/** Structured JSON logs (pino). Every line of a run carries the occurrence key, attempt and fencing token. */
import { pino, type Logger } from 'pino';

/**
 * Creates the process logger; level from `CRONFLOCK_LOG_LEVEL` (default info).
 * @param capture also gets every line written (a replica keeps its runs' lines: runner/history/log-capture.ts).
 */
export function createLogger(bindings: Record<string, unknown> = {}, capture?: { write(line: string): void }): Logger {
  const destination = pino.destination({ dest: 1, sync: true });
  // `cronflock start … | head`: when the reader of the log goes away, stop (the process hung on the closed pipe).
  destination.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') process.exit(typeof process.exitCode === 'number' ? process.exitCode : 0);
    throw err;
  });
  return pino(
    {
      level: process.env.CRONFLOCK_LOG_LEVEL ?? 'info',
      base: bindings,
      timestamp: pino.stdTimeFunctions.isoTime,
      redact: { paths: ['headers', '*.headers', 'job.headers', 'redisUrl'], censor: '[redacted]' },
    },
    capture
      ? {
          write(line: string): void {
            destination.write(line);
            capture.write(line);
          },
        }
      : destination,
  );
}

export type { Logger };
