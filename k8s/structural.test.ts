import { describe, expect, it } from 'vitest';
import { celField, fieldPath, structuralViolations, toStructural, type SchemaNode } from './structural.js';

describe('toStructural', () => {
  it('drops additionalProperties: false and keeps properties, required, bounds and descriptions', () => {
    const s = toStructural({
      type: 'object',
      description: 'd',
      properties: { a: { type: 'string', minLength: 1, pattern: '^x' }, n: { type: 'integer', minimum: 0, maximum: 9, default: 3 } },
      required: ['a'],
      additionalProperties: false,
    });
    expect(s).toEqual({
      description: 'd',
      type: 'object',
      properties: { a: { type: 'string', minLength: 1, pattern: '^x' }, n: { type: 'integer', minimum: 0, maximum: 9, default: 3 } },
      required: ['a'],
    });
    expect(structuralViolations(s)).toEqual([]);
  });

  it('marks objects that allow other keys, maps of anything and values of any type as preserve-unknown-fields', () => {
    const s = toStructural({
      type: 'object',
      properties: {
        loose: { type: 'object', properties: { a: { type: 'string' } }, additionalProperties: {} },
        map: { type: 'object', additionalProperties: {} },
        strings: { type: 'object', additionalProperties: { type: 'string' } },
        any: {},
      },
    });
    const p = s.properties as Record<string, SchemaNode>;
    expect(p.loose).toEqual({ type: 'object', properties: { a: { type: 'string' } }, 'x-kubernetes-preserve-unknown-fields': true });
    expect(p.map).toEqual({ type: 'object', 'x-kubernetes-preserve-unknown-fields': true });
    expect(p.strings).toEqual({ type: 'object', additionalProperties: { type: 'string' } });
    expect(p.any).toEqual({ 'x-kubernetes-preserve-unknown-fields': true });
    expect(structuralViolations(s)).toEqual([]);
  });

  it('merges a discriminated union into one object with CEL rules per branch, dropping defaults inside it', () => {
    const s = toStructural({
      oneOf: [
        {
          type: 'object',
          properties: { kind: { type: 'string', enum: ['http'] }, url: { type: 'string' }, method: { type: 'string', enum: ['GET', 'POST'], default: 'POST' } },
          required: ['kind', 'url'],
          additionalProperties: false,
        },
        {
          type: 'object',
          properties: { kind: { type: 'string', const: 'module' }, path: { type: 'string' }, method: { type: 'string', enum: ['run'] } },
          required: ['kind', 'path'],
          additionalProperties: false,
        },
      ],
    });
    expect(structuralViolations(s)).toEqual([]);
    expect(s.type).toBe('object');
    expect(s.required).toEqual(['kind']);
    const p = s.properties as Record<string, SchemaNode>;
    expect(p.kind).toEqual({ type: 'string', enum: ['http', 'module'] });
    expect(p.method).toEqual({ type: 'string', enum: ['GET', 'POST', 'run'] }); // loosest of both, no default
    expect(s['x-kubernetes-validations']).toEqual([
      { rule: 'self.kind != "http" || has(self.url)', message: 'is required with kind: http', fieldPath: '.url', reason: 'FieldValueRequired' },
      { rule: 'self.kind != "http" || !(has(self.path))', message: 'kind: http takes only the fields kind, url, method', reason: 'FieldValueForbidden' },
      { rule: 'self.kind != "module" || has(self.path)', message: 'is required with kind: module', fieldPath: '.path', reason: 'FieldValueRequired' },
      { rule: 'self.kind != "module" || !(has(self.url))', message: 'kind: module takes only the fields kind, path, method', reason: 'FieldValueForbidden' },
    ]);
  });

  it('requires one of the branches of an undiscriminated object union, and accepts anything for mixed types', () => {
    const s = toStructural({
      type: 'object',
      properties: {
        key: {
          anyOf: [
            { type: 'object', properties: { file: { type: 'string' } }, required: ['file'] },
            { type: 'object', properties: { env: { type: 'string' } }, required: ['env'] },
          ],
        },
        mixed: { anyOf: [{ type: 'string' }, { type: 'object', properties: { a: { type: 'string' } } }] },
        maybe: { anyOf: [{ type: 'string' }, { type: 'null' }] },
      },
    });
    expect(structuralViolations(s)).toEqual([]);
    const p = s.properties as Record<string, SchemaNode>;
    expect(p.key!['x-kubernetes-validations']).toEqual([{ rule: '(has(self.file)) || (has(self.env))', message: 'must set one of: file | env' }]);
    expect(p.mixed).toEqual({ 'x-kubernetes-preserve-unknown-fields': true });
    expect(p.maybe).toEqual({ type: 'string', nullable: true });
  });

  it('refuses $ref (schemas must be inlined)', () => {
    expect(() => toStructural({ $ref: '#/definitions/x' })).toThrow(TypeError);
  });

  it('spells field names the way Kubernetes CEL does', () => {
    expect(celField('url')).toBe('url');
    expect(celField('namespace')).toBe('__namespace__');
    expect(celField('a-b.c/d__e')).toBe('a__dash__b__dot__c__slash__d__underscores__e');
    expect(fieldPath('url')).toBe('.url');
    expect(fieldPath('a-b')).toBe("['a-b']");
  });
});
