import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { structuralViolations, type SchemaNode } from '../../k8s/structural.js';
import { scheduleObject } from '../config/schema.js';
import { CRD_PATH, PRINTER_COLUMNS, scheduleCrd, scheduleCrdYaml } from './crd.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const version = (scheduleCrd().spec as { versions: { schema: { openAPIV3Schema: SchemaNode } }[] }).versions[0]!;
const schema = version.schema.openAPIV3Schema;
const props = (n: SchemaNode): Record<string, SchemaNode> => n.properties as Record<string, SchemaNode>;

describe('Schedule CRD', () => {
  it('is committed as generated (run `npm run schema` after changing the schedule schema)', () => {
    expect(readFileSync(`${root}${CRD_PATH}`, 'utf8')).toBe(scheduleCrdYaml());
  });

  it('is a structural schema', () => {
    expect(structuralViolations(schema)).toEqual([]);
  });

  it('has a spec field for every field of a file schedule except name, and requires what the file requires', () => {
    const spec = props(schema).spec!;
    const fileFields = Object.keys(scheduleObject.shape).filter((k) => k !== 'name');
    expect(Object.keys(props(spec)).sort()).toEqual(fileFields.sort());
    expect(spec.required).toEqual(['cron', 'job']);
    expect(props(schema).metadata).toEqual({ type: 'object', properties: { name: { type: 'string', maxLength: 63, pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$' } } });
  });

  it('applies only the defaults the loader applies', () => {
    const spec = props(props(schema).spec!);
    const defaults = Object.fromEntries(Object.entries(spec).filter(([, v]) => v.default !== undefined).map(([k, v]) => [k, v.default]));
    expect(defaults).toEqual({
      timeZone: 'UTC',
      jitter: '0',
      suspend: false,
      catchUp: 'latest',
      concurrencyPolicy: 'Allow',
      retries: 0,
      retryBackoff: '1s',
      retryBackoffMax: '5m',
      onResume: 'latest',
    });
  });

  it('checks every duration field with a CEL rule or, inside lists, a pattern', () => {
    const spec = props(props(schema).spec!);
    for (const k of ['jitter', 'startingDeadline', 'timeout', 'retryBackoff', 'retryBackoffMax']) {
      expect(spec[k]!['x-kubernetes-validations'], k).toEqual([expect.objectContaining({ rule: expect.stringContaining('self.matches') })]);
      expect(spec[k]!.maxLength, k).toBe(64);
    }
    const olderThan = props(props(spec.job!).resources!.items as SchemaNode).olderThan!;
    expect(olderThan['x-kubernetes-validations']).toBeUndefined();
    expect(olderThan.pattern).toMatch(/^\^\\s\*\(0\|/);
  });

  it('prints CronJob-like columns, with JITTER, REPLICA and READY in -o wide', () => {
    expect(PRINTER_COLUMNS.filter((c) => !('priority' in c)).map((c) => c.name.toUpperCase())).toEqual([
      'SCHEDULE', 'TIMEZONE', 'SUSPEND', 'ACTIVE', 'LAST SCHEDULE', 'NEXT FIRE', 'LAST RESULT', 'AGE',
    ]);
    expect(PRINTER_COLUMNS.filter((c) => 'priority' in c).map((c) => c.name.toUpperCase())).toEqual(['JITTER', 'REPLICA', 'READY']);
    expect(version).toMatchObject({ subresources: { status: {} } });
  });

  it('is valid YAML with the CRD identity', () => {
    const doc = parse(scheduleCrdYaml()) as { kind: string; metadata: { name: string }; spec: { group: string; scope: string; names: { plural: string } } };
    expect(doc).toMatchObject({ kind: 'CustomResourceDefinition', metadata: { name: 'schedules.cronflock.io' }, spec: { group: 'cronflock.io', scope: 'Namespaced', names: { plural: 'schedules' } } });
  });
});
