/**
 * IANA time zones as a timeline of UTC offsets, and the mapping from wall-clock time to instants.
 *
 * Pure logic (no I/O). The only source of zone rules is `Intl.DateTimeFormat` (the tz database that ships
 * with Node's ICU), never the process zone. A zone's timeline is cut into *segments* of constant UTC offset;
 * transitions are found by sampling the offset once a day and bisecting each change to the second, and are
 * cached per zone in blocks of {@link BLOCK_MS}. Two transitions less than a day apart that cancel each other
 * out are not seen (no such pair exists in the tz database since 1970).
 *
 * Vocabulary: an *instant* is UTC ms since the epoch. A *wall time* is a naive local date-time represented
 * as the UTC ms of the same calendar fields (2025-03-30 02:30 local ↦ `Date.UTC(2025, 2, 30, 2, 30)`). An
 * offset is `wall − instant` in ms (+3_600_000 for Berlin in winter). Inside a segment with offset `o`,
 * wall `W` ↔ instant `W − o`.
 */
import { editDistance } from '../text/edit-distance.js';

/** One day in ms. Every UTC offset in the tz database is smaller than this in magnitude. */
export const DAY_MS = 86_400_000;

/** Length of a cached block of a zone's timeline (64 days). */
const BLOCK_MS = 64 * DAY_MS;

/** First instant the zone code supports: 1000-01-01T00:00:00Z (before that Intl's year/era output is unsafe). */
export const MIN_SUPPORTED_MS = Date.UTC(1000, 0, 1);
/** End (exclusive) of the instants the zone code supports: 9999-01-01T00:00:00Z. */
export const MAX_SUPPORTED_MS = Date.UTC(9999, 0, 1);

/** A stretch of a zone's timeline with one UTC offset: instants in `[startMs, endMs)` have wall time `t + offsetMs`. */
export interface Segment {
  /** First instant (UTC ms) of the segment, or the start of the range asked for if the segment began earlier. */
  readonly startMs: number;
  /** End instant (UTC ms, exclusive), or the end of the range asked for if the segment goes on. */
  readonly endMs: number;
  /** UTC offset in ms (`wall − instant`), e.g. 3_600_000 for UTC+01:00. */
  readonly offsetMs: number;
}

interface Block {
  /** Offset in force at the block's first instant. */
  readonly startOffsetMs: number;
  /** Changes inside the block, in order: from `atMs` on, the offset is `offsetMs`. */
  readonly transitions: readonly { readonly atMs: number; readonly offsetMs: number }[];
}

const FORMAT_OPTIONS: Intl.DateTimeFormatOptions = {
  hourCycle: 'h23',
  year: 'numeric',
  month: 'numeric',
  day: 'numeric',
  hour: 'numeric',
  minute: 'numeric',
  second: 'numeric',
};
/** `en-US` output of {@link FORMAT_OPTIONS}: `11/2/2025, 01:10:00`. Parsing it is ~3× faster than formatToParts. */
const EN_US = /^(\d+)\/(\d+)\/(\d+), (\d+):(\d+):(\d+)$/;

/**
 * True when `tz` names a time zone that this Node's tz database knows (`Europe/Berlin`, `UTC`, `Etc/GMT+5`;
 * matching is case-insensitive as in ECMA-402). Offset strings such as `+05:00` and the empty string are not
 * zones.
 */
export function isValidTimeZone(tz: string): boolean {
  if (typeof tz !== 'string' || tz.trim() === '' || tz !== tz.trim()) return false;
  // Node 22+ (ECMA-402 2024) also accepts UTC offsets (`+05:00`, `-0330`) as time zones; Node 20 refuses them.
  // A fixed offset has no DST rules, so it is not what `timeZone` means. Every tz database name starts with a
  // letter; an offset starts with a sign.
  if (!/^[A-Za-z]/.test(tz)) return false;
  if (knownZones.has(tz)) return true;
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz });
  } catch {
    return false;
  }
  if (knownZones.size < MAX_KNOWN_ZONES) knownZones.add(tz);
  return true;
}

/**
 * tz database names outside `Intl.supportedValuesOf('timeZone')` (which lists canonical Area/Location names only)
 * whose spelling we check: the legacy and abbreviation-like names users type in lowercase.
 */
