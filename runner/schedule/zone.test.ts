import { describe, it, expect } from 'vitest';
import { DAY_MS, instantsForWall, isValidTimeZone, suggestTimeZones, zoneTimeline, MIN_SUPPORTED_MS, MAX_SUPPORTED_MS } from './zone.js';

const MIN = 60_000;
const HOUR = 3_600_000;

const formatters = new Map<string, Intl.DateTimeFormat>();
/** Independent reading of a zone's offset: en-GB Intl.formatToParts with seconds (zone.ts parses en-US format()). */
function oracleOffsetMs(tz: string, t: number): number {
  let f = formatters.get(tz);
  if (!f) {
    f = new Intl.DateTimeFormat('en-GB', {
      timeZone: tz, hourCycle: 'h23', year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit',
    });
    formatters.set(tz, f);
  }
  const p: Record<string, number> = {};
  for (const part of f.formatToParts(t)) if (part.type !== 'literal') p[part.type] = Number(part.value);
  const s = Math.floor(t / 1000) * 1000;
  return Date.UTC(p.year ?? 0, (p.month ?? 1) - 1, p.day ?? 1, p.hour ?? 0, p.minute ?? 0, p.second ?? 0) - s;
}

/** Transitions in [from, to) by a minute-level scan inside every hour whose offset changes. */
function oracleTransitions(tz: string, from: number, to: number): { atMs: number; before: number; after: number }[] {
  const out: { atMs: number; before: number; after: number }[] = [];
  let prev = oracleOffsetMs(tz, from);
  for (let h = from; h < to; h += HOUR) {
    const o = oracleOffsetMs(tz, Math.min(h + HOUR, to));
    if (o === prev) continue;
    let before = prev;
    for (let m = h + MIN; m <= h + HOUR; m += MIN) {
      const om = oracleOffsetMs(tz, m);
      if (om !== before) {
        out.push({ atMs: m, before, after: om });
        before = om;
      }
    }
    prev = o;
  }
  return out;
}

const ZONES: [string, number][] = [
  ['America/New_York', 2025],
  ['Europe/Berlin', 2023],
  ['Australia/Sydney', 2019],
  ['Australia/Lord_Howe', 2023],
  ['Antarctica/Troll', 2026],
  ['Pacific/Apia', 2011],
  ['Asia/Singapore', 2024],
  ['UTC', 2024],
];

describe('isValidTimeZone', () => {
  it('accepts tz database names, case-insensitively', () => {
    for (const tz of ['UTC', 'Etc/UTC', 'Europe/Berlin', 'America/New_York', 'Etc/GMT+5', 'Australia/Lord_Howe', 'europe/berlin']) {
      expect(isValidTimeZone(tz), tz).toBe(true);
    }
  });
  it('refuses misspellings, offsets, blanks and padding', () => {
    for (const tz of ['Europe/Berln', '', ' ', '+05:00', '-03:30', '+0530', '-08', '\u221205:00', 'local', ' UTC', 'UTC ', 'Mars/Olympus']) {
      expect(isValidTimeZone(tz), JSON.stringify(tz)).toBe(false);
    }
  });
  it('answers the same when asked again (valid names are remembered, refused ones never are)', () => {
    for (let round = 0; round < 2; round++) {
      for (const tz of ['Europe/Berlin', 'europe/berlin', 'UTC']) expect(isValidTimeZone(tz), `${tz} (round ${round})`).toBe(true);
      for (const tz of ['Europe/Berln', 'Mars/Olympus', ' UTC', '+05:00']) expect(isValidTimeZone(tz), `${tz} (round ${round})`).toBe(false);
    }
  });
  it('suggests the zone that was meant', () => {
    expect(suggestTimeZones('Europe/Berln')).toContain('Europe/Berlin');
    expect(suggestTimeZones('America/New_Yrok')).toContain('America/New_York');
    expect(suggestTimeZones('Completely/Different')).toEqual([]);
  });
});

