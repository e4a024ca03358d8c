import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { JSON_SCHEMA_PATH, scheduleFileJsonSchema, scheduleFileJsonSchemaText } from './json-schema.js';

const root = fileURLToPath(new URL('../../', import.meta.url));

type Schema = {
  type?: string;
  properties?: Record<string, Schema>;
  required?: string[];
  additionalProperties?: boolean | Schema;
  items?: Schema;
  oneOf?: Schema[];
  anyOf?: Schema[];
  enum?: unknown[];
  const?: unknown;
  pattern?: string;
  description?: string;
};

/**
 * A deliberately small JSON Schema check (types, required, additionalProperties, enum/const, pattern,
 * oneOf/anyOf): enough to show that a document matches the generated schema's structure. Returns the
 * problems found, as `path: message`.
 */
function check(schema: Schema, value: unknown, path = '$'): string[] {
  if (schema.oneOf || schema.anyOf) {
    const options = (schema.oneOf ?? schema.anyOf)!;
    const matching = options.filter((o) => check(o, value, path).length === 0).length;
    if (schema.oneOf ? matching !== 1 : matching === 0) return [`${path}: matches ${matching} of ${options.length} options`];
  }
  if (schema.const !== undefined && value !== schema.const) return [`${path}: is not ${JSON.stringify(schema.const)}`];
  if (schema.enum && !schema.enum.includes(value)) return [`${path}: not one of ${schema.enum.join(', ')}`];
  switch (schema.type) {
    case 'object': {
      if (typeof value !== 'object' || value === null || Array.isArray(value)) return [`${path}: not an object`];
      const obj = value as Record<string, unknown>;
      const out = (schema.required ?? []).filter((k) => !(k in obj)).map((k) => `${path}.${k}: required`);
      for (const [k, v] of Object.entries(obj)) {
        const sub = schema.properties?.[k] ?? (typeof schema.additionalProperties === 'object' ? schema.additionalProperties : undefined);
        if (sub) out.push(...check(sub, v, `${path}.${k}`));
        else if (schema.additionalProperties === false) out.push(`${path}.${k}: not allowed`);
      }
      return out;
    }
    case 'array':
      if (!Array.isArray(value)) return [`${path}: not an array`];
      return value.flatMap((v, i) => (schema.items ? check(schema.items, v, `${path}[${i}]`) : []));
    case 'string':
      if (typeof value !== 'string') return [`${path}: not a string`];
      return schema.pattern && !new RegExp(schema.pattern, 'u').test(value) ? [`${path}: does not match ${schema.pattern}`] : [];
    case 'boolean':
      return typeof value === 'boolean' ? [] : [`${path}: not a boolean`];
    case 'integer':
      return Number.isInteger(value) ? [] : [`${path}: not an integer`];
    default:
      return [];
  }
}

describe('schema/schedules.schema.json', () => {
  it('is up to date with the zod schema (regenerate: npx tsx runner/config/write-json-schema.ts)', () => {
    const committed = readFileSync(`${root}${JSON_SCHEMA_PATH}`, 'utf8');
    expect(committed).toBe(scheduleFileJsonSchemaText());
  });

  it('has a dialect, a title and descriptions for editors', () => {
    const s = scheduleFileJsonSchema() as Schema & { $schema?: string; title?: string };
    expect(s.$schema).toMatch(/json-schema\.org/);
    expect(s.title).toBe('cronflock schedule file');
    expect(s.description).toBeTruthy();
    const schedule = s.properties!.schedules!.items!;
    for (const key of ['name', 'cron', 'timeZone', 'jitter', 'startingDeadline', 'suspend', 'catchUp', 'maxCatchUpRuns']) {
      expect(schedule.properties![key]!.description, key).toBeTruthy();
    }
    expect(s.required).toBeUndefined(); // a file holds schedules, calendars or both (the loader refuses neither)
    expect(schedule.required).toEqual(['name', 'cron', 'job']);
    expect(schedule.additionalProperties).toBe(false);
  });

  it('accepts the example schedule file, durations as strings', () => {
    const example = parse(readFileSync(`${root}test/fixtures/config/example.yaml`, 'utf8')) as unknown;
    expect(check(scheduleFileJsonSchema() as Schema, example)).toEqual([]);
  });

  it('refuses unknown keys, a missing url and an unknown job kind', () => {
    const s = scheduleFileJsonSchema() as Schema;
    const job = { kind: 'http', url: 'https://example.com/' };
    expect(check(s, { schedules: [{ name: 'a', cron: '@daily', job, timezone: 'UTC' }] })).toEqual([
      '$.schedules[0].timezone: not allowed',
    ]);
    expect(check(s, { schedules: [{ name: 'a', cron: '@daily', job: { kind: 'http' } }] })).toHaveLength(1);
    expect(check(s, { schedules: [{ name: 'a', cron: '@daily', job: { kind: 'ftp', url: 'x' } }] })).toHaveLength(1);
    expect(check(s, { schedules: [{ name: 'Bad_Name', cron: '@daily', job }] })).toEqual([
      expect.stringContaining('$.schedules[0].name: does not match'),
    ]);
  });
});
