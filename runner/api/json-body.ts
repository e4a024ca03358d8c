/**
 * What JSON.parse changes silently in a JSON request body, refused by the HTTP API as a schedule file's loader
 * refuses it (one check every JSON body goes through: server.ts `bodyOf`):
 * - duplicate keys: JSON.parse keeps the later of two equal keys (`{"cron":"61 * * * *","cron":"* * * * *"}`
 *   stores the second cron); a schedule file refuses them (runner/config/yaml-messages.ts, DUPLICATE_KEY);
 * - numbers outside ±(2^53−1) written with more digits than a double keeps: JSON.parse makes them the nearest
 *   double (`12345678901234567890` or `12345678901234567890.0` → `12345678901234567000`), so a job's params would
 *   hold another number than was sent; a schedule file refuses them too (runner/config/number-literal.ts).
 *
 * How: JSON is YAML, so the body is read once more with the `yaml` library the schedule-file loader uses (JSON
 * schema, no merge keys), and each map's keys are compared by their parsed value (so `"\u0063ron"` and `"cron"`
 * are the same key, as JSON.parse has them). JSON.parse stays the judge of the syntax and of the value: this only
 * runs on a body it accepted, and only adds refusals.
 * Cost (measured, Node 24, 2 shared cores): ~0.2 ms for a 150-byte definition, ~200 ms for a 190 KB body (the
 * yaml parser, ~150 times JSON.parse); bodies are capped at 256 KiB (server.ts MAX_BODY_BYTES) and need an
 * operator token. Should that matter, a scan over the yaml Lexer's tokens costs ~25 ms for the same body.
 */
import { LineCounter, isMap, isScalar, isSeq, parseDocument, type Node } from 'yaml';
import { fieldPath } from '../config/errors.js';
import { changedNumberReason, numberLiteralChanged } from '../config/number-literal.js';
import { MAX_DEFINITION_DEPTH } from '../config/depth.js';

/**
 * Most levels of JSON objects and arrays a request body may nest (the body itself is level 1): 64, twice
 * MAX_DEFINITION_DEPTH (runner/config/depth.ts). A body of `PUT /schedules/{name}` is a definition, so one nested
 * a little past the definition's limit gets through here and is refused by the definition check, which names the
 * field (422 SCHEDULE_INVALID); past this bound the body is refused as it is read (400 BODY_TOO_DEEP), before the
 * recursive re-read of {@link jsonBodyProblems} (the yaml parser runs out of stack some thousand levels down).
 */
export const MAX_BODY_DEPTH = 2 * MAX_DEFINITION_DEPTH;

/** Where a JSON text first opens an object or array past a nesting bound (1-based line and column). */
export interface TooDeepBody {
  line: number;
  col: number;
}

/**
 * The first `{` or `[` of JSON `text` that opens a level deeper than `maxLevels` (the outermost value is level 1),
 * or `undefined`. One pass over the text, no recursion (any depth is safe); text inside strings is skipped,
 * escapes (`\"`) included. For text JSON.parse accepted; on anything else a best effort that never throws.
 */
export function jsonTooDeep(text: string, maxLevels: number = MAX_BODY_DEPTH): TooDeepBody | undefined {
  let depth = 0;
  let line = 1;
  let lineStart = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c /* backslash: the next character is escaped */) i++;
      else if (c === 0x22 /* " */) inString = false;
      continue;
    }
    switch (c) {
      case 0x22:
        inString = true;
        break;
      case 0x7b /* { */:
      case 0x5b /* [ */:
        if (++depth > maxLevels) return { line, col: i - lineStart + 1 };
        break;
      case 0x7d /* } */:
      case 0x5d /* ] */:
        depth--;
        break;
      case 0x0a /* \n */:
        line++;
        lineStart = i + 1;
        break;
    }
  }
  return undefined;
}

/** The API's message for a body nested past {@link MAX_BODY_DEPTH}: where, what is wrong, how to fix it. */
export function tooDeepBodyMessage(at: TooDeepBody): string {
  return `body: nests objects and arrays deeper than ${MAX_BODY_DEPTH} levels (at line ${at.line}:${at.col} of the body); a schedule definition may nest at most ${MAX_DEFINITION_DEPTH} levels: flatten it, or pass deep data as a JSON string and parse it in the job`;
}

/** One key given twice in the same JSON object. Lines and columns are 1-based, in the body's text. */
export interface DuplicateKey {
  /** The key as JSON.parse has it. */
  key: string;
  /** Path of the key inside the body (`job.params.a`, `items[2].x`); the key itself is the last segment. */
  path: (string | number)[];
  /** Where the later one starts (the one JSON.parse would keep). */
  line: number;
  col: number;
  /** Where the first one starts. */
  first: { line: number; col: number };
}