describe('ZoneTimeline', () => {
  for (const [tz, year] of ZONES) {
    it(`${tz} ${year}: offsets and transitions match a minute-level Intl scan`, () => {
      const tl = zoneTimeline(tz);
      const from = Date.UTC(year, 0, 1);
      const to = Date.UTC(year + 1, 0, 1);
      const expected = oracleTransitions(tz, from, to);
      const got = tl.transitions(from, to);
      expect(got.map((x) => [new Date(x.atMs).toISOString(), x.offsetBeforeMs, x.offsetAfterMs])).toEqual(
        expected.map((x) => [new Date(x.atMs).toISOString(), x.before, x.after]),
      );
      // Offsets at hourly samples and around each transition agree with Intl.
      for (let t = from; t < to; t += 7 * HOUR + 13 * MIN) expect(tl.offsetAtMs(t), new Date(t).toISOString()).toBe(oracleOffsetMs(tz, t));
      for (const x of expected) {
        expect(tl.offsetAtMs(x.atMs - 1)).toBe(x.before);
        expect(tl.offsetAtMs(x.atMs)).toBe(x.after);
      }
      // Segments are contiguous, cover the range, and change offset at each boundary.
      const segs = tl.segments(from, to);
      expect(segs[0]?.startMs).toBe(from);
      expect(segs[segs.length - 1]?.endMs).toBe(to);
      for (let i = 1; i < segs.length; i++) {
        expect(segs[i]?.startMs).toBe(segs[i - 1]?.endMs);
        expect(segs[i]?.offsetMs).not.toBe(segs[i - 1]?.offsetMs);
      }
    });
  }

  it('sees the 30-minute shift of Lord Howe, the 2-hour shift of Troll and the skipped day of Apia', () => {
    const shift = (tz: string, year: number): number[] =>
      zoneTimeline(tz).transitions(Date.UTC(year, 0, 1), Date.UTC(year + 1, 0, 1)).map((x) => x.offsetAfterMs - x.offsetBeforeMs);
    expect(shift('Australia/Lord_Howe', 2023).map(Math.abs)).toEqual([30 * MIN, 30 * MIN]);
    expect(shift('Antarctica/Troll', 2026).map(Math.abs)).toEqual([2 * HOUR, 2 * HOUR]);
    expect(shift('Pacific/Apia', 2011)).toContain(DAY_MS);
  });

  it('refuses unknown zones and instants outside the supported years', () => {
    expect(() => zoneTimeline('Europe/Berln')).toThrow(RangeError);
    expect(() => zoneTimeline('UTC').intlOffsetMs(MIN_SUPPORTED_MS - 1)).toThrow(RangeError);
    expect(() => zoneTimeline('UTC').intlOffsetMs(MAX_SUPPORTED_MS)).toThrow(RangeError);
  });

  it('reuses one timeline per zone', () => {
    expect(zoneTimeline('Europe/Berlin')).toBe(zoneTimeline('Europe/Berlin'));
  });
});

describe('instantsForWall (DST policy, RFC 5545 §3.3.5)', () => {
  for (const [tz, year] of ZONES) {
    it(`${tz} ${year}: every instant is found from its wall time, gaps and folds follow the policy`, () => {
      const tl = zoneTimeline(tz);
      for (const x of oracleTransitions(tz, Date.UTC(year, 0, 1), Date.UTC(year + 1, 0, 1))) {
        const from = x.atMs - 6 * HOUR;
        const to = x.atMs + 6 * HOUR;
        const segs = tl.segments(from - 3 * DAY_MS, to + 3 * DAY_MS);
        const firstSeen = new Map<number, number>();
        for (let t = from - DAY_MS; t < to; t += MIN) {
          const wall = t + oracleOffsetMs(tz, t);
          if (!firstSeen.has(wall)) firstSeen.set(wall, t);
          if (t < from) continue;
          const wild: number[] = [];
          instantsForWall(segs, wall, false, wild);
          expect(wild, `wildcard ${new Date(t).toISOString()}`).toContain(t);
          const fixed: number[] = [];
          instantsForWall(segs, wall, true, fixed);
          expect(fixed, `fixed ${new Date(t).toISOString()}`).toEqual([firstSeen.get(wall)]);
          // Increasing order.
          for (let i = 1; i < wild.length; i++) expect(wild[i]!).toBeGreaterThan(wild[i - 1]!);
        }
        if (x.after > x.before) {
          // Gap: wall times [at + before, at + after) do not exist.
          for (let wall = x.atMs + x.before; wall < x.atMs + x.after; wall += MIN) {
            const wild: number[] = [];
            instantsForWall(segs, wall, false, wild);
            expect(wild).toEqual([]);
            const fixed: number[] = [];
            instantsForWall(segs, wall, true, fixed);
            expect(fixed).toEqual([wall - x.before]);
          }
        } else {
          // Fold: wall times [at + after, at + before) occur twice; both passes for wildcard hours.
          for (let wall = x.atMs + x.after; wall < x.atMs + x.before; wall += MIN) {
            const wild: number[] = [];
            instantsForWall(segs, wall, false, wild);
            expect(wild).toEqual([wall - x.before, wall - x.after]);
          }
        }
      }
    });
  }

  it('a whole skipped day (Apia, 2011-12-30) fires fixed-hour times once, on the next real day', () => {
    const tl = zoneTimeline('Pacific/Apia');
    const segs = tl.segments(Date.UTC(2011, 11, 25), Date.UTC(2012, 0, 5));
    const skipped: number[] = [];
    instantsForWall(segs, Date.UTC(2011, 11, 30, 9), true, skipped);
    const real: number[] = [];
    instantsForWall(segs, Date.UTC(2011, 11, 31, 9), true, real);
    expect(skipped).toEqual(real);
    const dropped: number[] = [];
    instantsForWall(segs, Date.UTC(2011, 11, 30, 9), false, dropped);
    expect(dropped).toEqual([]);
  });
});
