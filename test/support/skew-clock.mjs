// Preloaded into a replica process (node --import) to simulate a host whose clock is off by
// CRONFLOCK_TEST_CLOCK_OFFSET_MS: Date.now() and new Date() read the skewed time, as they would on such a host.
// Timers and performance.now() are unaffected, as on a real host with a wrong wall clock.
const offset = Number(process.env.CRONFLOCK_TEST_CLOCK_OFFSET_MS ?? 0);
if (offset) {
  const RealDate = Date;
  const realNow = RealDate.now.bind(RealDate);
  class SkewedDate extends RealDate {
    constructor(...args) {
      if (args.length === 0) super(realNow() + offset);
      else super(...args);
    }
    static now() {
      return realNow() + offset;
    }
  }
  globalThis.Date = SkewedDate;
}
