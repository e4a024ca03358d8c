/**
 * Positions for schedule data that did not come from a YAML document (a stored definition, already parsed):
 * where each field would be in the data's canonical JSON (runner/text/canonical-json.ts: keys sorted, no
 * spaces), i.e. where the YAML parser would put it if that JSON were read as a schedule file. Problems sorted
 * by these positions come out in the order the file path gives them for the same text, so a definition checked
 * from its parsed object and the same definition checked from its JSON text say the same things in the same
 * order (runner/store/definition.ts).
 *
 * Offsets are computed only when a position is asked for (an error to place): the clean path pays nothing.
 */
import type { Path } from './yaml-position.js';
import { fieldPath } from './errors.js';

/**
 * What the object step of the loader (runner/config/load.ts) asks about positions: a YAML document's nodes for
 * a file ({@link Locator} of yaml-position.ts), the canonical JSON for plain data ({@link JsonPositions}).
 */
export interface Positions {
  /**
   * 1-based position of the value at `path`; of its key when `atKey`; of the nearest existing parent map or list
   * when the key is missing.
   */
  position(path: readonly (string | number)[], atKey: boolean): { line: number; col: number };
  /** True when the path leads to an existing key (its value may be null). */
  exists(path: readonly (string | number)[]): boolean;
  /**
   * The dotted field of `path` (`schedules[0].job.params.x`) with each key as the input writes it: a YAML key read as
   * a number is named by its text (`99999999999999999999`), not by the number's (`100000000000000000000`).
   */
  fieldName(path: readonly (string | number)[]): string;
  /**
   * The text of a number or true/false at `path` as the input writes it (`1e400`, `0x10`), for messages that show
   * such a value; undefined when the input has no text for it (plain data) or it is no such scalar.
   */
  valueText(path: readonly (string | number)[]): string | undefined;
}

/**
 * Own keys of a plain map in the order canonicalJson writes them: it copies the keys sorted by UTF-16 code units
 * into a new object, whose integer-like keys JavaScript then lists first (ascending); undefined members are left out.
 * An own `__proto__` key (which canonicalJson drops) keeps its sorted place, as in JSON text that has one.
 */
function sortedKeys(map: Record<string, unknown>): string[] {
  const sorted = Object.create(null) as Record<string, true>;
  for (const k of Object.keys(map).sort()) if (map[k] !== undefined) sorted[k] = true;
  return Object.keys(sorted);
}

function isMap(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/**
 * Positions inside the canonical JSON of `data` (one line: line 1, col = offset + 1), for plain JSON data (what
 * JSON.parse gives: maps, lists, text, finite numbers, booleans, null).
 */
export class JsonPositions implements Positions {
  private offsets: Map<string, { value: number; key?: number }> | undefined;

  constructor(private readonly data: unknown) {}

  exists(path: readonly (string | number)[]): boolean {
    let v = this.data;
    for (const seg of path) {
      if (Array.isArray(v)) {
        if (typeof seg !== 'number' || seg >= v.length) return false;
        v = v[seg];
      } else if (isMap(v)) {
        const k = String(seg);
        if (!Object.hasOwn(v, k) || v[k] === undefined) return false;
        v = v[k];
      } else {
        return false;
      }
    }
    return true;
  }

  /** Plain data has no text of its own: messages show the value as JavaScript writes it. */
  valueText(): string | undefined {
    return undefined;
  }

  /** Plain data's keys are text already: the field path as it is. */
  fieldName(path: readonly (string | number)[]): string {
    return fieldPath(path);
  }

  position(path: readonly (string | number)[], atKey: boolean): { line: number; col: number } {
    this.offsets ??= canonicalOffsets(this.data);
    // The deepest existing prefix of the path (a missing key: its parent map or list, as the file's locator).
    let v = this.data;
    let depth = 0;
    for (const seg of path) {
      if (Array.isArray(v) && typeof seg === 'number' && seg < v.length) v = v[seg];
      else if (isMap(v) && Object.hasOwn(v, String(seg)) && v[String(seg)] !== undefined) v = v[String(seg)];
      else break;
      depth++;
    }
    const at = this.offsets.get(pathKey(path.slice(0, depth)));
    const offset = at === undefined ? 0 : depth === path.length && atKey && at.key !== undefined ? at.key : at.value;
    return { line: 1, col: offset + 1 };
  }
}

function pathKey(path: readonly (string | number)[]): string {
  return JSON.stringify(path);
}

/** The offset of every value (and of every map key) in the canonical JSON of `data`, by path. */
function canonicalOffsets(data: unknown): Map<string, { value: number; key?: number }> {
  const out = new Map<string, { value: number; key?: number }>();
  const walk = (v: unknown, path: Path, offset: number, key: number | undefined): number => {
    out.set(pathKey(path), key === undefined ? { value: offset } : { value: offset, key });
    if (Array.isArray(v)) {
      let at = offset + 1; // [
      v.forEach((x, i) => {
        if (i > 0) at += 1; // ,
        at += walk(x, [...path, i], at, undefined);
      });
      return at + 1 - offset; // ]
    }
    if (isMap(v)) {
      let at = offset + 1; // {
      sortedKeys(v).forEach((k, i) => {
        if (i > 0) at += 1; // ,
        const keyAt = at;
        at += JSON.stringify(k).length + 1; // "key":
        at += walk(v[k], [...path, k], at, keyAt);
      });
      return at + 1 - offset; // }
    }
    return (JSON.stringify(v) ?? 'null').length;
  };
  walk(data, [], 0, undefined);
  return out;
}
