import { readFileSync } from 'node:fs';
import { describe, it, expect } from 'vitest';
import { CronError, compileCron, isValidTimeZone, minGapMs, type DueTimes } from './cron.js';

// ---------------------------------------------------------------------------------------------------------
// Reference cases: test/cases/schedule-times.json (see test/cases/README.md), read at run time so that a
// corrected case reaches this test without editing it.
// ---------------------------------------------------------------------------------------------------------
interface NextCase { id: string; cron: string; timeZone: string; after: string; next: string[] }
interface LastDueCase { id: string; cron: string; timeZone: string; at: string; lastDue: string; nextDue: string }
interface RejectedCase { cron: string; timeZone?: string; why?: string }
interface CaseFile { cases: NextCase[]; lastDue: LastDueCase[]; rejected: RejectedCase[] }

const CASES_URL = new URL('../../test/cases/schedule-times.json', import.meta.url);
const caseFile = JSON.parse(readFileSync(CASES_URL, 'utf8')) as CaseFile;

const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());
const norm = (s: string): string => new Date(Date.parse(s)).toISOString();
const MIN = 60_000;
const HOUR = 3_600_000;
const DAY = 86_400_000;

/** Due times in (fromMs, toMs) by iterating next(). */
function sequence(due: DueTimes, fromMs: number, toMs: number): number[] {
  const out: number[] = [];
  for (let t = due.next(fromMs); t !== null && t < toMs; t = due.next(t)) out.push(t);
  return out;
}

describe('reference cases: next', () => {
  it('has cases to run', () => {
    expect(caseFile.cases.length).toBeGreaterThan(0);
  });
  for (const c of caseFile.cases) {
    it(c.id, () => {
      const due = compileCron(c.cron, c.timeZone, { hashSeed: c.id });
      const got: (string | null)[] = [];
      let t: number | null = Date.parse(c.after);
      for (let i = 0; i < c.next.length && t !== null; i++) {
        t = due.next(t);
        got.push(iso(t));
      }
      expect(got).toEqual(c.next.map(norm));
      // last() agrees with the forward sequence, from a fresh instance (no cache shared with the above).
      const fresh = compileCron(c.cron, c.timeZone, { hashSeed: c.id });
      const expected = c.next.map((s) => Date.parse(s));
      expected.forEach((e, i) => {
        expect(iso(fresh.last(e))).toBe(iso(e));
        if (i > 0) expect(iso(fresh.last(e - 1))).toBe(iso(expected[i - 1] ?? null));
      });
    });
  }
});

describe('reference cases: lastDue', () => {
  for (const c of caseFile.lastDue) {
    it(c.id, () => {
      const due = compileCron(c.cron, c.timeZone, { hashSeed: c.id });
      const at = Date.parse(c.at);
      const last = due.last(at);
      expect(iso(last)).toBe(norm(c.lastDue));
      expect(iso(due.next(at))).toBe(norm(c.nextDue));
      // Forward iteration from just before the last due time finds it, then the next one.
      const fresh = compileCron(c.cron, c.timeZone, { hashSeed: c.id });
      expect(iso(fresh.next((last ?? 0) - 1))).toBe(norm(c.lastDue));
      expect(iso(fresh.next(last ?? 0))).toBe(norm(c.nextDue));
    });
  }
});

/** The code a `why` implies, when it implies one. */
function codeFromWhy(why: string | undefined): string | undefined {
  if (!why) return undefined;
  if (/never fire/i.test(why)) return 'CRON_NEVER_FIRES';
  if (/timeZone field/i.test(why)) return 'CRON_TZ_PREFIX';
  if (/zone/i.test(why)) return 'ZONE_UNKNOWN';
  return undefined;
}

