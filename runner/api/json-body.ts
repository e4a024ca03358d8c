/**
 * Duplicate keys in a JSON request body. JSON.parse keeps the later of two equal keys silently
 * (`{"cron":"61 * * * *","cron":"* * * * *"}` stores the second cron), while the same map in a schedule file is
 * refused (runner/config/yaml-messages.ts, DUPLICATE_KEY). The HTTP API refuses it too, through this one check
 * every JSON body goes through (server.ts `bodyOf`).
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

/**
 * Every duplicate key of `text`, in the order of the text; empty when there is none. `text` must be JSON that
 * JSON.parse accepts (call it after JSON.parse); for anything else the answer is a best effort and never throws.
 */
export function duplicateJsonKeys(text: string): DuplicateKey[] {
  const lc = new LineCounter();
  let doc;
  try {
    doc = parseDocument(text, { schema: 'json', uniqueKeys: false, merge: false, prettyErrors: false, lineCounter: lc });
  } catch {
    return [];
  }
  const out: DuplicateKey[] = [];
  const path: (string | number)[] = [];
  const visit = (node: unknown): void => {
    if (isMap(node)) {
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
  return out;
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