const LEGACY_ZONES = ['UTC', 'UCT', 'GMT', 'Etc/UTC', 'Etc/GMT', 'Zulu', 'Universal', 'Greenwich', 'EST', 'MST', 'HST', 'EST5EDT', 'CST6CDT', 'MST7MDT', 'PST8PDT', 'CET', 'EET', 'MET', 'WET', 'PRC', 'ROC', 'ROK', 'NZ', 'NZ-CHAT', 'GB', 'GB-Eire', 'Eire', 'W-SU'];
/** What a user typing one of these probably meant instead: the fixed ones have no daylight saving. */
const MEANT = new Map([
  ['EST', 'America/New_York'],
  ['MST', 'America/Denver'],
  ['HST', 'Pacific/Honolulu'],
]);
let spellings: Map<string, string> | undefined;

/**
 * When `tz` is a tz database name spelled with other letter case (`est`, `utc`, `europe/berlin`), the names it
 * probably means, best first (`["EST", "America/New_York"]`); undefined when it is spelled as the tz database
 * spells it (or is no zone at all). ECMA-402 matches zone names case-insensitively, so such a spelling runs — `est`
 * runs as EST, UTC-5 all year, where its author usually meant US Eastern time — but the tz database, and with it
 * Kubernetes CronJobs and Temporal (Go's time.LoadLocation), refuse it: so do we, with these names as the hint.
 * A name whose path component starts with a lowercase letter (`us/eastern`) is refused too, hinting at the zone
 * ECMA-402 resolves it to.
 */
export function zoneSpelling(tz: string): string[] | undefined {
  if (typeof tz !== 'string' || !isValidTimeZone(tz)) return undefined;
  if (!spellings) {
    spellings = new Map();
    let names: string[] = [];
    try {
      names = Intl.supportedValuesOf('timeZone');
    } catch {
      /* an engine without the list: only the legacy names are checked */
    }
    for (const n of [...names, ...LEGACY_ZONES]) spellings.set(n.toLowerCase(), n);
  }
  const known = spellings.get(tz.toLowerCase());
  if (known !== undefined) return known === tz ? undefined : [known, ...(MEANT.has(known) ? [MEANT.get(known)!] : [])];
  if (!tz.split('/').some((part) => /^[a-z]/.test(part))) return undefined;
  return [new Intl.DateTimeFormat('en-US', { timeZone: tz }).resolvedOptions().timeZone];
}

/** What the usual meant-instead zones are, for the hint of a mis-cased spelling. */
const MEANT_TEXT: Record<string, string> = {
  EST: ' (UTC-5 all year, no daylight saving)',
  MST: ' (UTC-7 all year, no daylight saving)',
  HST: ' (UTC-10 all year, no daylight saving)',
  'America/New_York': ' (US Eastern time, with daylight saving)',
  'America/Denver': ' (US Mountain time, with daylight saving)',
  'Pacific/Honolulu': ' (Hawaii)',
};

/**
 * The refusal of a zone spelled with other letter case ({@link zoneSpelling}), naming the spellings meant; undefined
 * when `tz` is spelled as the tz database spells it (or is no zone: the caller's own check says so).
 */
export function misspelledZoneMessage(tz: unknown): string | undefined {
  const meant = typeof tz === 'string' ? zoneSpelling(tz) : undefined;
  if (!meant) return undefined;
  return (
    `time zone ${JSON.stringify(tz)} is not spelled as the tz database spells it (zone names are case-sensitive, as in Kubernetes CronJobs and Temporal); ` +
    `did you mean ${meant.map((n) => `"${n}"${MEANT_TEXT[n] ?? ''}`).join(' or ')}?`
  );
}

/**
 * Zone names found valid (as written: the tz database's case-insensitive matching makes `europe/berlin` an entry of
 * its own). Every schedule of a load is checked, and building an `Intl.DateTimeFormat` costs ~40 µs: at 1,000,000
 * schedules that was 40 s of a load for a handful of zones. Bounded (names are input): past the bound, checked again.
 */
const knownZones = new Set<string>();
const MAX_KNOWN_ZONES = 4096;

/**
 * Suggests known zone names close to a misspelt one (edit distance ≤ 3, or same last path component),
 * best first, at most 3. For error messages only; costs ~1 ms.
 */
export function suggestTimeZones(tz: string): string[] {
  let names: string[];
  try {
    names = Intl.supportedValuesOf('timeZone');
  } catch {
    return [];
  }
  const lower = tz.toLowerCase();
  const scored: { name: string; d: number }[] = [];
  for (const name of names) {
    const d = editDistance(lower, name.toLowerCase(), 4);
    if (d <= 3) scored.push({ name, d });
  }
  scored.sort((a, b) => a.d - b.d || a.name.localeCompare(b.name));
  return scored.slice(0, 3).map((s) => s.name);
}

