/**
 * How many alias expansions a schedule file may use: the yaml library's `maxAliasCount`, sized to the file.
 *
 * Why: the library refuses a document in which one anchor is expanded more than `maxAliasCount` times (uses ×
 * the aliases inside it), against "billion laughs" expansions — and its default, 100, refused an ordinary file of
 * 101 schedules sharing `<<: *base` (found by a user; Compose and Kubernetes accept such files). A limit of
 * {@link ALIAS_EXPANSIONS_PER_SCHEDULE} per entry of the file's `schedules` list (at least the library's 100)
 * keeps every use of anchors a file of that size needs, while a doubling chain of aliases still passes the limit
 * within a few levels: what a file may expand stays proportional to the file.
 */
import { isSeq, type Document } from 'yaml';

/** Expansions of one anchor allowed per schedule of the file. */
export const ALIAS_EXPANSIONS_PER_SCHEDULE = 10;
/** The least limit (the yaml library's default). */
export const MIN_ALIAS_EXPANSIONS = 100;

/** `maxAliasCount` for `doc` (a parsed schedule file): {@link ALIAS_EXPANSIONS_PER_SCHEDULE} × its schedules, ≥ 100. */
export function maxAliasCountOf(doc: Document): number {
  const list = doc.get('schedules', true); // undefined unless the document is a map
  const n = isSeq(list) ? list.items.length : 0;
  return Math.max(MIN_ALIAS_EXPANSIONS, ALIAS_EXPANSIONS_PER_SCHEDULE * n);
}

/** Whether `err` (thrown by `toJS`) is the library's refusal of too many alias expansions. */
export function isAliasLimitError(err: unknown): boolean {
  return err instanceof ReferenceError && /Excessive alias count/.test(err.message);
}

/** The reason and hint a refusal by the alias limit gives (`limit`: the file's {@link maxAliasCountOf}). */
export function aliasLimitProblem(limit: number): { reason: string; hint: string } {
  return {
    reason: `expands one anchor more than ${limit.toLocaleString('en-US')} times (its aliases, and the aliases inside what it names): refused as a possible "billion laughs" expansion`,
    hint: `a file may expand an anchor ${ALIAS_EXPANSIONS_PER_SCHEDULE} times per schedule it lists (at least ${MIN_ALIAS_EXPANSIONS}); write the repeated values out, or use fewer aliases of one anchor (an anchor that names other aliases counts each of them)`,
  };
}
