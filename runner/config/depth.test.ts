/**
 * The one nesting limit of a schedule definition (runner/config/depth.ts) at the doors that do not need Redis: the
 * schedule-file loader (YAML text → file:line:col at the node where the limit is passed; a document too deep for the
 * yaml parser itself says so in words), the object step on plain data (checkScheduleData), the stored-definition
 * check (checkDefinition, which the library, the API and `apply` use; a definition 20,000 deep is a refusal, not a
 * RangeError), the API body scan (jsonTooDeep: strings and escapes skipped, line:col) and the answers' redaction.
 */
import { describe, expect, it } from 'vitest';
import { redactDefinition } from '../../jobs/summary.js';
import { jsonTooDeep, MAX_BODY_DEPTH } from '../api/json-body.js';
import { checkDefinition, ScheduleDefinitionError } from '../store/definition.js';
import { firstTooDeep, MAX_DEFINITION_DEPTH, plainChildren, tooDeepPath } from './depth.js';
import { checkScheduleData, parseScheduleText } from './load.js';

/** `n` lists, one inside the other, around 1. */
const nested = (n: number): unknown => {
  let v: unknown = 1;
  for (let i = 0; i < n; i++) v = [v];
  return v;
};
/** A definition whose deepest container is at `level` (the definition is level 1; job.params.a's list is level 4). */
const defAt = (level: number) => ({ name: 'd', cron: '0 3 * * *', job: { kind: 'handler', handler: 'h', params: { a: nested(level - 3) } } });
/** The field of the container at level MAX+1 of {@link defAt}. */
const deepField = `job.params.a${'[0]'.repeat(MAX_DEFINITION_DEPTH - 3)}`;
/** A schedule file whose job.params.a is `n` flow lists deep (the list opens at line 8, col 12). */
const fileWith = (n: number) => `schedules:\n  - name: d\n    cron: "0 3 * * *"\n    job:\n      kind: handler\n      handler: h\n      params:\n        a: ${'['.repeat(n)}1${']'.repeat(n)}\n`;

