/**
 * Schedules for tests, built the one way the engine gets them: schedule files compiled by the loader
 * (runner/config/load.ts), so a test's schedule is a CompiledSchedule with every field the loader sets.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseScheduleText, type CompiledSchedule } from '../../runner/config/load.js';

/** One entry of a schedule file (YAML), an http job unless `job` says otherwise. */
export function scheduleEntry(name: string, o: { cron?: string; jitter?: string; job?: string } = {}): string {
  return [
    `  - name: ${name}`,
    `    cron: "${o.cron ?? '*/5 * * * * *'}"`,
    ...(o.jitter ? [`    jitter: ${o.jitter}`] : []),
    `    job: ${o.job ?? '{ kind: http, url: "http://127.0.0.1:9/hook" }'}`,
  ].join('\n');
}

/** A schedule file's text with these entries. */
export function scheduleFile(...entries: string[]): string {
  return `schedules:\n${entries.join('\n')}\n`;
}

/** The compiled schedules of a schedule file's text. @throws Error listing the errors when it is refused. */
export async function compiledSchedules(yaml: string, file = 'schedules.yaml'): Promise<CompiledSchedule[]> {
  const r = await parseScheduleText(yaml, file);
  if (r.errors.length > 0) throw new Error(r.errors.map((e) => e.format()).join('\n'));
  return r.schedules;
}

/** Schedule files (name → text) in a new temporary folder, removed by `cleanup`. */
export function scheduleFolder(files: Record<string, string>): { dir: string; write(name: string, text: string): void; cleanup(): void } {
  const dir = mkdtempSync(join(tmpdir(), 'cronflock-schedules-'));
  const write = (name: string, text: string): void => writeFileSync(join(dir, name), text);
  for (const [name, text] of Object.entries(files)) write(name, text);
  return { dir, write, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/**
 * A schedule file's text for group tests: `groups` (name → its limits as a YAML flow map, e.g.
 * `{maxConcurrent: 2}`) and one http schedule per name, all in `o.group`, calling `o.url` (`timeout`: the job's,
 * e.g. `20s`; `startingDeadline`: the schedules', none when absent).
 */
export function groupScheduleFile(o: {
  groups: Record<string, string>;
  group: string;
  names: readonly string[];
  cron: string;
  url: string;
  timeout: string;
  startingDeadline?: string;
}): string {
  const groups = Object.entries(o.groups).map(([name, limits]) => `  ${name}: ${limits}\n`);
  const entries = o.names.map(
    (n) =>
      `  - name: ${n}\n    cron: "${o.cron}"\n    group: ${o.group}\n` +
      (o.startingDeadline ? `    startingDeadline: ${o.startingDeadline}\n` : '') +
      `    job: { kind: http, url: ${o.url}, timeout: ${o.timeout} }\n`,
  );
  return `groups:\n${groups.join('')}schedules:\n${entries.join('')}`;
}
