/**
 * Error replies of Redis commands (OOM, READONLY, LOADING, BUSY, WRONGTYPE, a failing script …), as ioredis
 * reports them on its `ioredis:command` tracing channel (node:diagnostics_channel). Every client of the
 * process is seen, BullMQ's included, without wrapping each call site: the callers handle their own errors;
 * this only counts them (`cronflock_redis_errors_total{kind="command"}`).
 *
 * Connection failures are not error replies: they are counted from the clients' `error` events instead.
 */
import { tracingChannel } from 'node:diagnostics_channel';

/** What a listener gets: the command name (lower case) and the error reply. */
export interface RedisCommandError {
  command: string;
  error: Error;
}

/** What ioredis puts on the tracing channel for a command (only the fields used here). */
interface CommandTrace {
  command?: string;
  error?: unknown;
}

/**
 * Calls `listener` for every error reply a Redis server sends to a command of this process, except ioredis's
 * own connection handshake (`CLIENT SETINFO`, refused by Redis before 7.2) and `NOSCRIPT` (ioredis loads the
 * script and sends the command again).
 * @returns a function that stops listening.
 */
export function onRedisCommandError(listener: (e: RedisCommandError) => void): () => void {
  const errors = tracingChannel<unknown, CommandTrace>('ioredis:command').error;
  const onError = (message: unknown): void => {
    const ctx = message as CommandTrace;
    const err = ctx.error;
    // Only what the server answered: a closed connection rejects commands too, but that is counted once, as a
    // connection error, by the client's 'error' event.
    if (!(err instanceof Error) || err.name !== 'ReplyError') return;
    const command = String(ctx.command ?? '').toLowerCase();
    if (command === 'client' || err.message.startsWith('NOSCRIPT')) return;
    listener({ command, error: err });
  };
  errors.subscribe(onError);
  return () => errors.unsubscribe(onError);
}
