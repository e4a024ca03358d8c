/**
 * YAML positions: from a field path (as zod reports it) to the 1-based `line:col` of its node in the document,
 * following aliases and `<<` merges; plus the errors found on the YAML itself (syntax, `__proto__` keys, integers
 * past ±(2^53−1)).
 */
import {
  isAlias,
  isMap,
  isPair,
  isScalar,
  isSeq,
  visit,
  type Document,
  type Node,
  type Pair,
  type Scalar,
  type YAMLError,
  type YAMLMap,
} from 'yaml';
import { ConfigError, fieldPath } from './errors.js';
import { changedNumberReason, numberLiteralChanged } from './number-literal.js';
import { unclosedMessage, unclosedOpenings } from './yaml-unclosed.js';
import { yamlMessage } from './yaml-messages.js';
import type { Positions } from './data-positions.js';

/** A field path: map keys and list indexes, outermost first. */
export type Path = (string | number)[];

/**
 * The refusal of a `__proto__` key, word for word on every path (files here; stored definitions in
 * runner/store/definition.ts, which get theirs from JSON.parse as an own key).
 */
export const PROTO_KEY_REASON = 'the key "__proto__" cannot be used: JavaScript gives it a special meaning, and what it holds would be dropped';
/** The hint that goes with {@link PROTO_KEY_REASON}. */
export const PROTO_KEY_HINT = 'remove it (no field, header or parameter can be named __proto__)';


/**
 * Every value of the document that parsing into JavaScript would change silently, each refused where it is written
 * (one walk over the document):
 * - a `__proto__` key: such a key does not become a field; the schema would drop it (and what it holds);
 * - a map or list used as a key (`? [1, 2]`): it would become the text of its items (`"[ 1, 2 ]"`), and two equal
 *   ones one key with the later value;
 * - a number literal outside ±(2^53−1) that a JavaScript number cannot hold as written (number-literal.ts): it
 *   becomes the nearest double (12345678901234567890 → 12345678901234567000), so a job would get another number
 *   than the file says.
 */
export function protoKeyErrors(doc: Document, file: string, at: (offset: number) => { line: number; col: number }): ConfigError[] {
  const out: ConfigError[] = [];
  visit(doc, {
    Scalar(_key, node, ancestors) {
      if (typeof node.value !== 'number' || !numberLiteralChanged(node.source ?? '', node.value)) return;
      const pos = at(node.range?.[0] ?? 0);
      const path = pathOf([...ancestors, node]);
      out.push(
        new ConfigError({
          code: 'SCHEMA_INVALID',
          file,
          ...pos,
          field: fieldPath(path),
          // Not shown: a value may be a secret in the wrong place (a params value is the job's data); the position finds it.
          reason: changedNumberReason(node.value),
          hint:
            node.value === 0
              ? 'write 0 if that is what you mean, or quote it ("…") to keep it as text'
              : 'quote it ("…" around the digits) to keep every digit as text, and read it as text (or BigInt) in the job',
        }),
      );
    },
    Pair(_key, pair, ancestors) {
      const key = isAlias(pair.key) ? pair.key.resolve(doc) : pair.key;
      if (isMap(key) || isSeq(key)) {
        const pos = at((pair.key as Node).range?.[0] ?? 0);
        out.push(
          new ConfigError({
            code: 'SCHEMA_INVALID',
            file,
            ...pos,
            field: fieldPath(pathOf(ancestors)),
            reason: `this key is a ${isMap(key) ? 'map' : 'list'} (a YAML "? " complex key): a JavaScript object's keys are text, so it would become the text of its items, and two such keys would silently be one`,
            hint: 'use a plain key (text or a number), e.g. "1,2": x',
          }),
        );
        return;
      }
      if (!isScalar(pair.key) || pair.key.value !== '__proto__') return;
      const pos = at(pair.key.range?.[0] ?? 0);
      out.push(
        new ConfigError({
          code: 'SCHEMA_INVALID',
          file,
          ...pos,
          field: fieldPath([...pathOf(ancestors), '__proto__']),
          reason: PROTO_KEY_REASON,
          hint: PROTO_KEY_HINT,
        }),
      );
    },
  });
  return out;
}

/**
 * A map key's name as the file writes it: a key YAML reads as a number keeps its text (`99999999999999999999`,
 * `0x1F`, `1.0`), which the number's own text (`100000000000000000000`, `31`, `1`) would not show; other keys as
 * JavaScript names them.
 */
export function keyName(key: Scalar): string {
  return typeof key.value === 'number' && typeof key.source === 'string' && key.source !== '' ? key.source : String(key.value);
}

/** The field path (keys as written, {@link keyName}, and list indexes) that a chain of YAML ancestors (document first) leads to, for messages. */
export function pathOf(ancestors: readonly unknown[]): Path {
  const path: Path = [];
  ancestors.forEach((node, i) => {
    const child = ancestors[i + 1];
    if (isPair(node) && isScalar(node.key)) path.push(keyName(node.key));
    else if (isSeq(node) && child !== undefined) path.push(node.items.indexOf(child as never));
  });
  return path;
}

/** True when `path` starts with every segment of `prefix`. */
export function startsWith(path: Path, prefix: Path): boolean {
  return prefix.every((seg, i) => path[i] === seg);
}

/**
 * YAML syntax errors, one per line (one mistake often yields several), in our words by the library's error code
 * (yaml-messages.ts; `doc`, when given, names the first of two equal keys), with a hint for unquoted cron text. A
 * quoted string or `[`/`{` never closed is reported where it opens (yaml-unclosed.ts), and the library's errors
 * after that opening, which follow from it, are left out.
 */
