/**
 * Long loops in slices that give the event loop back: a replica loading 100,000 schedules must keep its timers
 * going meanwhile — above all the planner's tick, whose heartbeat keeps the replica's membership (a TTL of 2 s by
 * default). A loop that only awaits promises that are already settled (a compile with nothing to read) never lets
 * a timer run: `await` resumes in the microtask queue, before any timer.
 */

/** How long (ms) a slice runs before it yields to the event loop. */
export const SLICE_MS = 20;

/** Yields to the event loop (timers and I/O run) when the current slice has run for {@link SLICE_MS} or more. */
export class Slices {
  private startedAt = performance.now();

  constructor(private readonly sliceMs = SLICE_MS) {}

  /** Call between two steps of a long loop: resolves at once inside a slice, after a turn of the event loop past it. */
  async pass(): Promise<void> {
    if (performance.now() - this.startedAt < this.sliceMs) return;
    await new Promise<void>((resolve) => setImmediate(resolve));
    this.startedAt = performance.now();
  }
}
