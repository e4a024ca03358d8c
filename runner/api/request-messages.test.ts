import { describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { requestProblems, type RequestPart } from './request-messages.js';
import { auditQuerySchema, backfillBodySchema, listQuerySchema, occurrencesQuerySchema, reasonBodySchema } from './schemas.js';

/** The messages the API would answer for `input` (the real schemas the handlers use). */
function messages(schema: z.ZodType, input: unknown, part: RequestPart): string[] {
  const r = schema.safeParse(input);
  if (r.success) throw new Error('expected a refusal');
  return requestProblems(schema, r.error, input, part).map((p) => p.message);
}

describe('the API words a refused query or body as field: what is wrong; allowed: what is allowed', () => {
  it('names the query field, says what is wrong and the allowed range, without zod words', () => {
    expect(messages(listQuerySchema, { limit: '0' }, 'query')).toEqual(['query.limit: must be at least 1; allowed: a whole number from 1 to 500']);
    expect(messages(listQuerySchema, { limit: '900' }, 'query')).toEqual(['query.limit: must be at most 500; allowed: a whole number from 1 to 500']);
    expect(messages(listQuerySchema, { limit: 'ten' }, 'query')).toEqual(['query.limit: must be a number; allowed: a whole number from 1 to 500']);
    expect(messages(auditQuerySchema, { limit: '1.5' }, 'query')).toEqual(['query.limit: must be a whole number; allowed: a whole number from 1 to 500']);
    expect(messages(occurrencesQuerySchema, { limit: '0' }, 'query')).toEqual(['query.limit: must be at least 1; allowed: a whole number from 1 to 5000']);
    expect(messages(listQuerySchema, { sort: 'newest' }, 'query')).toEqual(['query.sort: is not one of the allowed values; allowed: one of name, attention, next, last']);
    expect(messages(listQuerySchema, { suspended: 'yes' }, 'query')).toEqual(['query.suspended: is not one of the allowed values; allowed: one of true, false']);
  });

  it('says one limit for a number far past the field\'s range (not zod\'s safe-integer bound beside it)', () => {
    expect(messages(listQuerySchema, { limit: '99999999999999999999' }, 'query')).toEqual(['query.limit: must be at most 500; allowed: a whole number from 1 to 500']);
    expect(messages(listQuerySchema, { limit: '-99999999999999999999' }, 'query')).toEqual(['query.limit: must be at least 1; allowed: a whole number from 1 to 500']);
    expect(messages(occurrencesQuerySchema, { limit: '9007199254740993' }, 'query')).toEqual(['query.limit: must be at most 5000; allowed: a whole number from 1 to 5000']);
    expect(messages(auditQuerySchema, { limit: '1e400' }, 'query')).toEqual(['query.limit: must be a number; allowed: a whole number from 1 to 500']);
  });

  it('names the body field for a missing, mistyped or too long value, and every refused field', () => {
    expect(messages(reasonBodySchema, { reason: 5 }, 'body')).toEqual(['body.reason: must be text, not a number; allowed: text of up to 500 characters']);
    expect(messages(reasonBodySchema, { reason: 'x'.repeat(501) }, 'body')).toEqual(['body.reason: is longer than 500 characters; allowed: text of up to 500 characters']);
    expect(messages(backfillBodySchema, { from: '2026-01-01T00:00:00Z', dryRun: 'yes', max: 0 }, 'body')).toEqual([
      'body.to: is required; allowed: text: last due time (ISO, inclusive)',
      'body.dryRun: must be true or false, not text; allowed: true or false',
      'body.max: must be at least 1; allowed: a whole number of at least 1',
    ]);
  });

  it('refuses an unknown body field (a mistyped "reason" would otherwise be lost silently)', () => {
    const m = messages(reasonBodySchema, { reasn: 'x' }, 'body');
    expect(m).toHaveLength(1);
    expect(m[0]).toBe('body.reasn: is not a field here; did you mean "reason"? allowed: reason');
  });

  it('says the whole body must be a JSON object when it is another JSON value', () => {
    expect(messages(backfillBodySchema, ['from'], 'body')).toEqual(['body: must be a JSON object, not a list']);
  });

  it('never echoes the value given (a value in the wrong place may be a secret)', () => {
    const all = [...messages(reasonBodySchema, { reason: 12345678 }, 'body'), ...messages(listQuerySchema, { sort: 's3cr3t-value' }, 'query')].join('\n');
    expect(all).not.toMatch(/12345678|s3cr3t/);
    expect(all).not.toMatch(/Invalid|Too (big|small)|expected .* to be/);
  });
});