describe('reference cases: rejected', () => {
  for (const r of caseFile.rejected) {
    const field = r.timeZone !== undefined ? 'timeZone' : 'cron';
    it(`refuses ${JSON.stringify(r.cron)}${r.timeZone ? ` in ${r.timeZone}` : ''} (field ${field})`, () => {
      let caught: unknown;
      try {
        compileCron(r.cron, r.timeZone ?? 'UTC', { hashSeed: 'rejected' });
      } catch (err) {
        caught = err;
      }
      expect(caught).toBeInstanceOf(CronError);
      const err = caught as CronError;
      expect(err.field).toBe(field);
      const code = codeFromWhy(r.why);
      if (code) expect(err.code).toBe(code);
      // The message names the problem and a way out, not just cron-parser's words.
      expect(err.message.length).toBeGreaterThan(40);
      expect(err.message).toMatch(/use|put|write|choose|did you mean/i);
    });
  }
});

describe('refusals beyond the reference cases', () => {
  const refuse = (cron: string, tz = 'UTC'): CronError => {
    try {
      compileCron(cron, tz);
    } catch (err) {
      if (err instanceof CronError) return err;
      throw err;
    }
    throw new Error(`${cron} in ${tz} was accepted`);
  };

  it('refuses W with CRON_UNSUPPORTED and names alternatives', () => {
    for (const cron of ['0 9 15W * *', '0 9 LW * *', '0 9 1w * *']) {
      const err = refuse(cron);
      expect(err.code).toBe('CRON_UNSUPPORTED');
      expect(err.field).toBe('cron');
      expect(err.message).toMatch(/1-5/);
    }
    // `wed` in the day-of-week field is a name, not W.
    expect(() => compileCron('0 9 * * wed', 'UTC')).not.toThrow();
  });

  it('refuses steps larger than their field, which cron-parser would accept', () => {
    for (const cron of ['*/90 * * * *', '*/61 * * * * *', '0 */25 * * *', '0 0 */32 * *', '0 0 1 */13 *', '0 0 * * */8', '5/90 * * * *']) {
      const err = refuse(cron);
      expect(err.code, cron).toBe('CRON_SYNTAX');
      expect(err.message, cron).toMatch(/step/);
    }
    for (const cron of ['*/60 * * * *', '0 */24 * * *', '*/59 * * * * *', '0 0 * * */7']) {
      expect(() => compileCron(cron, 'UTC'), cron).not.toThrow();
    }
  });

  // cron-parser's own words ("Constraint error, got range NaN-2 expected range 1-31") name neither the field nor
  // what it takes.
  const PARSER_WORDS = /NaN|Constraint error|Validation error|got range|got value|Invalid characters|Invalid (range|step|list|repeat|wildcard)|cannot resolve/;

  it('names the refused field in words, says what is wrong and what the field allows', () => {
    const cases: [string, string, RegExp][] = [
      ['0 0 L-2 * *', 'day-of-month', /"L-n", n days before the last day, is not/],
      ['*/0 * * * *', 'minute', /step of 0/],
      ['0 */0 * * *', 'hour', /step of 0/],
      ['0 0 */0 * *', 'day-of-month', /step of 0/],
      ['0 0 * */0 *', 'month', /step of 0/],
      ['0 0 * * */0', 'day-of-week', /step of 0/],
      ['*/0 * * * * *', 'second', /step of 0/],
      ['0 0 5-1 * *', 'day-of-month', /range 5-1, which runs backwards/],
      ['0 25 * * *', 'hour', /value 25, outside 0-23/],
      ['0 0 * foo *', 'month', /"foo", which is not a name/],
      ['0 0 * * 1#6', 'day-of-week', /"#" without a number from 1 to 5/],
      ['0 0 * * L', 'day-of-week', /"L" alone/],
      ['0 0 1- * *', 'day-of-month', /side missing/],
      ['0 0 ** * *', 'day-of-month', /is not valid/],
      ['0 0 * * 1#2,5L', 'day-of-week', /combines "#" with a list/],
    ];
    for (const [cron, field, why] of cases) {
      const err = refuse(cron);
      expect(err.code, cron).toBe('CRON_SYNTAX');
      expect(err.message, cron).toContain(`the ${field} field`);
      expect(err.message, cron).toMatch(why);
      expect(err.message, cron).toContain(`use what the ${field} field allows:`);
      expect(err.message, cron).not.toMatch(PARSER_WORDS);
    }
  });

  it('names the right field for every refused mistake in any position, never in cron-parser\'s words', () => {
    const names = ['second', 'minute', 'hour', 'day-of-month', 'month', 'day-of-week'];
    const mistakes = ['*/0', '1-', '-1', '5-1', '1,,2', '**', 'x', '1.5', '99', 'L-2', 'L/2', '2L', '#', '1/2/3', '/5', '1-2-3', ',', 'H/0', 'jan-', '*/', '0-99'];
    let refused = 0;
    for (const n of [5, 6]) {
      const fields = n === 6 ? names : names.slice(1);
      for (let i = 0; i < n; i++) {
        for (const m of mistakes) {
          const cron = Array.from({ length: n }, (_, j) => (j === i ? m : '*')).join(' ');
          let err: unknown;
          try {
            compileCron(cron, 'UTC');
          } catch (e) {
            err = e;
          }
          if (err === undefined) continue; // valid in this field (e.g. 2L nowhere, but "-1"…): only refusals are checked
          refused++;
          expect(err, cron).toBeInstanceOf(CronError);
          const msg = (err as CronError).message;
          expect(msg, cron).toContain(`the ${fields[i]} field ${JSON.stringify(m)}`);
          expect(msg, cron).toContain(`use what the ${fields[i]} field allows:`);
          expect(msg, cron).not.toMatch(PARSER_WORDS);
        }
      }
    }
    expect(refused).toBeGreaterThan(200);
  });

  it('refuses the wrong number of fields (cron-parser would pad them)', () => {
    for (const cron of ['', '   ', '5', '* * * *', '0 0 0 * * * *']) expect(refuse(cron).code, cron).toBe('CRON_SYNTAX');
  });

  it('refuses zone prefixes in any case, and unknown zones with field timeZone', () => {
    expect(refuse('cron_tz=UTC 0 * * * *').code).toBe('CRON_TZ_PREFIX');
    expect(refuse('TZ = UTC 0 * * * *').message).toMatch(/timeZone field/);
    for (const tz of ['', '+02:00', 'Mars/Olympus', 'local']) {
      const err = refuse('0 9 * * *', tz);
      expect(err.code, tz).toBe('ZONE_UNKNOWN');
      expect(err.field, tz).toBe('timeZone');
    }
    expect(refuse('0 9 * * *', 'Europe/Berln').message).toMatch(/Europe\/Berlin/);
  });

  it('refuses @reboot and unknown macros, accepts the others', () => {
    expect(refuse('@reboot').code).toBe('CRON_UNSUPPORTED');
    expect(refuse('@fortnightly').code).toBe('CRON_SYNTAX');
    const a = compileCron('@hourly', 'Europe/Berlin');
    const b = compileCron('0 * * * *', 'Europe/Berlin');
    const from = Date.parse('2023-10-28T00:00:00Z');
    expect(sequence(a, from, from + 2 * DAY)).toEqual(sequence(b, from, from + 2 * DAY));
    expect(a.fixedHour).toBe(false);
    expect(compileCron('@daily', 'UTC').fixedHour).toBe(true);
  });

  it('refuses expressions that can never fire, with field cron', () => {
    for (const cron of ['0 0 30 2 *', '0 0 31 4,6,9,11 *', '0 0 0 30,31 2 *']) {
      const err = refuse(cron);
      expect(err.code, cron).toBe('CRON_NEVER_FIRES');
      expect(err.message, cron).toMatch(/never fire/);
    }
    // The day of week rescues the day of month (Vixie OR rule): Mondays in February.
    const due = compileCron('0 0 30 2 1', 'UTC');
    const t = due.next(Date.parse('2024-01-01T00:00:00Z'));
    expect(new Date(t ?? 0).getUTCDay()).toBe(1);
    expect(new Date(t ?? 0).getUTCMonth()).toBe(1);
  });

  it('throws TypeError for non-finite arguments', () => {
    const due = compileCron('* * * * *', 'UTC');
    expect(() => due.next(Number.NaN)).toThrow(TypeError);
    expect(() => due.last(Number.POSITIVE_INFINITY)).toThrow(TypeError);
  });

  it('exposes expression, zone and isValidTimeZone', () => {
    const due = compileCron('  0 9 * * 1-5 ', 'Europe/Berlin');
    expect(due.expression).toBe('0 9 * * 1-5');
    expect(due.timeZone).toBe('Europe/Berlin');
    expect(isValidTimeZone('Europe/Berlin')).toBe(true);
    expect(isValidTimeZone('Europe/Berln')).toBe(false);
  });
});