describe('the nesting limit', () => {
  it('firstTooDeep: iterative at any depth, first in document order, the root as level 1, cycles not followed', () => {
    expect(tooDeepPath(nested(100_000), 3)).toEqual([0, 0, 0]);
    expect(tooDeepPath({ a: [1], b: { c: { d: {} } } }, 3)).toEqual(['b', 'c', 'd']);
    expect(tooDeepPath({ a: [1], b: { c: { d: 1 } } }, 3)).toBeUndefined();
    const cyc: Record<string, unknown> = {};
    cyc.self = cyc;
    expect(firstTooDeep(cyc, 3, plainChildren)).toBeUndefined();
  });

  it('the loader: a file nested one past the limit is refused at the node, with field, reason and hint; exactly the limit loads', async () => {
    // file map, schedules list, then the definition (level 1) … job.params.a's outermost list is level 4
    const ok = await parseScheduleText(fileWith(MAX_DEFINITION_DEPTH - 3), 'd.yaml', { baseDir: '/tmp' });
    expect(ok.errors).toEqual([]);
    expect(ok.schedules).toHaveLength(1);
    const r = await parseScheduleText(fileWith(MAX_DEFINITION_DEPTH - 2), 'd.yaml', { baseDir: '/tmp' });
    expect(r.schedules).toEqual([]);
    expect(r.errors).toHaveLength(1);
    const e = r.errors[0]!;
    expect(e).toMatchObject({ code: 'SCHEMA_INVALID', file: 'd.yaml', line: 8, col: 12 + MAX_DEFINITION_DEPTH - 3, field: `schedules[0].${deepField}` });
    expect(e.reason).toContain(`deeper than ${MAX_DEFINITION_DEPTH} levels`);
    expect(e.hint).toMatch(/flatten it.*JSON string/);
  });

  it('the loader: block maps past the limit too, at the line of the node', async () => {
    let yaml = 'schedules:\n  - name: d\n    cron: "0 3 * * *"\n    job:\n      kind: handler\n      handler: h\n      params:\n';
    let indent = '        ';
    for (let i = 0; i < MAX_DEFINITION_DEPTH; i++) {
      yaml += `${indent}k${i}:\n`;
      indent += '  ';
    }
    yaml += `${indent}v: 1\n`;
    const r = await parseScheduleText(yaml, 'b.yaml', { baseDir: '/tmp' });
    expect(r.errors).toHaveLength(1);
    // params (the map holding k0) is level 3, k0's map level 4 …; the map under k29 is level 33, at the line of k30
    expect(r.errors[0]).toMatchObject({ line: 8 + MAX_DEFINITION_DEPTH - 2, field: `schedules[0].job.params.${Array.from({ length: MAX_DEFINITION_DEPTH - 2 }, (_, i) => `k${i}`).join('.')}` });
  });

  it('the loader: a document too deep for the yaml parser says what is wrong and how to fix it, at file:line:col', async () => {
    for (const n of [1500, 20_000]) {
      const r = await parseScheduleText(fileWith(n), 'j4.yaml', { baseDir: '/tmp' });
      expect(r.errors.length).toBeGreaterThan(0);
      const e = r.errors[0]!;
      expect(e.line).toBe(8);
      expect(e.reason).toContain('nested too deep');
      expect(e.reason).toContain(`at most ${MAX_DEFINITION_DEPTH} levels`);
      expect(e.hint).toMatch(/flatten it/);
    }
  });

  it('the object step on plain data refuses before its recursive walks (20,000 deep)', async () => {
    const r = await checkScheduleData({ schedules: [defAt(20_000)] }, 'schedule d', { baseDir: '/tmp' });
    expect(r.errors).toHaveLength(1);
    expect(r.errors[0]).toMatchObject({ code: 'SCHEMA_INVALID', field: `schedules[0].${deepField}` });
  });

  it('checkDefinition (library, API, apply): past the limit a typed refusal naming the field, at any depth; exactly the limit passes', async () => {
    for (const level of [MAX_DEFINITION_DEPTH + 1, 2000, 20_000]) {
      const r = await checkDefinition(defAt(level), { writing: true });
      expect(r.ok).toBe(false);
      const e = !r.ok ? r.error : undefined;
      expect(e).toBeInstanceOf(ScheduleDefinitionError);
      expect(e!.problems).toEqual([expect.objectContaining({ code: 'SCHEMA_INVALID', field: deepField, reason: expect.stringContaining(`deeper than ${MAX_DEFINITION_DEPTH} levels`) })]);
    }
    let objects: unknown = 1;
    for (let i = 0; i < 5000; i++) objects = { o: objects };
    const o = await checkDefinition({ name: 'd', cron: '0 3 * * *', job: { kind: 'handler', handler: 'h', params: objects } });
    expect(o.ok).toBe(false);
    expect((await checkDefinition(defAt(MAX_DEFINITION_DEPTH))).ok).toBe(true);
  });

  it('jsonTooDeep: one pass, strings and escapes skipped, line:col of the opening past the bound', () => {
    expect(jsonTooDeep('[[1]]', 2)).toBeUndefined();
    expect(jsonTooDeep('[[[1]]]', 2)).toEqual({ line: 1, col: 3 });
    expect(jsonTooDeep('{"a":"[[[[\\"[[{{","b":\n  {"c": [1]}}', 2)).toEqual({ line: 2, col: 9 });
    expect(jsonTooDeep('{"a":"\\\\", "b": [[1]]}', 2)).toEqual({ line: 1, col: 18 });
    expect(jsonTooDeep('[]'.repeat(10) + '[[[]]]', 2)).toEqual({ line: 1, col: 23 });
    expect(jsonTooDeep('['.repeat(100_000) + ']'.repeat(100_000))).toEqual({ line: 1, col: MAX_BODY_DEPTH + 1 });
  });

  it('redaction of a definition stored before the limit: no stack overflow, "…" past the limit', () => {
    const shown = redactDefinition(defAt(20_000)) as { job: { params: { a: unknown } } };
    let v: unknown = shown.job.params.a;
    let levels = 3;
    while (Array.isArray(v)) {
      v = v[0];
      levels++;
    }
    expect(levels).toBe(MAX_DEFINITION_DEPTH);
    expect(v).toBe('…');
  });
});
