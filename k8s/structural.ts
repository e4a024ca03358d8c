/**
 * From a JSON Schema (as zod's `toJSONSchema` writes it, OpenAPI 3.0 flavour) to a **structural** OpenAPI v3
 * schema that a CustomResourceDefinition accepts, keeping as much validation as the rules allow.
 *
 * Where the rules come from: "Specifying a structural schema" in the Kubernetes CRD documentation
 * (k8s.io/apiextensions-apiserver/pkg/apiserver/schema/validation.go). A structural schema
 * 1. gives every node a `type`, except nodes with `x-kubernetes-int-or-string` or
 *    `x-kubernetes-preserve-unknown-fields: true`;
 * 2. declares every field and item that a logical junctor (`allOf`, `anyOf`, `oneOf`, `not`) mentions also
 *    outside of it;
 * 3. sets no `description`, `type`, `default`, `additionalProperties` or `nullable` inside a junctor;
 * 4. never has `additionalProperties` together with `properties`.
 *
 * What this conversion does with what JSON Schema can say and a structural schema cannot:
 * - `additionalProperties: false` is dropped: the API server prunes unknown fields, and clients that ask for
 *   strict field validation (kubectl's default) get "unknown field" errors naming the field.
 * - An object that allows other keys (`additionalProperties: {}` beside `properties`) keeps its properties and
 *   gets `x-kubernetes-preserve-unknown-fields: true`.
 * - A union of objects (`oneOf`/`anyOf`) becomes ONE object with the union of the branches' properties (a
 *   property in several branches gets the loosest schema of its versions: enums joined, bounds widened,
 *   differing patterns dropped, different types → any value). What the branches required becomes CEL rules
 *   (`x-kubernetes-validations`): for a union discriminated by a property with one enum value per branch
 *   (e.g. `kind`), "with kind X, field F is required" per required field and "with kind X, only these fields"
 *   per branch; for other object unions, "set one of: a | b".
 * - A union of different scalar types, or of scalars and objects, accepts any value
 *   (`x-kubernetes-preserve-unknown-fields: true`).
 * - `default`s inside unions are dropped: the API server would write a branch's default into every branch.
 * - `format` is dropped (the API server's formats are not zod's); `const` becomes a one-value `enum`.
 * What is loosened is still checked by whoever reads the objects (cronflock's loader); the point of the
 * structural schema is to refuse at admission, with the field named, what can be refused there.
 */

/** A JSON Schema node (the subset zod emits) or a structural schema node. */
export type SchemaNode = { [key: string]: unknown };

/** One CEL rule of a CRD schema node (`x-kubernetes-validations` entry). */
export interface CelRule {
  rule: string;
  message?: string;
  /** JSONPath-like path of the field the error is reported on, relative to the node, e.g. `.url`. */
  fieldPath?: string;
  /** `FieldValueRequired`, `FieldValueInvalid`, `FieldValueForbidden` or `FieldValueDuplicate`. */
  reason?: string;
}

/** Options of {@link toStructural}. */
export interface StructuralOptions {
  /** Keep `default` values (outside unions); default true. */
  keepDefaults?: boolean;
}

