/**
 * The words of the HTTP API's 400 answers for a query or body its zod schema refuses: per problem the field path
 * (`query.limit`, `body.reason`), what is wrong in plain words and what is allowed, as the schedule-file messages
 * say it (runner/config/messages.ts, whose schema walk and value description this reuses). Never echoes a value.
 */
import { editDistance } from '../text/edit-distance.js';
import { z } from 'zod';
import { describe, schemaAt, valueAt } from '../config/messages.js';

/** Where a request's input came from: the field path starts with it. */
export type RequestPart = 'query' | 'body';

/** One refused field: `field` is the dotted path (`body.reason`), `message` the whole sentence with the field first. */
export interface FieldProblem {
  field: string;
  message: string;
}

/**
 * The problems of a refused `input` (one per zod issue, in zod's order).
 * @param schema the schema `input` was checked with (its field schemas say what is allowed).
 */
export function requestProblems(schema: z.ZodType, error: z.ZodError, input: unknown, part: RequestPart): FieldProblem[] {
  // zod's safe-integer bound beside the field's own (99999999999999999999 breaks both) is left out: one limit is said.
  const problems = fieldIssues(error.issues).flatMap((issue) => {
    const path = issue.path.filter((p): p is string | number => typeof p !== 'symbol');
    if (issue.code === 'unrecognized_keys') return issue.keys.map((key) => unknownKeyProblem(schemaAt(schema, path, input), [part, ...path], key));
    const field = [part, ...path].join('.');
    const given = valueAt(input, path);
    const fieldSchema = schemaAt(schema, path, input);
    const allowed = fieldSchema ? allowedText(fieldSchema) : undefined;
    const reason = reasonOf(issue, given, path.length === 0 ? part : undefined);
    return { field, message: `${field}: ${reason}${allowed ? `; allowed: ${allowed}` : ''}` };
  });
  return problems;
}

/**
 * The issues worth saying, per field: zod's `int()` adds a bound of ±(2^53−1) (`Number.MAX_SAFE_INTEGER`) that a
 * field's own range (e.g. 1–500) already lies inside; it is dropped when the field breaks another rule too, so a
 * value far past the field's range is answered with the field's own limit (the allowed range is said beside it).
 */
function fieldIssues(issues: readonly z.core.$ZodIssue[]): z.core.$ZodIssue[] {
  const key = (i: z.core.$ZodIssue): string => JSON.stringify(i.path.filter((p) => typeof p !== 'symbol'));
  const safeBound = (i: z.core.$ZodIssue): boolean =>
    (i.code === 'too_big' && Math.abs(Number(i.maximum)) >= Number.MAX_SAFE_INTEGER) || (i.code === 'too_small' && Math.abs(Number(i.minimum)) >= Number.MAX_SAFE_INTEGER);
  return issues.filter((i) => !safeBound(i) || !issues.some((o) => o !== i && !safeBound(o) && key(o) === key(i)));
}

/**
 * An unknown field of an object (refused, so that a mistyped field is not lost silently): which field, the one
 * probably meant (edit distance ≤ 2) and the fields allowed there.
 */
function unknownKeyProblem(objectSchema: z.core.$ZodType | undefined, at: (string | number)[], key: string): FieldProblem {
  const field = [...at, key].join('.');
  const shape = (objectSchema as { shape?: Record<string, unknown> } | undefined)?.shape;
  const known = shape ? Object.keys(shape) : [];
  const near = known.filter((k) => editDistance(k.toLowerCase(), key.toLowerCase(), 3) <= 2);
  const hint = near.length > 0 ? `; did you mean "${near[0]}"?` : '';
  const allowed = known.length > 0 ? `${hint ? ' ' : '; '}allowed: ${known.join(', ')}` : '';
  return { field, message: `${field}: is not a field here${hint}${allowed}` };
}

/** What is wrong, in words. `whole` names the query or body when the issue is about all of it. */
function reasonOf(issue: z.core.$ZodIssue, given: unknown, whole: RequestPart | undefined): string {
  switch (issue.code) {
    case 'invalid_type':
      if (whole) return `must be a JSON object, not ${describe(given)}`;
      if (given === undefined) return 'is required';
      if (issue.expected === 'int') return 'must be a whole number';
      if (issue.expected === 'number' && typeof given === 'string') return 'must be a number';
      return `must be ${article(issue.expected)}, not ${describe(given)}`;
    case 'too_small':
      if (issue.origin === 'string') return Number(issue.minimum) <= 1 ? 'must not be empty' : `must be at least ${issue.minimum} characters`;
      if (issue.origin === 'array') return `must list at least ${issue.minimum}`;
      return `must be at least ${issue.minimum}`;
    case 'too_big':
      if (issue.origin === 'string') return `is longer than ${issue.maximum} characters`;
      if (issue.origin === 'array') return `lists more than ${issue.maximum}`;
      return `must be at most ${issue.maximum}`;
    case 'invalid_value':
      return 'is not one of the allowed values';
    case 'unrecognized_keys':
      return `has unknown key(s) ${issue.keys.map((k) => `"${k}"`).join(', ')}`;
    default:
      // Our own refinements say it in words already; zod's generic words are replaced.
      return /^(Invalid|Too )/.test(issue.message) ? 'is not valid' : issue.message;
  }
}

function article(expected: string): string {
  if (expected === 'string') return 'text';
  if (expected === 'boolean') return 'true or false';
  if (expected === 'object' || expected === 'record') return 'a JSON object';
  if (expected === 'array') return 'a list';
  return /^[aeiou]/.test(expected) ? `an ${expected}` : `a ${expected}`;
}

/** What a field allows, from its JSON Schema (the one the OpenAPI document shows); undefined when nothing to say. */
function allowedText(s: z.core.$ZodType): string | undefined {
  let js: Record<string, unknown>;
  try {
    js = z.toJSONSchema(s as z.ZodType, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
  } catch {
    return undefined;
  }
  const desc = typeof js.description === 'string' ? `: ${js.description}` : '';
  if (Array.isArray(js.enum)) return `one of ${js.enum.join(', ')}`;
  // zod's int() bounds every whole number by the safe integers: not a limit worth saying.
  const bound = (v: unknown): number | undefined => (typeof v === 'number' && Math.abs(v) < Number.MAX_SAFE_INTEGER ? v : undefined);
  const min = bound(js.minimum);
  const max = bound(js.maximum);
  if (js.type === 'integer' || js.type === 'number') {
    const what = js.type === 'integer' ? 'a whole number' : 'a number';
    const range = min !== undefined && max !== undefined ? ` from ${min} to ${max}` : min !== undefined ? ` of at least ${min}` : max !== undefined ? ` of at most ${max}` : '';
    return `${what}${range}`;
  }
  if (js.type === 'boolean') return 'true or false';
  if (js.type === 'string') {
    const maxLength = js.maxLength as number | undefined;
    return `text${maxLength !== undefined ? ` of up to ${maxLength} characters` : ''}${desc}`;
  }
  return typeof js.description === 'string' ? js.description : undefined;
}
