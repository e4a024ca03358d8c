/**
 * `filter`: a CEL expression over each selected object (`object`, and `now` as a timestamp), with
 * @marcbachmann/cel-js. CEL has no loops or recursion, so evaluation cost grows only with the expression and
 * the object; the expression is bounded at parse time (length, AST nodes, nesting depth), and an evaluation
 * slower than {@link FILTER_TIME_LIMIT_MS} marks the object `errored` (it is timed, not interrupted: cel-js
 * evaluates synchronously). An expression that fails on one object (a missing field, a wrong type) marks that
 * object `errored`; the run goes on.
 */
import { Environment } from '@marcbachmann/cel-js';

/** Longest filter expression, in characters. */
export const FILTER_MAX_LENGTH = 2000;
/** Longest single evaluation before the object is marked errored, in ms. */
export const FILTER_TIME_LIMIT_MS = 50;

const env = new Environment({ unlistedVariablesAreDyn: true, limits: { maxAstNodes: 1000, maxDepth: 32 } });

/** A parsed filter: returns true (keep), false (not selected), or an error text. */
export type CompiledFilter = (object: unknown, nowMs: number) => boolean | string;

/** Parses `expression`; throws with the parser's message when it is not valid CEL or too large. */
export function compileFilter(expression: string): CompiledFilter {
  if (expression.length > FILTER_MAX_LENGTH) throw new Error(`is longer than ${FILTER_MAX_LENGTH} characters`);
  const fn = env.parse(expression);
  return (object, nowMs) => {
    const t0 = performance.now();
    let v: unknown;
    try {
      v = fn({ object, now: new Date(nowMs) });
    } catch (e) {
      return `filter: ${(e instanceof Error ? e.message : String(e)).split('\n')[0]}`;
    }
    const took = performance.now() - t0;
    if (took > FILTER_TIME_LIMIT_MS) return `filter: took ${Math.round(took)} ms, more than ${FILTER_TIME_LIMIT_MS} ms`;
    if (typeof v !== 'boolean') return `filter: returned ${typeof v}, not a bool`;
    return v;
  };
}
