/**
 * Result tables: printed, appended to bench/history/<YYYY-MM-DD>.md (every run, in full) and kept as the
 * current figures of their key in bench/current.json, from which bench/RESULTS.md is rewritten (bench/lib/results.ts
 * renders both). Each carries the date, the machine, the load when the run started, Node, Redis and versions.
 */
import { spawnSync } from 'node:child_process';
import { appendFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, hostname, loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { historyFile, mergeCurrent, renderRecord, renderResultsPage, type BenchRecord, type RunConditions, type Table } from './results.js';
import { ROOT, sleep } from './util.js';

export type { Table } from './results.js';

/** Node · Redis · versions, one line. */
function software(): string {
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
    version: string;
    dependencies: Record<string, string>;
  };
  const redis = spawnSync('redis-server', ['--version'], { encoding: 'utf8' }).stdout?.match(/v=(\S+)/)?.[1];
  const deps = ['bullmq', 'ioredis', 'cron-parser'].map((d) => `${d} ${pkg.dependencies[d]}`).join(', ');
  return `Node ${process.version} · Redis ${redis} · cronflock ${pkg.version}, ${deps}`;
}

function commit(): string | undefined {
  const head = spawnSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT, encoding: 'utf8' });
  if (head.status !== 0) return undefined;
  const dirty = spawnSync('git', ['status', '--porcelain', '--untracked-files=no'], { cwd: ROOT, encoding: 'utf8' });
  return `${head.stdout.trim()}${dirty.stdout?.trim() ? '+dirty' : ''}`;
}

/** Busy and total jiffies of all cores, from /proc/stat; undefined off Linux. */
function cpuJiffies(): { busy: number; total: number } | undefined {
  try {
    const f = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
    const idle = (f[3] ?? 0) + (f[4] ?? 0); // idle + iowait
    const total = f.reduce((a, b) => a + b, 0);
    return { busy: total - idle, total };
  } catch {
    return undefined;
  }
}

let runNote: string | undefined;
/** A note for every table of this run (`--note`), e.g. "noisy: 4 test suites ran beside it". */
export function setRunNote(note: string | undefined): void {
  runNote = note || undefined;
}

/**
 * The conditions of a run starting now: load average, and how busy the machine was over the last second (the
 * bench's own children are not running yet, so that is other processes' work). Takes 1 s.
 */
export async function runConditions(): Promise<RunConditions> {
  const atIso = new Date().toISOString();
  const load = loadavg();
  const a = cpuJiffies();
  await sleep(1000);
  const b = cpuJiffies();
  const busyBeforePct = a && b && b.total > a.total ? ((b.busy - a.busy) / (b.total - a.total)) * 100 : undefined;
  return {
    atIso,
    machine: `${hostname()} (${cpus().length} × ${cpus()[0]?.model.trim()})`,
    load: { avg: load, when: 'start' },
    ...(busyBeforePct !== undefined ? { busyBeforePct } : {}),
    software: software(),
    ...(commit() ? { commit: commit()! } : {}),
    ...(runNote ? { note: runNote } : {}),
  };
}

let runStart: Promise<RunConditions> | undefined;
/** Records the conditions at the start of the whole run (idempotent); tables without their own use these. */
export function beginRun(): Promise<RunConditions> {
  runStart ??= runConditions();
  return runStart;
}

const CURRENT = join(ROOT, 'bench/current.json');

/** Reads bench/current.json (empty when absent). */
export function readCurrent(file = CURRENT): BenchRecord[] {
  return existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as BenchRecord[]) : [];
}

/**
 * Prints a table; unless `BENCH_NO_RESULTS=1`, appends it to the day's history file and makes it the current
 * record of `o.key` (default: its title) in bench/current.json and bench/RESULTS.md.
 */
export async function report(t: Table, o: { key?: string; figures?: Record<string, number>; conditions?: RunConditions } = {}): Promise<string> {
  const rec: BenchRecord = { key: o.key ?? t.title, table: t, conditions: o.conditions ?? (await beginRun()), figures: o.figures ?? {} };
  const text = renderRecord(rec);
  process.stdout.write(`\n${text}\n`);
  if (process.env.BENCH_NO_RESULTS !== '1') {
    const history = join(ROOT, historyFile(rec.conditions));
    mkdirSync(dirname(history), { recursive: true });
    if (!existsSync(history)) writeFileSync(history, `# Bench runs of ${rec.conditions.atIso.slice(0, 10)}\n\n`);
    appendFileSync(history, `${text}\n`);
    writeCurrent(mergeCurrent(readCurrent(), rec));
  }
  return text;
}

/** Writes bench/current.json and rewrites bench/RESULTS.md from it (`npm run bench -- results` after a change of the page). */
export function writeCurrent(current: readonly BenchRecord[] = readCurrent()): void {
  writeFileSync(CURRENT, `${JSON.stringify(current, null, 1)}\n`);
  writeFileSync(join(ROOT, 'bench/RESULTS.md'), renderResultsPage(current));
}

/** A two-column table, the format of the first benchmark. */
export function reportFigures(title: string, rows: [string, string][], notes?: string[], o: Parameters<typeof report>[1] = {}): Promise<string> {
  return report({ title, header: ['figure', 'value'], rows, notes }, o);
}
