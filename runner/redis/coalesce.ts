/**
 * Calls of one kind that come together go to Redis as one script call (e.g. the finish script, lua/finish.lua).
 *
 * Nothing waits for a timer: a call made while none is in flight goes on the next turn of the event loop, with
 * whatever else was asked in the same turn (the runs of a batch whose fire times coincide); calls made while one
 * is in flight wait for it, then go together. Alone, a call costs what it did (plus one event-loop turn); under
 * load the round trip, the script's set-up and a WAIT are shared, so the cost per call falls as the rate rises.
 */
export class Coalescer<Req, Res> {
  private queue: { req: Req; resolve: (r: Res) => void; reject: (e: unknown) => void }[] = [];
  private busy = false;

  /**
   * @param send sends the requests as one call and returns one answer per request, in order; when it throws, every
   *   request of that call is rejected with its error.
   * @param max most requests in one call (bounds how long one script blocks Redis).
   * @param delayMs when set, how long a first request waits before its call goes (e.g. until the replica's next
   *   Redis turn, engine/options.ts `redisTurnMs`); 0 or absent: the next turn of the event loop.
   */
  constructor(
    private readonly send: (reqs: Req[]) => Promise<Res[]>,
    private readonly max = 100,
    private readonly delayMs?: () => number,
  ) {}

  /** Resolves with the answer to `req` (sent together with the requests around it). */
  call(req: Req): Promise<Res> {
    return new Promise<Res>((resolve, reject) => {
      this.queue.push({ req, resolve, reject });
      if (this.queue.length === 1 && !this.busy) {
        const ms = this.delayMs?.() ?? 0;
        if (ms > 0) setTimeout(() => void this.drain(), ms);
        else setImmediate(() => void this.drain());
      }
    });
  }

  private async drain(): Promise<void> {
    if (this.busy) return;
    this.busy = true;
    try {
      while (this.queue.length > 0) {
        const group = this.queue.splice(0, this.max);
        try {
          const out = await this.send(group.map((g) => g.req));
          if (out.length !== group.length) throw new Error(`a coalesced call answered ${out.length} of ${group.length} requests`);
          group.forEach((g, i) => g.resolve(out[i]!));
        } catch (err) {
          for (const g of group) g.reject(err);
        }
      }
    } finally {
      this.busy = false;
    }
  }
}
