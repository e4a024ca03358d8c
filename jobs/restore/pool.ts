/** A small worker pool: runs async work over a list with a bound on how much is in flight. */

/**
 * Runs `fn` over `items` with at most `n` in flight; rejects with the first error after the others settle.
 * Items are started in order; after an error no new item starts.
 */
export async function pool<T>(items: T[], n: number, fn: (t: T) => Promise<void>): Promise<void> {
  let i = 0;
  let first: unknown;
  const worker = async (): Promise<void> => {
    while (i < items.length && first === undefined) {
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
}