/**
 * The offset timeline of one zone. Get instances with {@link zoneTimeline} (cached per zone name); the
 * `Intl.DateTimeFormat` behind it is created once per zone.
 */
export class ZoneTimeline {
  readonly timeZone: string;
  readonly #format: Intl.DateTimeFormat;
  readonly #blocks = new Map<number, Block>();

  /** @throws RangeError when `timeZone` is not a known zone (check with {@link isValidTimeZone} first). */
  constructor(timeZone: string) {
    if (!isValidTimeZone(timeZone)) throw new RangeError(`unknown time zone ${JSON.stringify(timeZone)}`);
    this.timeZone = timeZone;
    this.#format = new Intl.DateTimeFormat('en-US', { ...FORMAT_OPTIONS, timeZone });
  }

  /**
   * Offset (wall − instant, ms) at `atMs` straight from Intl, uncached (~1 µs). Intl works to the second, so
   * the offset is the same for every ms of a second.
   * @throws RangeError outside [{@link MIN_SUPPORTED_MS}, {@link MAX_SUPPORTED_MS}).
   */
  intlOffsetMs(atMs: number): number {
    if (!(atMs >= MIN_SUPPORTED_MS && atMs < MAX_SUPPORTED_MS)) {
      throw new RangeError(`instant ${atMs} is outside the supported years 1000-9998`);
    }
    const second = Math.floor(atMs / 1000) * 1000;
    return wallFromFields(this.#fieldsAt(second)) - second;
  }

  #fieldsAt(atMs: number): number[] {
    const text = this.#format.format(atMs);
    const m = EN_US.exec(text);
    if (m) return [Number(m[3]), Number(m[1]), Number(m[2]), Number(m[4]), Number(m[5]), Number(m[6])];
    // Another ICU might print differently: fall back to the slower but structured form.
    const parts: Record<string, number> = {};
    for (const p of this.#format.formatToParts(atMs)) if (p.type !== 'literal') parts[p.type] = Number(p.value);
    return [parts.year ?? NaN, parts.month ?? NaN, parts.day ?? NaN, parts.hour ?? NaN, parts.minute ?? NaN, parts.second ?? NaN];
  }

  /** Offset (ms) in force at instant `atMs`, from the cached timeline. */
  offsetAtMs(atMs: number): number {
    const block = this.#block(Math.floor(atMs / BLOCK_MS));
    let offset = block.startOffsetMs;
    for (const tr of block.transitions) {
      if (tr.atMs > atMs) break;
      offset = tr.offsetMs;
    }
    return offset;
  }

  /** Wall time (naive local ms, see the module doc) of instant `atMs`. */
  wallAtMs(atMs: number): number {
    return atMs + this.offsetAtMs(atMs);
  }

  /**
   * The segments of constant offset that cover `[fromMs, toMs)`, in order, contiguous. The first starts at
   * `fromMs` and the last ends at `toMs` (clamped: a caller that needs a segment's true start must ask for a
   * wider range). Consecutive segments always have different offsets.
   */
  segments(fromMs: number, toMs: number): Segment[] {
    const out: Segment[] = [];
    const first = Math.floor(fromMs / BLOCK_MS);
    const last = Math.floor((toMs - 1) / BLOCK_MS);
    let curStart = fromMs;
    let curOffset = this.offsetAtMs(fromMs);
    for (let idx = first; idx <= last; idx++) {
      const block = this.#block(idx);
      const blockStart = idx * BLOCK_MS;
      if (idx > first && block.startOffsetMs !== curOffset) {
        out.push({ startMs: curStart, endMs: blockStart, offsetMs: curOffset });
        curStart = blockStart;
        curOffset = block.startOffsetMs;
      }
      for (const tr of block.transitions) {
        if (tr.atMs <= fromMs) continue;
        if (tr.atMs >= toMs) break;
        if (tr.offsetMs !== curOffset) {
          out.push({ startMs: curStart, endMs: tr.atMs, offsetMs: curOffset });
          curStart = tr.atMs;
          curOffset = tr.offsetMs;
        }
      }
    }
    out.push({ startMs: curStart, endMs: toMs, offsetMs: curOffset });
    return out;
  }

  /** Transitions (instant and new offset) in `[fromMs, toMs)`, from the cached timeline. */
  transitions(fromMs: number, toMs: number): { atMs: number; offsetBeforeMs: number; offsetAfterMs: number }[] {
    const segs = this.segments(fromMs, toMs);
    const out: { atMs: number; offsetBeforeMs: number; offsetAfterMs: number }[] = [];
    for (let i = 1; i < segs.length; i++) {
      const a = segs[i - 1] as Segment;
      const b = segs[i] as Segment;
      out.push({ atMs: b.startMs, offsetBeforeMs: a.offsetMs, offsetAfterMs: b.offsetMs });
    }
    return out;
  }

  #block(idx: number): Block {
    const cached = this.#blocks.get(idx);
    if (cached) return cached;
    const start = Math.max(idx * BLOCK_MS, MIN_SUPPORTED_MS);
    const end = Math.min((idx + 1) * BLOCK_MS, MAX_SUPPORTED_MS - 1000);
    const startOffsetMs = this.intlOffsetMs(start);
    const transitions: { atMs: number; offsetMs: number }[] = [];
    let t = start;
    let offset = startOffsetMs;
    while (t < end) {
      const u = Math.min(t + DAY_MS, end);
      const o = this.intlOffsetMs(u);
      if (o !== offset) {
        // Bisect on whole seconds: offset(lo) is the old one, offset(hi) the new one.
        let lo = t;
        let hi = u;
        while (hi - lo > 1000) {
          const mid = lo + Math.floor((hi - lo) / 2000) * 1000;
          if (this.intlOffsetMs(mid) === offset) lo = mid;
          else hi = mid;
        }
        transitions.push({ atMs: hi, offsetMs: this.intlOffsetMs(hi) });
        offset = o;
      }
      t = u;
    }
    const block: Block = { startOffsetMs, transitions };
    this.#blocks.set(idx, block);
    return block;
  }
}