const SCALAR_KEYS = ['enum', 'minLength', 'maxLength', 'pattern', 'minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'multipleOf'];
const ARRAY_KEYS = ['minItems', 'maxItems', 'uniqueItems'];
const VALIDATIONS = 'x-kubernetes-validations';
const PRESERVE = 'x-kubernetes-preserve-unknown-fields';

/**
 * Converts `schema` (JSON Schema, no `$ref`) into a structural schema; see the module docs for what is kept,
 * what becomes CEL and what is loosened. Pure; the input is not modified. `x-kubernetes-validations` already on
 * an input node are kept. Throws `TypeError` on a `$ref` (inline the schema first).
 */
export function toStructural(schema: SchemaNode, options: StructuralOptions = {}): SchemaNode {
  return convert(schema, { keepDefaults: options.keepDefaults ?? true });
}

interface Ctx {
  keepDefaults: boolean;
}

function convert(s: SchemaNode, ctx: Ctx): SchemaNode {
  if (typeof s.$ref === 'string') throw new TypeError(`toStructural: $ref ${s.$ref} is not supported; inline the schema`);
  const union = (s.oneOf ?? s.anyOf) as SchemaNode[] | undefined;
  if (Array.isArray(union)) return withMeta(s, convertUnion(union, ctx), ctx);
  if (Array.isArray(s.allOf)) return withMeta(s, convertAllOf(s.allOf as SchemaNode[], ctx), ctx);
  const type = s.type as string | undefined;
  let out: SchemaNode;
  if (type === 'object' || (type === undefined && (s.properties !== undefined || s.additionalProperties !== undefined))) {
    out = convertObject(s, ctx);
  } else if (type === 'array') {
    out = { type: 'array', ...(s.items ? { items: convert(s.items as SchemaNode, ctx) } : { items: { [PRESERVE]: true } }) };
    for (const k of ARRAY_KEYS) if (s[k] !== undefined) out[k] = s[k];
  } else if (type === 'string' || type === 'integer' || type === 'number' || type === 'boolean') {
    out = { type };
    for (const k of SCALAR_KEYS) if (s[k] !== undefined) out[k] = s[k];
    if (s.const !== undefined) out.enum = [s.const];
    // OpenAPI 3.0 writes exclusive bounds as booleans beside minimum/maximum; JSON Schema as numbers.
    for (const [ex, bound] of [['exclusiveMinimum', 'minimum'], ['exclusiveMaximum', 'maximum']] as const) {
      if (typeof s[ex] === 'number') {
        out[bound] = s[ex];
        out[ex] = true;
      }
    }
  } else {
    out = { [PRESERVE]: true }; // {} or an unrepresentable type: any value
  }
  return withMeta(s, out, ctx);
}

/** description, default, nullable and CEL rules of the source node. */
function withMeta(src: SchemaNode, out: SchemaNode, ctx: Ctx): SchemaNode {
  const r: SchemaNode = {};
  if (typeof src.description === 'string') r.description = src.description;
  Object.assign(r, out);
  if (ctx.keepDefaults && src.default !== undefined && out[PRESERVE] === undefined) r.default = src.default;
  if (src.nullable === true) r.nullable = true;
  const rules = [...((out[VALIDATIONS] as CelRule[] | undefined) ?? []), ...((src[VALIDATIONS] as CelRule[] | undefined) ?? [])];
  if (rules.length > 0) r[VALIDATIONS] = rules;
  return r;
}

function convertObject(s: SchemaNode, ctx: Ctx): SchemaNode {
  const out: SchemaNode = { type: 'object' };
  const props = s.properties as Record<string, SchemaNode> | undefined;
  const extra = s.additionalProperties;
  if (props && Object.keys(props).length > 0) {
    out.properties = Object.fromEntries(Object.entries(props).map(([k, v]) => [k, convert(v, ctx)]));
    if (Array.isArray(s.required) && s.required.length > 0) out.required = [...(s.required as string[])];
    if (extra !== undefined && extra !== false) out[PRESERVE] = true; // a loose object: other keys are kept
  } else if (extra === undefined || extra === true || (typeof extra === 'object' && Object.keys(extra as object).length === 0)) {
    out[PRESERVE] = true; // a map of anything
  } else if (extra !== false) {
    out.additionalProperties = convert(extra as SchemaNode, ctx);
  }
  for (const k of ['minProperties', 'maxProperties']) if (s[k] !== undefined) out[k] = s[k];
  return out;
}

function convertAllOf(parts: SchemaNode[], ctx: Ctx): SchemaNode {
  // An intersection: every part's fields and requirements apply (zod emits allOf only for intersections).
  const converted = parts.map((p) => convert(p, ctx));
  if (!converted.every((c) => c.type === 'object')) return { [PRESERVE]: true };
  const merged = converted.reduce((a, b) => mergeLoose(a, b));
  const required = [...new Set(converted.flatMap((c) => (c.required as string[] | undefined) ?? []))];
  if (required.length > 0) merged.required = required;
  return merged;
}

function convertUnion(branches: SchemaNode[], ctx: Ctx): SchemaNode {
  const inner: Ctx = { ...ctx, keepDefaults: false };
  const nonNull = branches.filter((b) => b.type !== 'null');
  const nullable = nonNull.length < branches.length;
  const converted = nonNull.map((b) => convert(b, inner));
  if (converted.length === 0) return { [PRESERVE]: true };
  let out: SchemaNode;
  if (converted.length === 1) out = { ...converted[0]! };
  else if (converted.every((c) => c.type === 'object' && c[PRESERVE] === undefined && c.properties !== undefined)) {
    out = mergeObjectUnion(converted);
  } else out = converted.reduce((a, b) => mergeLoose(a, b));
  if (nullable) out.nullable = true;
  return out;
}

/** One object for a union of objects, with the branches' requirements as CEL rules (module docs). */
function mergeObjectUnion(branches: SchemaNode[]): SchemaNode {
  const merged = branches.reduce((a, b) => mergeLoose(a, b));
  delete merged.required;
  const required = branches.map((b) => (b.required as string[] | undefined) ?? []);
  const inAll = required.reduce((a, r) => a.filter((x) => r.includes(x)));
  if (inAll.length > 0) merged.required = inAll;
  const rules: CelRule[] = [];
  const disc = discriminator(branches);
  if (disc) {
    const all = Object.keys(merged.properties as object);
    for (const [i, b] of branches.entries()) {
      const value = JSON.stringify(onlyEnumValue((b.properties as Record<string, SchemaNode>)[disc]!));
      const when = `self.${celField(disc)} != ${value}`;
      for (const f of required[i]!) {
        if (inAll.includes(f)) continue;
        rules.push({ rule: `${when} || has(self.${celField(f)})`, message: `is required with ${disc}: ${JSON.parse(value)}`, fieldPath: fieldPath(f), reason: 'FieldValueRequired' });
      }
      const own = Object.keys(b.properties as object);
      const foreign = all.filter((f) => !own.includes(f));
      if (foreign.length > 0) {
        rules.push({
          rule: `${when} || !(${foreign.map((f) => `has(self.${celField(f)})`).join(' || ')})`,
          message: `${disc}: ${JSON.parse(value)} takes only the fields ${own.join(', ')}`,
          reason: 'FieldValueForbidden',
        });
      }
    }
  } else if (required.every((r) => r.length > 0)) {
    const options = required.map((r) => r.map((f) => `has(self.${celField(f)})`).join(' && '));
    rules.push({ rule: options.map((o) => (required.length > 1 ? `(${o})` : o)).join(' || '), message: `must set one of: ${required.map((r) => r.join(' and ')).join(' | ')}` });
  }
  if (rules.length > 0) merged[VALIDATIONS] = [...((merged[VALIDATIONS] as CelRule[] | undefined) ?? []), ...rules];
  return merged;
}

/** The property that is required in every branch and has one distinct enum value per branch, if any. */
function discriminator(branches: SchemaNode[]): string | undefined {
  const first = branches[0]!;
  for (const name of Object.keys((first.properties as object) ?? {})) {
    const values = branches.map((b) => {
      const p = (b.properties as Record<string, SchemaNode> | undefined)?.[name];
      const req = ((b.required as string[] | undefined) ?? []).includes(name);
      return p && req ? onlyEnumValue(p) : undefined;
    });
    if (values.every((v) => v !== undefined) && new Set(values.map((v) => JSON.stringify(v))).size === values.length) return name;
  }
  return undefined;
}

function onlyEnumValue(p: SchemaNode): unknown {
  return Array.isArray(p.enum) && p.enum.length === 1 ? p.enum[0] : undefined;
}

/**
 * The loosest schema accepting what `a` or `b` accepts (for a property several union branches declare).
 * Same scalar type: enums joined (dropped if one side has none), bounds widened, differing patterns and
 * lengths dropped. Objects: properties merged recursively, only common requirements kept. Arrays: items
 * merged. Different types: any value.
 */
function mergeLoose(a: SchemaNode, b: SchemaNode): SchemaNode {
  if (JSON.stringify(a) === JSON.stringify(b)) return { ...a };
  if (a[PRESERVE] === true && a.type === undefined) return { ...a };
  if (b[PRESERVE] === true && b.type === undefined) return { ...b };
  if (a.type !== b.type) return { [PRESERVE]: true };
  const out: SchemaNode = { type: a.type };
  if (a.description === b.description && a.description !== undefined) out.description = a.description;
  if (a.nullable === true || b.nullable === true) out.nullable = true;
  const same = (k: string): boolean => JSON.stringify(a[k]) === JSON.stringify(b[k]);
  if (a.type === 'object') {
    const pa = (a.properties as Record<string, SchemaNode> | undefined) ?? {};
    const pb = (b.properties as Record<string, SchemaNode> | undefined) ?? {};
    const names = [...new Set([...Object.keys(pa), ...Object.keys(pb)])];
    if (names.length > 0) out.properties = Object.fromEntries(names.map((n) => [n, pa[n] && pb[n] ? mergeLoose(pa[n], pb[n]) : (pa[n] ?? pb[n])!]));
    const ra = (a.required as string[] | undefined) ?? [];
    const rb = (b.required as string[] | undefined) ?? [];
    const req = ra.filter((r) => rb.includes(r));
    if (req.length > 0) out.required = req;
    if (a[PRESERVE] === true || b[PRESERVE] === true) out[PRESERVE] = true;
    if (a.additionalProperties !== undefined && b.additionalProperties !== undefined) {
      out.additionalProperties = mergeLoose(a.additionalProperties as SchemaNode, b.additionalProperties as SchemaNode);
    } else if (a.additionalProperties !== undefined || b.additionalProperties !== undefined) {
      if (names.length === 0) out.additionalProperties = (a.additionalProperties ?? b.additionalProperties) as SchemaNode;
      else out[PRESERVE] = true;
    }
    if (same(VALIDATIONS) && a[VALIDATIONS] !== undefined) out[VALIDATIONS] = a[VALIDATIONS];
    return out;
  }
  if (a.type === 'array') {
    out.items = mergeLoose(a.items as SchemaNode, b.items as SchemaNode);
    if (typeof a.minItems === 'number' && typeof b.minItems === 'number') out.minItems = Math.min(a.minItems, b.minItems);
    if (typeof a.maxItems === 'number' && typeof b.maxItems === 'number') out.maxItems = Math.max(a.maxItems, b.maxItems);
    return out;
  }
  if (Array.isArray(a.enum) && Array.isArray(b.enum)) out.enum = [...new Set([...a.enum, ...b.enum])];
  for (const k of ['pattern', 'minLength', 'maxLength', 'exclusiveMinimum', 'exclusiveMaximum', VALIDATIONS]) if (same(k) && a[k] !== undefined) out[k] = a[k];
  if (typeof a.minimum === 'number' && typeof b.minimum === 'number') out.minimum = Math.min(a.minimum, b.minimum);
  if (typeof a.maximum === 'number' && typeof b.maximum === 'number') out.maximum = Math.max(a.maximum, b.maximum);
  return out;
}

/**
 * The rules a CRD schema must follow ("Specifying a structural schema"), checked on a converted schema:
 * every node typed (or int-or-string / preserve-unknown-fields), no logical junctors (this converter emits none),
 * no additionalProperties beside properties. Returns the paths that break a rule.
 */
export function structuralViolations(node: SchemaNode, path = '$'): string[] {
  const out: string[] = [];
  if (node.type === undefined && node['x-kubernetes-preserve-unknown-fields'] !== true && node['x-kubernetes-int-or-string'] !== true) out.push(`${path}: no type`);
  for (const j of ['oneOf', 'anyOf', 'allOf', 'not']) if (node[j] !== undefined) out.push(`${path}: ${j}`);
  if (node.properties !== undefined && node.additionalProperties !== undefined) out.push(`${path}: properties and additionalProperties`);
  for (const [k, v] of Object.entries((node.properties as Record<string, SchemaNode> | undefined) ?? {})) out.push(...structuralViolations(v, `${path}.${k}`));
  if (node.items) out.push(...structuralViolations(node.items as SchemaNode, `${path}[]`));
  if (node.additionalProperties && typeof node.additionalProperties === 'object') out.push(...structuralViolations(node.additionalProperties as SchemaNode, `${path}{}`));
  return out;
}

/** CEL's reserved words, which Kubernetes escapes as `__word__` in field access. */
const CEL_RESERVED = new Set([
  'true', 'false', 'null', 'in', 'as', 'break', 'const', 'continue', 'else', 'for', 'function', 'if', 'import', 'let', 'loop',
  'package', 'namespace', 'return', 'var', 'void', 'while',
]);

/**
 * A property name as Kubernetes CEL spells it in field access (`self.<name>`): reserved words become
 * `__word__`; `__`, `.`, `-`, `/` become `__underscores__`, `__dot__`, `__dash__`, `__slash__`
 * (k8s.io/apiserver/pkg/cel/escaping.go).
 */
export function celField(name: string): string {
  if (CEL_RESERVED.has(name)) return `__${name}__`;
  return name.replace(/__|[./-]/g, (m) => ({ __: '__underscores__', '.': '__dot__', '-': '__dash__', '/': '__slash__' })[m]!);
}

/** A `fieldPath` for a property: `.name`, or `['na-me']` when the name is not a plain identifier. */
export function fieldPath(name: string): string {
  return /^[A-Za-z_][A-Za-z0-9_]*$/.test(name) ? `.${name}` : `['${name}']`;
}