/** A number literal of the body that JSON.parse would store as another number. Lines and columns are 1-based. */
export interface UnsafeInteger {
  /** Path of the value inside the body (`job.params.id`, `items[2]`). */
  path: (string | number)[];
  line: number;
  col: number;
  /** The value it would read as (0 for a literal nearer to 0 than a double can be). */
  value: number;
}

/** What {@link jsonBodyProblems} finds, each list in the order of the text. */
export interface JsonBodyProblems {
  duplicates: DuplicateKey[];
  unsafeIntegers: UnsafeInteger[];
}

/**
 * Every duplicate key of `text`, in the order of the text; empty when there is none. `text` must be JSON that
 * JSON.parse accepts (call it after JSON.parse); for anything else the answer is a best effort and never throws.
 */
export function duplicateJsonKeys(text: string): DuplicateKey[] {
  return jsonBodyProblems(text).duplicates;
}

/**
 * Every duplicate key and every number literal JSON.parse would change (number-literal.ts) of `text` (one parse), in the order of the
 * text. `text` must be JSON that JSON.parse accepts (call it after JSON.parse); for anything else the answer is a
 * best effort and never throws.
 */
export function jsonBodyProblems(text: string): JsonBodyProblems {
  const lc = new LineCounter();
  let doc;
  try {
    doc = parseDocument(text, { schema: 'json', uniqueKeys: false, merge: false, prettyErrors: false, lineCounter: lc });
  } catch {
    return { duplicates: [], unsafeIntegers: [] };
  }
  const out: DuplicateKey[] = [];
  const unsafeIntegers: UnsafeInteger[] = [];
  const path: (string | number)[] = [];
  const visit = (node: unknown): void => {
    if (isScalar(node)) {
      const source = text.slice(node.range?.[0] ?? 0, node.range?.[1] ?? 0);
      if (typeof node.value === 'number' && numberLiteralChanged(source, node.value)) {
        unsafeIntegers.push({ path: [...path], ...lc.linePos(node.range?.[0] ?? 0), value: node.value });
      }
    } else if (isMap(node)) {
      const seen = new Map<string, Node>();
      for (const pair of node.items) {
        const keyNode = pair.key as Node | null;
        if (!isScalar(keyNode)) continue;
        const key = String(keyNode.value);
        const first = seen.get(key);
        path.push(key);
        if (first) {
          out.push({ key, path: [...path], ...lc.linePos(keyNode.range?.[0] ?? 0), first: lc.linePos(first.range?.[0] ?? 0) });
        } else {
          seen.set(key, keyNode);
        }
        visit(pair.value);
        path.pop();
      }
    } else if (isSeq(node)) {
      node.items.forEach((item, i) => {
        path.push(i);
        visit(item);
        path.pop();
      });
    }
  };
  visit(doc.contents);
  return { duplicates: out, unsafeIntegers };
}

/** The field of a duplicate key as the API names fields: `body.cron`, `body.job.params.a`. */
export function duplicateKeyField(d: DuplicateKey): string {
  return fieldPath(['body', ...d.path]);
}

/** The API's problem for a duplicate key: its field, what is wrong and where (line:col of the body), how to fix it. */
export function duplicateKeyProblem(d: DuplicateKey): { field: string; reason: string; hint: string } {
  return {
    field: duplicateKeyField(d),
    reason: `key "${d.key}" appears twice in this object (at line ${d.line}:${d.col} of the body, first at line ${d.first.line}:${d.first.col})`,
    hint: 'keep one of them: each key may appear once in an object (the later one would silently win)',
  };
}

/** One sentence: which key, where (line:col of the body, and the first one's), and how to fix it. */
export function duplicateKeyMessage(d: DuplicateKey): string {
  const p = duplicateKeyProblem(d);
  return `${p.field}: ${p.reason}; the later one would silently win: send each key once`;
}

/**
 * The API's problem for a number JSON.parse would change (outside ±(2^53−1), more digits than a double keeps): its field, what is wrong and where (line:col of the body),
 * how to fix it. The value is not shown (a params value may be a secret); its position finds it.
 */
export function unsafeIntegerProblem(u: UnsafeInteger): { field: string; reason: string; hint: string } {
  return {
    field: fieldPath(['body', ...u.path]),
    reason: `at line ${u.line}:${u.col} of the body, ${changedNumberReason(u.value)}`,
    hint: u.value === 0 ? 'send 0 if that is what you mean, or a JSON string ("…") to keep it as text' : 'send it as a JSON string ("…" around the digits) to keep every digit',
  };
}

/** One sentence: which field, where, and how to fix it. */
export function unsafeIntegerMessage(u: UnsafeInteger): string {
  const p = unsafeIntegerProblem(u);
  return `${p.field}: ${p.reason}; ${p.hint}`;
}