describe('fixedHour', () => {
  const cases: [string, boolean][] = [
    ['0 * * * *', false],
    ['0 0-23 * * *', false],
    ['0 */1 * * *', false],
    ['0 ? * * *', false],
    ['0 */2 * * *', true],
    ['0 2 * * *', true],
    ['0 0-22 * * *', true],
    ['0 H * * *', true],
    ['*/5 * 9-17 * * 1-5', true],
  ];
  for (const [cron, fixed] of cases) {
    it(`${cron} → ${fixed}`, () => expect(compileCron(cron, 'UTC', { hashSeed: 's' }).fixedHour).toBe(fixed));
  }
});

describe('H (hashed) fields', () => {
  const from = Date.parse('2025-01-01T00:00:00Z');
  const firstFive = (seed: string | undefined): number[] =>
    sequence(compileCron('H H * * *', 'UTC', seed === undefined ? {} : { hashSeed: seed }), from, from + 5 * DAY);

  it('are the same for the same seed (every replica agrees) and differ across seeds', () => {
    expect(firstFive('backup-db')).toEqual(firstFive('backup-db'));
    const distinct = new Set(Array.from({ length: 20 }, (_, i) => firstFive(`schedule-${i}`)[0]));
    expect(distinct.size).toBeGreaterThan(10);
  });

  it('are deterministic without a seed too', () => {
    expect(firstFive(undefined)).toEqual(firstFive(undefined));
    expect(firstFive('')).toEqual(firstFive(undefined));
  });
});

