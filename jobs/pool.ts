/** A small worker pool: runs async work over a list with a bound on how much is in flight (cleanup and restore writes). */

/**
 * Runs `fn` over `items` with at most `n` in flight (n ≥ 1); items start in order. After an error, or once
 * `signal` aborts, no new item starts; the call waits for those in flight to settle (so no write is left running
 * behind its caller), then rejects with the first error (or with the signal's reason when the signal aborted and
 * no item failed).
 */
export async function pool<T>(items: readonly T[], n: number, fn: (t: T) => Promise<void>, signal?: AbortSignal): Promise<void> {
  let i = 0;
  let first: unknown;
  const worker = async (): Promise<void> => {
    while (i < items.length && first === undefined && !signal?.aborted) {
      const t = items[i++]!;
      try {
        await fn(t);
      } catch (e) {
        first ??= e;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(n, items.length) }, worker));
  if (first !== undefined) throw first;
  signal?.throwIfAborted();
}
