/**
 * JSON Schema of schedule files, generated from the zod schema in schema.ts (the input side: durations are
 * strings, defaults are optional). Editors use it for completion and help text, e.g. with the YAML language
 * server: put `# yaml-language-server: $schema=<path>/schedules.schema.json` at the top of a schedule file.
 *
 * It checks shape only: cron syntax, time zones, unique names and jitter against the gap between due times
 * are checked by the loader.
 */
import { z } from 'zod';
import { scheduleFileSchema } from './schema.js';

/** Where the generated schema is committed, relative to the project root. */
export const JSON_SCHEMA_PATH = 'schema/schedules.schema.json';

/**
 * The JSON Schema (draft-07, the dialect editors support best) of a schedule file as an object.
 * Deterministic: the same zod schema always gives the same output.
 */
export function scheduleFileJsonSchema(): Record<string, unknown> {
  const generated = z.toJSONSchema(scheduleFileSchema, { io: 'input', target: 'draft-07', unrepresentable: 'throw' });
  // Dialect, title and description first, so a reader of the file sees what it is.
  const { $schema, title, description, ...rest } = generated as Record<string, unknown>;
  return { $schema, title, description, ...rest };
}

/** {@link scheduleFileJsonSchema} as the text committed in `schema/schedules.schema.json` (2-space JSON + newline). */
export function scheduleFileJsonSchemaText(): string {
  return `${JSON.stringify(scheduleFileJsonSchema(), null, 2)}\n`;
}
