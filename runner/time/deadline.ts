/**
 * Abort signals that combine other signals and a deadline, held strongly.
 *
 * Why not `AbortSignal.any([s, AbortSignal.timeout(ms)])`: a signal made by `AbortSignal.any` refers to its sources
 * weakly, and the timer of `AbortSignal.timeout` does not keep its signal alive, so after a garbage collection the
 * combined signal can silently never fire (nodejs/node#57736). Measured here on Node 20.20: 40 of 40 fetches with a
 * 300 ms timeout ran to a server's answer after 2.5 s while garbage was being collected. Here the deadline is a plain
 * timer and the sources get plain listeners: the timer keeps the controller alive until it fires or is disposed.
 */

/** A signal that fires when any source fires or when the deadline passes. */
export interface LinkedSignal {
  /** Aborted with the first source's reason, or with a `TimeoutError` DOMException when the deadline passed. */
  readonly signal: AbortSignal;
  /** True when the deadline fired it (not a source). */
  readonly timedOut: boolean;
  /** Stops the timer and removes the listeners from the sources (idempotent); call it when the work is over. */
  dispose(): void;
}

/**
 * Links `sources` (undefined entries are skipped) and an optional deadline `timeoutMs` from now (ms; null or
 * undefined: none) into one signal. A source that is already aborted aborts the result at once. Use instead of
 * `AbortSignal.any` / `AbortSignal.timeout` (see the module doc), and call `dispose()` when done.
 */
export function linkedSignal(sources: readonly (AbortSignal | undefined)[], timeoutMs?: number | null): LinkedSignal {
  const ac = new AbortController();
  let timedOut = false;
  let timer: NodeJS.Timeout | undefined;
  const listeners: [AbortSignal, () => void][] = [];
  const dispose = (): void => {
    if (timer) clearTimeout(timer);
    timer = undefined;
    for (const [s, l] of listeners.splice(0)) s.removeEventListener('abort', l);
  };
  for (const s of sources) {
    if (!s) continue;
    if (s.aborted) {
      ac.abort(s.reason);
      break;
    }
    const l = (): void => {
      ac.abort(s.reason);
      dispose();
    };
    s.addEventListener('abort', l, { once: true });
    listeners.push([s, l]);
  }
  if (ac.signal.aborted) dispose();
  else if (timeoutMs !== undefined && timeoutMs !== null) {
    timer = setTimeout(() => {
      timedOut = true;
      ac.abort(new DOMException(`timed out after ${timeoutMs} ms`, 'TimeoutError'));
      dispose();
    }, timeoutMs);
  }
  return {
    signal: ac.signal,
    get timedOut() {
      return timedOut;
    },
    dispose,
  };
}
