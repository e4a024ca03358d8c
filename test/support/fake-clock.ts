/**
 * A host wall clock that a test can step, for one replica process: a libfaketime timestamp file (Debian package
 * `libfaketime`, preloaded into a replica process by its `faketimeFile` option). The file holds an offset in seconds
 * (`+0`, `+3600`, `-3600`) that the process re-reads at every wall-clock call (FAKETIME_NO_CACHE), so writing
 * it steps Date.now() at once; the monotonic clock (performance.now(), timers) is left alone
 * (FAKETIME_DONT_FAKE_MONOTONIC), as on a host whose clock is stepped by NTP or by hand.
 */
import { renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** One steppable wall clock; pass {@link FakeClock.file} as a replica's `faketimeFile`. */
export class FakeClock {
  readonly file: string;

  /** Creates the timestamp file in `dir`, at offset 0. */
  constructor(dir: string, name = 'faketime') {
    this.file = join(dir, name);
    this.set(0);
  }

  /** Sets the offset of the wall clock from the real time, in whole seconds (positive: ahead). */
  set(offsetS: number): void {
    // Written beside and renamed over: a process reading the file while it is rewritten in place could see it
    // empty or half-written.
    const next = `${this.file}.next`;
    writeFileSync(next, `${offsetS >= 0 ? '+' : ''}${Math.trunc(offsetS)}\n`);
    renameSync(next, this.file);
  }
}