// ---------------------------------------------------------------------------------------------------------
// Independent oracle: every UTC minute converted to wall-clock time with Intl.formatToParts (not zone.ts),
// matched against a tiny cron matcher written here (numbers, ranges, steps, lists; Vixie OR rule), with the
// DST policy of test/cases/README.md applied minute by minute.
// ---------------------------------------------------------------------------------------------------------
interface Wall { y: number; mo: number; d: number; h: number; mi: number; dow: number; ms: number }

const formatters = new Map<string, Intl.DateTimeFormat>();
function wallOf(tz: string, t: number): Wall {
  let f = formatters.get(tz);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', { timeZone: tz, hourCycle: 'h23', year: 'numeric', month: 'numeric', day: 'numeric', hour: 'numeric', minute: 'numeric' });
    formatters.set(tz, f);
  }
  const p: Record<string, number> = {};
  for (const part of f.formatToParts(t)) if (part.type !== 'literal') p[part.type] = Number(part.value);
  const ms = Date.UTC(p.year ?? 0, (p.month ?? 1) - 1, p.day ?? 1, p.hour ?? 0, p.minute ?? 0);
  return { y: p.year ?? 0, mo: p.month ?? 0, d: p.day ?? 0, h: p.hour ?? 0, mi: p.minute ?? 0, dow: new Date(ms).getUTCDay(), ms };
}
function wallFromMs(ms: number): Wall {
  const d = new Date(ms);
  return { y: d.getUTCFullYear(), mo: d.getUTCMonth() + 1, d: d.getUTCDate(), h: d.getUTCHours(), mi: d.getUTCMinutes(), dow: d.getUTCDay(), ms };
}

