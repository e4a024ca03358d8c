/**
 * The heartbeat between a replica and the child process of a `kind: module` attempt (module-sandbox.ts writes it,
 * module-host.ts reads it). Its own module so that the host, which must not load the sandbox's code, and the
 * sandbox share the numbers.
 */

/** How often the replica tells a job process it still answers (a line on the process's fd 4), ms. */
export const HEARTBEAT_MS = 100;

/**
 * How long a job process waits without a heartbeat before it treats its replica as not answering (stopped, hung,
 * its event loop blocked), ms: three periods, so two late beats (a busy host delays the replica's timers by
 * 100–200 ms) do not count. Only then does the process apply the lease deadlines itself (module-host.ts).
 */
export const HEARTBEAT_STALE_MS = 300;
