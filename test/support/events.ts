/** Reads the JSON-lines event file written by test/fixtures/jobs/slow.mjs. */
import { existsSync, readFileSync } from 'node:fs';

/** One event of the slow job. */
export interface JobEvent {
  event: 'start' | 'abort' | 'end';
  key: string;
  token: number;
  attempt: number;
  replica: string;
  at: number;
}

/** All events written so far. */
export function readEvents(file: string): JobEvent[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as JobEvent);
}

/** A 6-field cron expression (UTC) that fires once a day at the second of `ms`. */
export function cronAt(ms: number): string {
  const d = new Date(ms);
  return `${d.getUTCSeconds()} ${d.getUTCMinutes()} ${d.getUTCHours()} * * *`;
}