function oracleField(src: string, min: number, max: number): Set<number> {
  const out = new Set<number>();
  for (const item of src.split(',')) {
    const [range = '', stepText] = item.split('/');
    const step = stepText === undefined ? 1 : Number(stepText);
    let lo: number;
    let hi: number;
    if (range === '*') [lo, hi] = [min, max];
    else if (range.includes('-')) [lo, hi] = range.split('-').map(Number) as [number, number];
    else [lo, hi] = [Number(range), stepText === undefined ? Number(range) : max];
    for (let v = lo; v <= hi; v += step) out.add(max === 7 ? v % 7 : v);
  }
  return out;
}

function oracleMatcher(cron: string): { fixedHour: boolean; matches: (w: Wall) => boolean } {
  const [mi = '', h = '', dom = '', mo = '', dow = ''] = cron.split(' ');
  const M = oracleField(mi, 0, 59);
  const H = oracleField(h, 0, 23);
  const D = oracleField(dom, 1, 31);
  const MO = oracleField(mo, 1, 12);
  const W = oracleField(dow, 0, 7);
  const domStar = dom === '*';
  const dowStar = dow === '*';
  return {
    fixedHour: H.size < 24,
    matches: (w) => {
      if (!M.has(w.mi) || !H.has(w.h) || !MO.has(w.mo)) return false;
      const dm = D.has(w.d);
      const wm = W.has(w.dow);
      if (domStar && dowStar) return true;
      if (domStar) return wm;
      if (dowStar) return dm;
      return dm || wm;
    },
  };
}

/** Minute-by-minute wall clock of a zone over [fromMs, toMs), cached per zone and range. */
const clocks = new Map<string, Wall[]>();
function clock(tz: string, fromMs: number, toMs: number): Wall[] {
  const key = `${tz} ${fromMs} ${toMs}`;
  let c = clocks.get(key);
  if (!c) {
    c = [];
    for (let t = fromMs; t < toMs; t += MIN) c.push(wallOf(tz, t));
    clocks.set(key, c);
  }
  return c;
}

/** Due instants in [fromMs, toMs) by brute force (5-field numeric expressions only). */
function oracle(cron: string, tz: string, fromMs: number, toMs: number): number[] {
  const { fixedHour, matches } = oracleMatcher(cron);
  const start = fromMs - DAY; // warm-up: first passes of folds and gaps just before fromMs
  const walls = clock(tz, start, toMs);
  const due = new Set<number>();
  const seen = new Set<number>();
  let prevOffset: number | null = null;
  walls.forEach((w, i) => {
    const t = start + i * MIN;
    const offset = w.ms - t;
    if (prevOffset !== null && offset > prevOffset && fixedHour) {
      // Gap: wall times [t + prevOffset, t + offset) do not exist; fixed-hour ones fire at wall − old offset.
      for (let wall = t + prevOffset; wall < t + offset; wall += MIN) if (matches(wallFromMs(wall))) due.add(wall - prevOffset);
    }
    prevOffset = offset;
    if (matches(w) && (!fixedHour || !seen.has(w.ms))) due.add(t);
    seen.add(w.ms);
  });
  return [...due].filter((t) => t >= fromMs && t < toMs).sort((a, b) => a - b);
}

/** Hours (UTC ms, floored) in which the zone's offset changes during `year`, found by hourly sampling. */
function transitionHours(tz: string, year: number): number[] {
  const out: number[] = [];
  const end = Date.UTC(year + 1, 0, 1);
  let t = Date.UTC(year, 0, 1);
  let prev = wallOf(tz, t).ms - t;
  for (t += HOUR; t < end; t += HOUR) {
    const o = wallOf(tz, t).ms - t;
    if (o !== prev) out.push(t - HOUR);
    prev = o;
  }
  return out;
}

