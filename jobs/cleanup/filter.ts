/**
 * `filter`: a CEL expression over each selected object (`object`, and `now` as a timestamp), with
 * @marcbachmann/cel-js. CEL has no loops or recursion, so evaluation cost grows only with the expression and
 * the object; the expression is bounded at parse time (length, AST nodes, nesting depth), and an evaluation
 * slower than {@link FILTER_TIME_LIMIT_MS} twice in a row marks the object `errored` (it is timed, not
 * interrupted: cel-js evaluates synchronously). Twice, because wall time also counts what is not the
 * expression's cost — a garbage collection or the process being descheduled on a busy host — and such a pause
 * does not repeat at the same place, while an expression that is slow on an object is slow again. An expression that fails on one object (a missing field, a wrong type) marks that
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
  const timed = (object: unknown, nowMs: number): { v: unknown; tookMs: number } | { error: string } => {
    const t0 = performance.now();
    try {
      const v: unknown = fn({ object, now: new Date(nowMs) });
      return { v, tookMs: performance.now() - t0 };
    } catch (e) {
      return { error: `filter: ${(e instanceof Error ? e.message : String(e)).split('\n')[0]}` };
    }
  };
  return (object, nowMs) => {
    let r = timed(object, nowMs);
    if ('tookMs' in r && r.tookMs > FILTER_TIME_LIMIT_MS) {
      const first = r.tookMs;
      r = timed(object, nowMs); // a pause (GC, a busy host) does not repeat; a slow expression does
      if ('tookMs' in r && r.tookMs > FILTER_TIME_LIMIT_MS) {
        return `filter: took ${Math.round(first)} and ${Math.round(r.tookMs)} ms, more than ${FILTER_TIME_LIMIT_MS} ms`;
      }
    }
    if ('error' in r) return r.error;
    if (typeof r.v !== 'boolean') return `filter: returned ${typeof r.v}, not a bool`;
    return r.v;
  };
}
