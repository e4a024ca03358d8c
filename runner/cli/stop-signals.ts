/**
 * SIGINT and SIGTERM for the long-running commands (`start`, the demo): the first signal starts a graceful
 * stop, a second one forces the exit at once.
 *
 * A repeat within {@link REPEAT_IGNORED_MS} of the first is the same request, not a second one: `npm start`
 * and `npx cronflock start` forward the terminal's Ctrl-C to a process that already got it from the terminal,
 * so one Ctrl-C arrives twice.
 */

/** Signals that arrive this soon after the first one do not count as a second one. */
export const REPEAT_IGNORED_MS = 1_000;

/**
 * Installs the handlers.
 * @param o.stop called once, with the first signal: start a graceful, bounded stop.
 * @param o.force called with a later signal: exit now (it should not return).
 */
export function onStopSignals(o: { stop: (signal: NodeJS.Signals) => void; force: (signal: NodeJS.Signals) => void }): void {
  let firstAtMs: number | undefined;
  const handle = (signal: NodeJS.Signals): void => {
    if (firstAtMs === undefined) {
      firstAtMs = Date.now();
      o.stop(signal);
    } else if (Date.now() - firstAtMs >= REPEAT_IGNORED_MS) o.force(signal);
  };
  process.on('SIGINT', handle);
  process.on('SIGTERM', handle);
}

/** The exit code of a process ended by `signal` (128 + its number), as shells report it: SIGINT 130, SIGTERM 143. */
export function signalExitCode(signal: NodeJS.Signals): number {
  return signal === 'SIGINT' ? 130 : signal === 'SIGTERM' ? 143 : 1;
}