const DST_ZONES: [string, number][] = [
  ['America/New_York', 2025],
  ['Europe/Berlin', 2023],
  ['Australia/Sydney', 2019],
  ['Australia/Lord_Howe', 2023], // 30-minute shift
  ['Antarctica/Troll', 2026], // 2-hour shift
  ['Pacific/Apia', 2011], // DST both ways, and 2011-12-30 skipped (−10 → +14)
];
const transitions = DST_ZONES.flatMap(([tz, year]) => transitionHours(tz, year).map((at) => ({ tz, at })));

const ORACLE_CRONS = [
  '30 2 * * *',
  '30 1 * * *',
  '0 * * * *',
  '*/20 * * * *',
  '0,30 2,3 * * *',
  '15 0-5 * * *',
  '30 2-23/4 * * *',
  '0 0 * * *',
  '*/7 1-3 * * *',
  '0 9 30 12 *',
  '0 3 * * 0',
  '45 1 * * 1-5',
];

describe('brute-force oracle around DST transitions', () => {
  it('finds the transitions it should (the oracle itself can see them)', () => {
    expect(transitions.length).toBeGreaterThanOrEqual(2 * DST_ZONES.length);
    expect(transitions.some((x) => x.tz === 'Pacific/Apia' && new Date(x.at).getUTCMonth() === 11)).toBe(true);
  });
  for (const { tz, at } of transitions) {
    it(`${tz} around ${new Date(at).toISOString()}`, () => {
      const from = at - DAY;
      const to = at + DAY;
      for (const cron of ORACLE_CRONS) {
        const due = compileCron(cron, tz);
        const got = sequence(due, from - 1, to).map(iso);
        expect(got, cron).toEqual(oracle(cron, tz, from, to).map(iso));
      }
    });
  }
});