/** Naive wall ms from calendar fields [year, month 1-12, day, hour, minute, second]; exact for years < 100 too. */
function wallFromFields(f: readonly number[]): number {
  const [y = NaN, mo = NaN, d = NaN, h = NaN, mi = NaN, s = NaN] = f;
  const date = new Date(Date.UTC(2000, mo - 1, d, h, mi, s));
  date.setUTCFullYear(y);
  return date.getTime();
}

const timelines = new Map<string, ZoneTimeline>();

/**
 * The cached timeline of `timeZone`.
 * @throws RangeError when the zone is unknown (see {@link isValidTimeZone}).
 */
export function zoneTimeline(timeZone: string): ZoneTimeline {
  let tl = timelines.get(timeZone);
  if (!tl) {
    tl = new ZoneTimeline(timeZone);
    timelines.set(timeZone, tl);
  }
  return tl;
}

/**
 * The instants a wall time stands for, under the DST policy of RFC 5545 §3.3.5 as cronflock applies it to
 * cron (see test/cases/README.md and docs/design.md), appended to `out` in increasing order:
 * - wall time exists once: that instant;
 * - wall time repeated (fold, offset decreases): `fixedHour` → only the first pass (the earlier instant);
 *   otherwise both passes;
 * - wall time does not exist (gap, offset increases): `fixedHour` → read with the offset in force before
 *   the gap (02:30 becomes 03:30 summer time); otherwise nothing.
 *
 * @param segments contiguous segments in order (from {@link ZoneTimeline.segments}) that cover every instant
 *   within a day of the wall time; a wall time near the clamped ends of the list may be misread as a gap.
 * @param wallMs wall time as naive ms.
 * @param fixedHour true when the cron hour field is not a wildcard.
 * @param out receives the instants (UTC ms).
 */
export function instantsForWall(segments: readonly Segment[], wallMs: number, fixedHour: boolean, out: number[]): void {
  let found = false;
  let before = -1;
  for (let i = 0; i < segments.length; i++) {
    const s = segments[i] as Segment;
    const t = wallMs - s.offsetMs;
    if (t >= s.startMs && t < s.endMs) {
      if (!found || !fixedHour) out.push(t);
      found = true;
      // Segments are in time order, and the first pass of a fold is the earlier segment: for a fixed hour,
      // the first match is the earliest instant.
    } else if (s.endMs + s.offsetMs <= wallMs) {
      before = i;
    }
  }
  if (!found && fixedHour && before >= 0 && before < segments.length - 1) {
    out.push(wallMs - (segments[before] as Segment).offsetMs);
  }
}
