/**
 * What JSON cannot carry, found in a definition's data: shared by the schedule-file loader (runner/config/load.ts:
 * a file's value such as `1e400` or a `!!set`) and the store (runner/store/definition.ts: a library or API
 * definition). Its own module, without the loader's imports, so that both can use it (the store imports the
 * loader; the loader must not import the store back: in a loader process the cycle left a constant of load.ts
 * uninitialised).
 */
import { fieldPath, type ConfigErrorCode } from './errors.js';

/** One problem of a definition: the schedule-file loader's code, reason and hint, and the field it is about. */
export interface DefinitionProblem {
  code: ConfigErrorCode | 'NOT_AN_OBJECT' | 'NOT_JSON' | 'TOO_LARGE';
  /** Dotted field path inside the definition, e.g. `job.url`; empty when it concerns the whole definition. */
  field: string;
  reason: string;
  hint?: string;
}

/**
 * The values of `v` that JSON cannot carry, each with its path inside the definition (`job.params.customer.when`):
 * functions, symbols, BigInt, NaN and ±Infinity, objects that are not plain objects or arrays (Date, Map, Set,
 * class instances: JSON.stringify would turn them into text, `{}` or drop them), and `undefined` inside
 * `job.params` or in a list (JSON.stringify drops or nulls them, so the handler would get something else than
 * was stored). Elsewhere a key whose value is `undefined` counts as absent, as TypeScript's optional fields do.
 */
export function nonJsonValues(v: unknown): DefinitionProblem[] {
  return walkDefinition(v).nonJson;
}

/**
 * One walk over a definition for what the schema cannot see: {@link nonJsonValues} and the paths of own
 * `__proto__` keys (outside the value of another `__proto__` key). Field paths are built only for what it finds:
 * on a clean definition (every one a replica reads back) it allocates next to nothing.
 */
export function walkDefinition(def: unknown): { nonJson: DefinitionProblem[]; protoKeys: string[] } {
  const nonJson: DefinitionProblem[] = [];
  const protoKeys: string[] = [];
  const path: (string | number)[] = [];
  const seen = new Set<object>();
  const problem = (what: string, hint: string): void => {
    nonJson.push({ code: 'NOT_JSON', field: fieldPath(path), reason: `${what}, which JSON cannot store`, hint });
  };
  const visit = (v: unknown, inParams: boolean, underProto: boolean): void => {
    switch (typeof v) {
      case 'function':
        return problem('is a function', 'a definition is data: pass the value the function would compute, or name a handler (kind: handler) that computes it');
      case 'symbol':
        return problem('is a symbol', 'use a string instead');
      case 'bigint':
        return problem(`is a BigInt (${v}n)`, `pass it as a string ("${v}") or, when it is at most ${Number.MAX_SAFE_INTEGER}, as a number`);
      case 'number':
        if (!Number.isFinite(v)) problem(`is ${v}`, 'use a finite number, or null');
        return;
      case 'undefined':
        // Only reached for a list's element or a key inside job.params (other keys are skipped as absent).
        if (inParams) {
          // null is offered only where it is stored as given: inside job.params (a handler's data).
          const params = (path[0] === 'job' && path[1] === 'params') || path[0] === 'job.params';
          const element = typeof path[path.length - 1] === 'number';
          problem('is undefined', element ? `remove the element from the list${params ? ', or put null in its place' : ''}` : `leave the key out${params ? ', or give it a value (null is one)' : ''}`);
        }
        return;
      case 'object':
        break;
      default:
        return;
    }
    if (v === null) return;
    if (seen.has(v)) return problem('refers back to itself (a cycle)', 'pass a copy without the cycle');
    const proto = Object.getPrototypeOf(v) as unknown;
    if (!Array.isArray(v) && proto !== Object.prototype && proto !== null) {
      if (v instanceof Date) return problem('is a Date', `pass it as text: ${Number.isNaN(v.getTime()) ? 'an ISO 8601 time' : `"${v.toISOString()}"`} (date.toISOString())`);
      const kind = (v as { constructor?: { name?: string } }).constructor?.name || 'object';
      return problem(`is a ${kind}, not a plain object or list`, v instanceof Map || v instanceof Set ? `pass a plain object or list (Object.fromEntries(map), [...set])` : 'pass a plain object with its fields');
    }
    seen.add(v);
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) {
        path.push(i);
        visit(v[i], true, underProto);
        path.pop();
      }
    } else {
      const map = v as Record<string, unknown>;
      for (const k of Object.keys(map)) {
        path.push(k);
        const isProto = k === '__proto__';
        if (isProto && !underProto) protoKeys.push(fieldPath(path));
        // `job.params` as the dotted path the field has (a top-level key "job.params" counts too, as it always did).
        const params = inParams || (path.length === 2 && path[0] === 'job' && k === 'params') || (path.length === 1 && k === 'job.params');
        // A key whose value is undefined counts as absent (job.params: undefined too), unless it is INSIDE
        // job.params, where the handler would get the object without it: refused there.
        if (map[k] === undefined && !inParams) {
          path.pop();
          continue;
        }
        visit(map[k], params, underProto || isProto);
        path.pop();
      }
    }
    seen.delete(v);
  };
  visit(def, false, false);
  return { nonJson, protoKeys };
}