// ---------------------------------------------------------------------------------------------------------
// Properties: next is a function of one fixed set of instants.
// ---------------------------------------------------------------------------------------------------------
/** Deterministic PRNG (mulberry32), so a failure reproduces. */
function prng(seed: number): () => number {
  return () => {
    let t = (seed += 0x6d2b79f5);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const PROPERTY_CRONS = ['30 1 * * *', '30 2 * * *', '0 2 * * *', '*/20 * * * *', '0 * * * *', '30 2-23/4 * * *', '*/30 * * * * *', '0 0,30 1-3 * * *'];

describe('next is monotone and independent of where the search starts', () => {
  for (const { tz, at } of transitions) {
    it(`${tz} around ${new Date(at).toISOString()}`, () => {
      const from = at - 2 * DAY;
      const to = at + 2 * DAY;
      const rand = prng(at % 1_000_003);
      for (const cron of PROPERTY_CRONS) {
        // Reference set with a margin of 2 days each side of the points queried.
        const reference = sequence(compileCron(cron, tz), from - 2 * DAY, to + 2 * DAY);
        // Strictly increasing: no instant repeated.
        for (let i = 1; i < reference.length; i++) expect(reference[i]!, cron).toBeGreaterThan(reference[i - 1]!);
        const expectedNext = (after: number): number | undefined => reference.find((t) => t > after);
        const expectedLast = (atMs: number): number | undefined => reference.filter((t) => t <= atMs).pop();

        // Random points, including due times themselves and the instants right around them.
        const points: number[] = [];
        for (let i = 0; i < 60; i++) points.push(from + Math.floor(rand() * (to - from)));
        for (let i = 0; i < 20; i++) {
          const t = reference[Math.floor(rand() * reference.length)];
          if (t !== undefined && t > from && t < to) points.push(t - 1, t, t + 1);
        }

        const shared = compileCron(cron, tz); // queried in random order: its cache must not matter
        const answers = points.map((p, i) => {
          const n = shared.next(p);
          expect(iso(n), `${cron} next(${iso(p)})`).toBe(iso(expectedNext(p) ?? null));
          const l = shared.last(p);
          expect(iso(l), `${cron} last(${iso(p)})`).toBe(iso(expectedLast(p) ?? null));
          if (i % 8 === 0) {
            const fresh = compileCron(cron, tz);
            expect(iso(fresh.next(p)), `${cron} fresh next(${iso(p)})`).toBe(iso(n));
          }
          return [p, n ?? Infinity] as const;
        });
        answers.sort((a, b) => a[0] - b[0]);
        for (let i = 1; i < answers.length; i++) expect(answers[i]![1], cron).toBeGreaterThanOrEqual(answers[i - 1]![1]);
      }
    });
  }

  it('wildcard-hour schedules tick evenly in UTC straight through gaps and folds', () => {
    for (const { tz, at } of transitions) {
      for (const [cron, stepMs] of [['*/15 * * * *', 15 * MIN], ['*/20 * * * * *', 20_000]] as const) {
        const seq = sequence(compileCron(cron, tz), at - 3 * HOUR, at + 3 * HOUR);
        expect(seq.length, `${cron} ${tz}`).toBeGreaterThan(10);
        for (let i = 1; i < seq.length; i++) expect(seq[i]! - seq[i - 1]!, `${cron} ${tz} at ${iso(seq[i]!)}`).toBe(stepMs);
      }
    }
  });
});

describe('minGapMs', () => {
  const from = Date.parse('2025-03-01T00:00:00Z');
  it('is the step of a plain schedule', () => {
    expect(minGapMs(compileCron('*/2 * * * * *', 'UTC'), from)).toBe(2000);
    expect(minGapMs(compileCron('0 0 1,2 * *', 'UTC'), from)).toBe(DAY);
    expect(minGapMs(compileCron('*/15 * * * *', 'Australia/Lord_Howe'), from)).toBe(15 * MIN);
  });

  it('sees a gap shortened by DST', () => {
    // 01:30 and 03:30 are 2 h apart, except on a spring-forward day (02:00 → 03:00), where they are 1 h apart.
    const due = compileCron('30 1,3 * * *', 'America/New_York');
    expect(minGapMs(due, from)).toBe(HOUR);
    // Before any spring-forward (sample ends before March 2025 and after November 2024).
    expect(minGapMs(due, Date.parse('2024-11-10T00:00:00Z'))).toBe(HOUR); // 400 days reach March 2025
  });

  it('never reports 0: a gap-shifted time that meets a real one fires once', () => {
    // 02:30 does not exist on 2025-03-09 and becomes 03:30 EDT, which is also the 03:30 slot.
    const due = compileCron('30 2,3 * * *', 'America/New_York');
    const seq = sequence(due, Date.parse('2025-03-08T00:00:00Z'), Date.parse('2025-03-11T00:00:00Z'));
    expect(new Set(seq).size).toBe(seq.length);
    expect(minGapMs(due, from)).toBe(HOUR);
  });

  it('is Infinity with fewer than two due times in the sample', () => {
    expect(minGapMs(compileCron('0 0 29 2 *', 'UTC'), Date.parse('2023-03-01T00:00:00Z'))).toBe(Infinity);
  });
});

describe('range ends', () => {
  it('returns null past the supported range instead of looping', () => {
    const due = compileCron('0 0 29 2 *', 'UTC');
    expect(due.next(Date.UTC(9997, 0, 1))).toBeNull();
    expect(due.last(Date.UTC(1003, 0, 1))).toBeNull();
    expect(iso(due.last(Date.UTC(2001, 0, 1)))).toBe('2000-02-29T00:00:00.000Z');
  });
});

describe('performance', () => {
  it('next() on */2 * * * * * is well under 50 µs amortised', () => {
    const due = compileCron('*/2 * * * * *', 'Europe/Berlin');
    let t = Date.parse('2025-03-29T00:00:00Z'); // crosses the spring-forward of 2025-03-30
    const n = 100_000;
    const start = performance.now();
    for (let i = 0; i < n; i++) t = due.next(t) ?? t;
    const usPerCall = ((performance.now() - start) * 1000) / n;
    console.log(`next() on */2 * * * * *: ${usPerCall.toFixed(2)} µs per call amortised`);
    expect(t).toBe(Date.parse('2025-03-29T00:00:00Z') + n * 2000);
    expect(usPerCall).toBeLessThan(50);
  });
});
