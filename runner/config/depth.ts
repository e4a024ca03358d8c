/**
 * The one nesting limit of a schedule definition, for every door (schedule files after YAML, stored definitions,
 * the HTTP API, the library, `cronflock apply -f`): checked by the loader's object step (runner/config/load.ts) and
 * by the stored-definition check (runner/store/definition.ts) before anything recursive (the YAML document's
 * `toJS`, zod, canonicalJson, redaction) touches the value, by an iterative walk that cannot itself run out of stack.
 */
import { isMap, isScalar, isSeq } from 'yaml';
import type { Path } from './yaml-position.js';

/**
 * Most levels of maps and lists a schedule definition may nest, counted from the definition itself (level 1: the
 * entry of `schedules:`, or the body of `PUT /schedules/{name}`; `job` is level 2, `job.params` level 3, …).
 * Why 32: the deepest real definitions are Kubernetes Job templates, whose deepest fields
 * (`job.template.spec.template.spec.affinity.nodeAffinity.….matchExpressions[0].values`) are 14 levels down, and
 * a handler's `params` is a few levels of data; 32 leaves more than twice that. Past a few thousand levels the
 * recursive code every definition goes through (the YAML parser, zod, JSON.stringify, the API's redaction) runs
 * out of stack ("Maximum call stack size exceeded"), and such a definition, once stored, broke `cronflock list`
 * for everyone; a fixed limit far below that refuses it at the door with a clear problem instead.
 */
export const MAX_DEFINITION_DEPTH = 32;

/**
 * Levels of a schedule file's data allowed by {@link MAX_DEFINITION_DEPTH}: the file's map and its `schedules:` list
 * are the two levels above each definition (the same bound holds for the file's other blocks).
 */
export const FILE_DEPTH = MAX_DEFINITION_DEPTH + 2;

/** The reason of the refusal of a value nested past {@link MAX_DEFINITION_DEPTH}. */
export const TOO_DEEP_REASON = `nesting deeper than ${MAX_DEFINITION_DEPTH} levels of maps and lists (counted from the schedule definition) starts here`;

/** The hint of that refusal. */
export const TOO_DEEP_HINT = `flatten it (at most ${MAX_DEFINITION_DEPTH} levels), or pass deep data as a JSON string (e.g. job.params.data: "[[1]]") and parse it in the job`;

/** The words of a stack overflow (V8's RangeError message), to tell it from other errors. */
const STACK_OVERFLOW = /maximum call stack size exceeded/i;

/** Whether `err` is a stack overflow (V8's `RangeError: Maximum call stack size exceeded`). */
export function isStackOverflow(err: unknown): boolean {
  return err instanceof RangeError && STACK_OVERFLOW.test(err.message);
}

/** The reason given when a parser ran out of stack on input nested too deep to read (what is wrong, how to fix it). */
export const PARSER_TOO_DEEP_REASON = `nested too deep to read (the parser ran out of stack: Maximum call stack size exceeded); a schedule definition may nest at most ${MAX_DEFINITION_DEPTH} levels of maps and lists`;

/** One child of a node: its key (map key or list index) and the child. */
export type Children<N> = (node: N) => Iterable<readonly [string | number, N]> | undefined;

/** The children of plain data (maps and lists); `undefined` for anything else. */
export const plainChildren: Children<unknown> = (node) => {
  if (node === null || typeof node !== 'object') return undefined;
  if (Array.isArray(node)) return node.entries();
  return Object.entries(node);
};

/**
 * The first container (in document order) nested deeper than `maxLevels` below `root` (`root` itself, when it is a
 * container, is level 1), as its path and node; `undefined` when there is none. Iterative (an explicit stack of
 * at most `maxLevels + 1` iterators), so any depth is safe. A node that is one of its own ancestors (a cycle in
 * plain data) is not followed: the caller's own walk reports it.
 * @param children the containers' children; `undefined` for a leaf.
 */
export function firstTooDeep<N>(root: N, maxLevels: number, children: Children<N>): { path: Path; node: N } | undefined {
  const first = children(root);
  if (first === undefined) return undefined;
  if (maxLevels < 1) return { path: [], node: root };
  const stack: Iterator<readonly [string | number, N]>[] = [first[Symbol.iterator]()];
  const ancestors: N[] = [root];
  const path: Path = [];
  while (stack.length > 0) {
    const next = stack[stack.length - 1]!.next();
    if (next.done) {
      stack.pop();
      ancestors.pop();
      path.pop();
      continue;
    }
    const [key, child] = next.value;
    const kids = children(child);
    if (kids === undefined || ancestors.includes(child)) continue;
    path.push(key);
    if (stack.length + 1 > maxLevels) return { path: [...path], node: child };
    stack.push(kids[Symbol.iterator]());
    ancestors.push(child);
  }
  return undefined;
}

/** The first container of plain data nested deeper than `maxLevels` (see {@link firstTooDeep}). */
export function tooDeepPath(data: unknown, maxLevels: number): Path | undefined {
  return firstTooDeep(data, maxLevels, plainChildren)?.path;
}

/** The children of a YAML node (maps by their scalar keys, lists by index); aliases are not followed. */
export const yamlChildren: Children<unknown> = (node) => {
  if (isMap(node)) return node.items.map((pair, i) => [isScalar(pair.key) ? String(pair.key.value) : i, pair.value] as const);
  if (isSeq(node)) return node.items.entries();
  return undefined;
};