export function yamlErrors(
  errs: YAMLError[],
  file: string,
  text: string,
  at: (offset: number) => { line: number; col: number },
  doc?: Document,
): ConfigError[] {
  const seen = new Set<number>();
  const lines = text.split(/\r?\n/);
  const out: ConfigError[] = [];
  const unclosed = unclosedOpenings(text);
  for (const u of unclosed) {
    const pos = at(u.offset);
    if (seen.has(pos.line)) continue;
    seen.add(pos.line);
    out.push(new ConfigError({ code: 'YAML_SYNTAX', file, ...pos, field: '', ...unclosedMessage(u) }));
  }
  const firstUnclosed = unclosed[0]?.offset ?? Infinity;
  for (const err of errs) {
    if (err.pos[0] > firstUnclosed) continue;
    const m = yamlMessage(err, doc, lines, at);
    if (seen.has(m.line)) continue;
    seen.add(m.line);
    const unquoted = /^\s*(-\s+)?cron:\s*[*@]/.test(lines[m.line - 1] ?? '');
    const hint = unquoted ? 'quote cron expressions: * and @ cannot start a plain YAML value, e.g. cron: "*/5 * * * *"' : m.hint;
    out.push(new ConfigError({ code: 'YAML_SYNTAX', file, line: m.line, col: m.col, field: '', reason: m.reason, ...(hint ? { hint } : {}), cause: err }));
  }
  return out;
}

/** Finds the YAML node for a zod path and reports 1-based positions. */
export class Locator implements Positions {
  constructor(
    private readonly doc: Document,
    private readonly at: (offset: number) => { line: number; col: number },
  ) {}

  /**
   * Position of the value at `path`; of its key when the value is empty or `atKey`; of the nearest existing
   * parent map or list when the key is missing. 1:1 for an empty document.
   */
  position(path: readonly (string | number)[], atKey: boolean): { line: number; col: number } {
    const found = this.find(path);
    const node = atKey || found.valueEmpty ? (found.key ?? found.node) : found.node;
    const offset = node?.range?.[0];
    return offset === undefined ? { line: 1, col: 1 } : this.at(offset);
  }

  /** True when the path leads to an existing key (its value may be empty). */
  exists(path: readonly (string | number)[]): boolean {
    return this.find(path).complete;
  }

  /** The source text of the number or boolean scalar at `path` (`1e400`, `0x10`); undefined for anything else. */
  valueText(path: readonly (string | number)[]): string | undefined {
    const found = this.find(path);
    const node = found.complete && !found.valueEmpty ? found.node : undefined;
    return isScalar(node) && (typeof node.value === 'number' || typeof node.value === 'boolean') && typeof node.source === 'string' && node.source !== '' ? node.source : undefined;
  }

  /** The field of `path` with its keys as the file writes them ({@link keyName}); segments past the document as given. */
  fieldName(path: readonly (string | number)[]): string {
    const out: Path = [];
    let node = this.resolve(this.doc.contents ?? undefined);
    for (const [i, seg] of path.entries()) {
      const pair = isMap(node) ? this.pairIn(node, String(seg), 0) : undefined;
      if (pair) {
        out.push(isScalar(pair.key) ? keyName(pair.key) : seg);
        node = this.resolve((pair.value ?? undefined) as Node | undefined);
      } else if (isSeq(node) && typeof seg === 'number' && seg < node.items.length) {
        out.push(seg);
        node = this.resolve(node.items[seg] as Node | undefined);
      } else {
        out.push(...path.slice(i));
        break;
      }
    }
    return fieldPath(out);
  }

  private find(path: readonly (string | number)[]): {
    node: Node | undefined;
    key: Node | undefined;
    complete: boolean;
    valueEmpty: boolean;
  } {
    let node = this.resolve(this.doc.contents ?? undefined);
    let key: Node | undefined;
    for (const seg of path) {
      if (isMap(node)) {
        const pair = this.pairIn(node, String(seg), 0);
        if (!pair) return { node, key: undefined, complete: false, valueEmpty: false };
        key = isScalar(pair.key) ? pair.key : undefined;
        const value = this.resolve((pair.value ?? undefined) as Node | undefined);
        if (value === undefined || (isScalar(value) && value.value === null && !value.source)) {
          const complete = seg === path[path.length - 1];
          return { node: key ?? node, key, complete, valueEmpty: true };
        }
        node = value;
      } else if (isSeq(node) && typeof seg === 'number' && seg < node.items.length) {
        key = undefined;
        node = this.resolve(node.items[seg] as Node | undefined);
      } else {
        return { node, key: undefined, complete: false, valueEmpty: false };
      }
    }
    return { node, key, complete: true, valueEmpty: false };
  }

  /** The pair for `key` in `map`, looking into `<<` merge sources when the map does not set it itself. */
  private pairIn(map: YAMLMap, key: string, depth: number): Pair | undefined {
    const own = map.items.find((p) => isScalar(p.key) && typeof p.key.value !== 'symbol' && String(p.key.value) === key);
    if (own || depth > 10) return own;
    for (const p of map.items) {
      if (!isScalar(p.key) || typeof p.key.value !== 'symbol') continue; // the merge key << is a symbol
      const source = this.resolve((p.value ?? undefined) as Node | undefined);
      const sources = isSeq(source) ? source.items.map((n) => this.resolve(n as Node)) : [source];
      for (const m of sources) {
        const found = isMap(m) ? this.pairIn(m, key, depth + 1) : undefined;
        if (found) return found;
      }
    }
    return undefined;
  }

  private resolve(node: Node | undefined): Node | undefined {
    let n: unknown = node;
    for (let hops = 0; isAlias(n) && hops < 100; hops++) n = n.resolve(this.doc);
    return n as Node | undefined;
  }
}
