/**
 * Result tables: printed and appended to bench/RESULTS.md, each with the date, the machine, Node, Redis and the
 * package versions it was measured with.
 */
import { spawnSync } from 'node:child_process';
import { appendFileSync, readFileSync } from 'node:fs';
import { cpus, hostname, loadavg } from 'node:os';
import { join } from 'node:path';
import { ROOT } from './util.js';

/** Date · machine · Node · Redis · versions, one line. */
export function versions(): string {
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
    version: string;
    dependencies: Record<string, string>;
  };
  const redis = spawnSync('redis-server', ['--version'], { encoding: 'utf8' }).stdout?.match(/v=(\S+)/)?.[1];
  const deps = ['bullmq', 'ioredis', 'cron-parser'].map((d) => `${d} ${pkg.dependencies[d]}`).join(', ');
  const load = loadavg().map((l) => l.toFixed(1)).join(' ');
  return `${new Date().toISOString()} · ${hostname()} (${cpus().length} × ${cpus()[0]?.model.trim()}, load ${load} at the end) · Node ${process.version} · Redis ${redis} · cronflock ${pkg.version}, ${deps}`;
}

/** A table: a header row and rows of cells; `notes` are printed below it. */
export interface Table {
  title: string;
  header: string[];
  rows: string[][];
  notes?: string[];
}

export function renderTable(t: Table): string {
  const widths = t.header.map((h, i) => Math.max(h.length, ...t.rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]): string => `| ${cells.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`;
  return [
    `### ${t.title}`,
    '',
    `_${versions()}_`,
    '',
    line(t.header),
    `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`,
    ...t.rows.map(line),
    '',
    ...(t.notes?.length ? [...t.notes.map((n) => `- ${n}`), ''] : []),
  ].join('\n');
}

/** Prints a table and appends it to bench/RESULTS.md (unless `BENCH_NO_RESULTS=1`). */
export function report(t: Table): string {
  const text = renderTable(t);
  process.stdout.write(`\n${text}\n`);
  if (process.env.BENCH_NO_RESULTS !== '1') appendFileSync(join(ROOT, 'bench/RESULTS.md'), `${text}\n`);
  return text;
}

/** A two-column table, the format of the first benchmark. */
export function reportFigures(title: string, rows: [string, string][], notes?: string[]): string {
  return report({ title, header: ['figure', 'value'], rows, notes });
}
