/** The logger a job gets (`context.log`) is pino-style, as the README says: fields first, then the message. */
import { readFileSync } from 'node:fs';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import type { JobLogger } from './types.js';

describe('context.log', () => {
  it('is pino-style (a pino logger satisfies it) and the README says how to call it', () => {
    const lines: string[] = [];
    const log: JobLogger = pino({ base: undefined, timestamp: false }, { write: (l: string) => void lines.push(l) });
    log.info({ rows: 12 }, 'exported');
    log.warn('slow');
    expect(lines.map((l) => JSON.parse(l) as object)).toEqual([
      { level: 30, rows: 12, msg: 'exported' },
      { level: 40, msg: 'slow' },
    ]);
    const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8').replace(/\s+/g, ' ');
    expect(readme).toContain("`context.log` (a pino-style logger: the fields first, then the message, `context.log.info({rows: 12}, 'exported')`");
  });
});
