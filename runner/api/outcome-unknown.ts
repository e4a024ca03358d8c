/**
 * A change sent to Redis that got no answer in time (paused with SIGSTOP, overloaded, a failover under way):
 * Redis may have received it — a paused Redis runs what it received when it wakes — so it cannot be said to
 * have failed. The API answers `503 REDIS_OUTCOME_UNKNOWN` (server.ts); `cronflock apply -f` / `cronflock
 * delete` and the library's `schedules.upsert` / `schedules.remove` say the same through this module: the
 * change MAY have taken effect, read it back, then retry (with a version precondition so a retry cannot apply it
 * twice). A change refused before it was sent (nothing accepts the connection) stays a plain failure.
 */

/** The code of an unknown outcome, in the API's error envelope and on {@link RedisOutcomeUnknownError}. */
export const REDIS_OUTCOME_UNKNOWN = 'REDIS_OUTCOME_UNKNOWN';

/**
 * Whether `err` says a command went to Redis and no answer came within the command timeout (ioredis `Command
 * timed out`): its effect is unknown. A refused or closed connection is not this (the command was not sent, or the
 * client says so otherwise).
 */
export function isOutcomeUnknown(err: unknown): boolean {
  return /^Command timed out/.test((err as Error | undefined)?.message ?? '');
}

/**
 * The words of an unknown outcome: `Redis did not answer this change in time (<why>): it may have been applied, or
 * may still be when Redis answers (a paused Redis runs what it received when it wakes). Read it back before
 * retrying (<readBack>), and retry <retry>`.
 * @param why what the client saw, e.g. "no answer within 10 s"
 * @param readBack how to read it back here, e.g. "GET the schedule: its ETag, or the audit log"
 * @param retry how to retry safely here, e.g. "with --if-version <n>"
 */
export function outcomeUnknownMessage(why: string, readBack: string, retry: string): string {
  return (
    `Redis did not answer this change in time (${why}): it may have been applied, or may still be when Redis answers ` +
    `(a paused Redis runs what it received when it wakes). Read it back before retrying (${readBack}), and retry ${retry}`
  );
}

/**
 * Thrown by the library's `schedules.upsert` / `schedules.remove` when Redis did not answer the change in time:
 * it MAY have taken effect (see the module doc). `code` is `REDIS_OUTCOME_UNKNOWN`, `schedule` the name, `cause`
 * the client's error. Read the schedule back (`schedules.get`: its version) before retrying with `ifVersion`.
 */
export class RedisOutcomeUnknownError extends Error {
  readonly code = REDIS_OUTCOME_UNKNOWN;
  constructor(
    readonly schedule: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'RedisOutcomeUnknownError';
  }
}
