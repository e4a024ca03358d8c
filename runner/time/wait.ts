/**
 * Bounded waits: shutdown must end whatever Redis does (a hung or unreachable server never answers, and
 * commands without an answer never settle), so every wait on shutdown has a time limit.
 */

/**
 * Waits for `p` at most `ms`.
 * @returns true when `p` settled in time (fulfilled or rejected: a failure is not a reason to wait longer),
 *   false when the time ran out (`p` goes on; its outcome is ignored).
 */
export async function settlesWithin(p: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([p.then(() => true, () => true), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Resolves after `ms`, or at once when `signal` aborts (also when it already has): it never rejects, so a
 * caller that must stop on abort checks `signal.aborted` afterwards. The one sleep of the code base.
 */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const t = setTimeout(done, ms);
    function done(): void {
      clearTimeout(t);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}
