/**
 * The bench's record of results, as pure functions (the files are written by report.ts):
 * - every run's full table goes to bench/history/<YYYY-MM-DD>.md ({@link renderRecord});
 * - the latest run per key (scenario and setting, e.g. "throughput 3×1000") is kept in bench/current.json
 *   ({@link mergeCurrent}) and bench/RESULTS.md is written from it ({@link renderResultsPage}): a short page with
 *   the current figures and issue 16's targets, each with its measured value and a met / missed verdict
 *   ({@link TARGETS}).
 */

/** A table: a header row and rows of cells; `notes` are printed below it. */
export interface Table {
  title: string;
  header: string[];
  rows: string[][];
  notes?: string[];
}

/** When, where and under what load a run was measured. The machine is shared: the load says how much. */
export interface RunConditions {
  /** Start of the measurement, ISO 8601 UTC. */
  atIso: string;
  /** Host name, cores and CPU model, e.g. "vm (2 × AMD EPYC)". */
  machine: string;
  /** `os.loadavg()` (1, 5, 15 min) and when it was read: at the start (since issue 16) or the end (older runs). */
  load: { avg: number[]; when: 'start' | 'end' };
  /** CPU busy on the whole machine over 1 s just before the run (% of all cores): other processes' work. */
  busyBeforePct?: number;
  /** Node, Redis and package versions. */
  software: string;
  /** `git rev-parse --short HEAD`, with "+dirty" when the work tree had changes. */
  commit?: string;
  /** Anything else a reader must know, e.g. where figures were taken from. */
  note?: string;
}

/** One run of one key: its table, its conditions and the figures targets are judged by. */
export interface BenchRecord {
  /** A later run with the same key replaces this one on the results page, e.g. "throughput 3×1000". */
  key: string;
  table: Table;
  conditions: RunConditions;
  /** Named numbers of the run (see the scenario for the names); NaN is stored as null by JSON. */
  figures: Record<string, number | null>;
}

/** The systems of a throughput table, in column order, with the figure-name prefix of each. */
export const THROUGHPUT_SYSTEMS = [
  { id: 'cronflock', label: 'cronflock (jittered)' },
  { id: 'cronflock0', label: 'cronflock (jitter 0)' },
  { id: 'bullmq', label: 'BullMQ Job Schedulers' },
] as const;
export type ThroughputSystem = (typeof THROUGHPUT_SYSTEMS)[number]['id'];
/** The cronflock columns a target must hold for (both, when the run measured both). */
const CRONFLOCK_COLUMNS: ThroughputSystem[] = ['cronflock', 'cronflock0'];

/** "2026-11-30 11:27 UTC · vm (2 × AMD EPYC) · load 1.6 2.5 3.5 at the start · …", one line. */
export function conditionsLine(c: RunConditions): string {
  const at = `${c.atIso.slice(0, 10)} ${c.atIso.slice(11, 16)} UTC`;
  const load = c.load.avg.length ? `load ${c.load.avg.map((l) => l.toFixed(1)).join(' ')} at the ${c.load.when}` : 'load not recorded';
  const busy = c.busyBeforePct !== undefined ? `machine ${c.busyBeforePct.toFixed(0)} % busy in the second before` : undefined;
  return [at, c.machine, load, busy, c.software, c.commit ? `commit ${c.commit}` : undefined, c.note].filter(Boolean).join(' · ');
}

/** A table as Markdown: `### title`, the conditions line, the table and its notes. */
export function renderRecord(r: Pick<BenchRecord, 'table' | 'conditions'>): string {
  const t = r.table;
  const widths = t.header.map((h, i) => Math.max(h.length, ...t.rows.map((row) => (row[i] ?? '').length)));
  const line = (cells: string[]): string => `| ${t.header.map((_, i) => (cells[i] ?? '').padEnd(widths[i]!)).join(' | ')} |`;
  return [
    `### ${t.title}`,
    '',
    `_${conditionsLine(r.conditions)}_`,
    '',
    line(t.header),
    `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`,
    ...t.rows.map(line),
    '',
    ...(t.notes?.length ? [...t.notes.map((n) => `- ${n}`), ''] : []),
  ].join('\n');
}

/** The history file of a run: bench/history/<YYYY-MM-DD>.md of its start (UTC). */
export function historyFile(c: RunConditions): string {
  return `bench/history/${c.atIso.slice(0, 10)}.md`;
}

/** `current` with `rec` replacing the record of the same key (or added), ordered by key. */
export function mergeCurrent(current: readonly BenchRecord[], rec: BenchRecord): BenchRecord[] {
  return [...current.filter((r) => r.key !== rec.key), rec].sort((a, b) => a.key.localeCompare(b.key, 'en', { numeric: true }));
}

// ---------------------------------------------------------------------------------------------------------
// Targets

export type Verdict = 'met' | 'missed' | 'not measured';

/** A target's judgement: what was measured (in words and figures), from which runs, and the verdict. */
export interface Judgement {
  measured: string;
  /** Keys and dates of the runs the judgement uses. */
  runs: string[];
  verdict: Verdict;
}

/** A target of issue 16 and how to judge it from the current records. */
export interface Target {
  measure: string;
  target: string;
  judge(current: readonly BenchRecord[]): Judgement;
}

const num = (r: BenchRecord | undefined, name: string): number | undefined => {
  const v = r?.figures[name];
  return typeof v === 'number' && Number.isFinite(v) ? v : undefined;
};
const runOf = (r: BenchRecord): string => `${r.key} (${r.conditions.atIso.slice(0, 10)} ${r.conditions.atIso.slice(11, 16)})`;
const f0 = (v: number): string => Math.round(v).toLocaleString('en');
const x2 = (v: number): string => `${v.toFixed(2)}×`;
const notMeasured = (why: string): Judgement => ({ measured: why, runs: [], verdict: 'not measured' });
const byKey = (cur: readonly BenchRecord[], key: string): BenchRecord | undefined => cur.find((r) => r.key === key);
/** The newest record having figure `name`. */
function newestWith(cur: readonly BenchRecord[], name: string): BenchRecord | undefined {
  return [...cur].filter((r) => num(r, name) !== undefined).sort((a, b) => b.conditions.atIso.localeCompare(a.conditions.atIso))[0];
}
/** The cronflock columns a throughput record has figure `name` for. */
const columnsWith = (r: BenchRecord, name: string): ThroughputSystem[] => CRONFLOCK_COLUMNS.filter((s) => num(r, `${s}.${name}`) !== undefined);
const colLabel = (s: ThroughputSystem): string => (s === 'cronflock' ? 'jittered' : 'jitter 0');

/**
 * Judges "every cronflock column of each record meets `ok`"; `say` describes a column's figures. Missed when a
 * measured column misses; otherwise a record or figure missing (`ok` undefined) makes it "not measured".
 */
function judgeColumns(
  records: (BenchRecord | undefined)[],
  keys: string[],
  need: string,
  ok: (r: BenchRecord, s: ThroughputSystem) => boolean | undefined,
  say: (r: BenchRecord, s: ThroughputSystem) => string,
): Judgement {
  const missing = keys.filter((_, i) => !records[i] || columnsWith(records[i]!, need).length === 0);
  const present = records.filter((r): r is BenchRecord => r !== undefined && columnsWith(r, need).length > 0);
  if (present.length === 0) return notMeasured(`no run of ${missing.join(', ')} with this figure`);
  const parts: string[] = [];
  let met = true;
  let unknown = missing.length > 0;
  if (missing.length) parts.push(`${missing.join(', ')}: not measured`);
  for (const r of present) {
    const cols = columnsWith(r, need);
    parts.push(`${r.key.replace(/^throughput /, '')}: ${cols.map((s) => `${colLabel(s)} ${say(r, s)}`).join(', ')}`);
    for (const s of cols) {
      const v = ok(r, s);
      if (v === undefined) unknown = true;
      else if (!v) met = false;
    }
  }
  return { measured: parts.join('; '), runs: present.map(runOf), verdict: !met ? 'missed' : unknown ? 'not measured' : 'met' };
}

/** `a / b` for two figures of one record, undefined when either is missing or b is 0. */
function figRatio(r: BenchRecord, a: string, b: string): number | undefined {
  const x = num(r, a);
  const y = num(r, b);
  return x === undefined || y === undefined || y === 0 ? undefined : x / y;
}

/** Column `s`'s figure `name` / BullMQ's, in a throughput record. */
const vsBullmq = (r: BenchRecord, s: ThroughputSystem, name: string): number | undefined => figRatio(r, `${s}.${name}`, `bullmq.${name}`);

/** Says "<cronflock><unit> vs <BullMQ><unit> (<ratio>)" of figure `name`. */
function sayVsBullmq(name: string, unit: string, show: (v: number) => string = f0): (r: BenchRecord, s: ThroughputSystem) => string {
  return (r, s) => `${fmtU(num(r, `${s}.${name}`), show)}${unit} vs ${fmtU(num(r, `bullmq.${name}`), show)}${unit} (${fmtU(vsBullmq(r, s, name), x2)})`;
}

/** A target on the throughput runs of `keys`: every cronflock column's figure `name` judged by `ok`. */
function onRuns(
  cur: readonly BenchRecord[],
  keys: string[],
  name: string,
  ok: (r: BenchRecord, s: ThroughputSystem) => boolean | undefined,
  say: (r: BenchRecord, s: ThroughputSystem) => string,
): Judgement {
  return judgeColumns(keys.map((k) => byKey(cur, k)), keys, name, ok, say);
}

/** Issue 16's targets ("each measured side by side in one run on this 2-core machine, quiet, reported as ratios"). */
export const TARGETS: Target[] = [
  {
    measure: 'Redis CPU per occurrence, 3 replicas, 1,000 and 4,000 schedules/s',
    target: '≤ 0.5× BullMQ Job Schedulers\'',
    judge: (cur) =>
      onRuns(cur, ['throughput 3×1000', 'throughput 3×4000'], 'redisUsPerOcc', (r, s) => mapU(vsBullmq(r, s, 'redisUsPerOcc'), (q) => q <= 0.5), sayVsBullmq('redisUsPerOcc', ' µs')),
  },
  {
    measure: 'occurrences started/s at saturation (offer 8,000/s), 3 replicas',
    target: '≥ 1.5× BullMQ\'s, with cronflock\'s p99 start lateness ≤ 1 s',
    judge: (cur) =>
      onRuns(
        cur,
        ['throughput 3×8000'],
        'startedPerS',
        (r, s) => {
          const q = vsBullmq(r, s, 'startedPerS');
          const p99 = num(r, `${s}.latenessP99Ms`);
          if ((q !== undefined && q < 1.5) || (p99 !== undefined && p99 > 1000)) return false;
          return q === undefined || p99 === undefined ? undefined : true;
        },
        (r, s) => `${sayVsBullmq('startedPerS', '/s')(r, s)}, p99 ${fmtU(num(r, `${s}.latenessP99Ms`), f0)} ms`,
      ),
  },
  {
    measure: 'started/s when offered 2× what it sustains (overload), 3 replicas',
    target: '≥ 0.9× its saturation rate (no collapse); Redis commands per occurrence within 1.2× of the unloaded figure',
    judge(cur) {
      // Saturation rate: the most started/s of any 3-replica run; overload: the run offering the most, if that
      // is ≥ 2× the saturation rate; unloaded: the 3 × 1,000 run.
      const runs = cur.filter((r) => r.key.startsWith('throughput 3×'));
      const unloaded = byKey(cur, 'throughput 3×1000');
      const overload = [...runs].sort((a, b) => (num(b, 'offeredPerS') ?? 0) - (num(a, 'offeredPerS') ?? 0))[0];
      if (!overload || !unloaded) return notMeasured('needs throughput runs of 3 replicas at 1,000/s and at 2× the saturation rate');
      const parts: string[] = [];
      let missed = false;
      let unknown = false;
      for (const s of CRONFLOCK_COLUMNS) {
        const sat = Math.max(0, ...runs.map((r) => num(r, `${s}.startedPerS`) ?? 0));
        const started = num(overload, `${s}.startedPerS`);
        const offered = num(overload, 'offeredPerS');
        if (!sat || started === undefined || offered === undefined) continue;
        if (offered < 2 * sat) {
          unknown = true;
          parts.push(`${colLabel(s)}: the largest offer (${f0(offered)}/s) is < 2× its saturation rate (${f0(sat)}/s)`);
          continue;
        }
        const cmds = num(overload, `${s}.cmdsPerOcc`);
        const cmds0 = num(unloaded, `${s}.cmdsPerOcc`);
        const cmdRatio = cmds !== undefined && cmds0 ? cmds / cmds0 : undefined;
        if (started < 0.9 * sat || (cmdRatio !== undefined && cmdRatio > 1.2)) missed = true;
        else if (cmdRatio === undefined) unknown = true;
        parts.push(
          `${colLabel(s)}: ${f0(started)}/s at ${f0(offered)}/s offered vs saturation ${f0(sat)}/s (${x2(started / sat)}); commands per occurrence ${fmtU(cmds, (v) => v.toFixed(1))} vs ${fmtU(cmds0, (v) => v.toFixed(1))} unloaded (${fmtU(cmdRatio, x2)})`,
        );
      }
      if (parts.length === 0) return notMeasured('no cronflock figures in the 3-replica throughput runs');
      return { measured: parts.join('; '), runs: [overload, unloaded].map(runOf), verdict: missed ? 'missed' : unknown ? 'not measured' : 'met' };
    },
  },
  {
    measure: 'start lateness p99 at 1,000/s',
    target: '≤ 25 ms on a quiet machine, and ≤ 0.1× BullMQ\'s in the same run',
    judge: (cur) =>
      onRuns(
        cur,
        ['throughput 3×1000'],
        'latenessP99Ms',
        (r, s) => {
          const q = vsBullmq(r, s, 'latenessP99Ms');
          if (num(r, `${s}.latenessP99Ms`)! > 25 || (q !== undefined && q > 0.1)) return false;
          return q === undefined ? undefined : true;
        },
        sayVsBullmq('latenessP99Ms', ' ms'),
      ),
  },
  {
    measure: 'failover p99 after SIGKILL, `--lock 500ms`',
    target: '≤ 1 s (keep)',
    judge: (cur) => single(cur, 'lock500ms.p99Ms', (v) => v <= 1000, (v) => `p99 ${f0(v)} ms`),
  },
  {
    measure: 'RSS per replica, 100k registered schedules',
    target: '≤ 200 MB steady, ≤ 300 MB peak while loading',
    judge(cur) {
      const r = newestWith(cur, '100000.rssMb');
      const steady = num(r, '100000.rssMb');
      const peak = num(r, '100000.peakRssMb');
      if (!r || steady === undefined) return notMeasured('no idle run with 100,000 registered');
      const verdict: Verdict = steady > 200 || (peak !== undefined && peak > 300) ? 'missed' : peak === undefined ? 'not measured' : 'met';
      return { measured: `${f0(steady)} MB steady, ${fmtU(peak, f0)} MB peak`, runs: [runOf(r)], verdict };
    },
  },
  {
    measure: 'RSS per replica, 1M registered schedules',
    target: '≤ 1 GB; load ≤ 30 s; idle CPU ≤ 2 % of a core over 0 registered (keep)',
    judge(cur) {
      const r = newestWith(cur, '1000000.rssMb');
      const rss = num(r, '1000000.rssMb');
      const loadS = num(r, '1000000.loadS');
      const cpu = num(r, '1000000.cpuPct');
      const cpu0 = num(r, '0.cpuPct');
      if (!r || rss === undefined) return notMeasured('no idle run with 1,000,000 registered');
      const over = cpu !== undefined && cpu0 !== undefined ? cpu - cpu0 : undefined;
      const parts = [rss <= 1024, loadS === undefined ? undefined : loadS <= 30, over === undefined ? undefined : over <= 2];
      return {
        measured: `${f0(rss)} MB, load ${fmtU(loadS, f0)} s, idle CPU ${fmtU(over, (v) => `${v >= 0 ? '+' : ''}${v.toFixed(2)}`)} % of a core over 0 registered`,
        runs: [runOf(r)],
        verdict: parts.includes(false) ? 'missed' : parts.includes(undefined) ? 'not measured' : 'met',
      };
    },
  },
  {
    measure: 'set-up until running, 3 replicas, 1,000 schedules',
    target: '≤ 1.5× BullMQ\'s',
    judge: (cur) =>
      onRuns(cur, ['throughput 3×1000'], 'setupS', (r, s) => mapU(vsBullmq(r, s, 'setupS'), (q) => q <= 1.5), sayVsBullmq('setupS', ' s', (v) => v.toFixed(1))),
  },
  {
    measure: '3-master Redis Cluster (local redis-server processes), one flock, `--partitions 3`, 3,000/s',
    target: 'each master\'s share of Redis CPU within 1/3 ± 10 %; sum ≤ 1.1× the single-master figure',
    judge(cur) {
      const r = newestWith(cur, 'cluster.maxShareDeviation');
      const dev = num(r, 'cluster.maxShareDeviation');
      const sum = num(r, 'cluster.sumOverSingle');
      if (!r || dev === undefined || sum === undefined) return notMeasured('no cluster scenario in the bench yet');
      return { measured: `largest share off 1/3 by ${(dev * 100).toFixed(0)} %, sum ${x2(sum)}`, runs: [runOf(r)], verdict: dev <= 0.1 && sum <= 1.1 ? 'met' : 'missed' };
    },
  },
  {
    measure: 'soak, ≥ 1,000,000 occurrences, all fault kinds, plus Redis Cluster failovers and `--redis-wait-replicas 1` Sentinel failovers',
    target: '0 duplicates, 0 misses, 0 unaccounted (`npm run soak`)',
    judge(cur) {
      const r = newestWith(cur, 'occurrences');
      const occ = num(r, 'occurrences');
      if (!r || occ === undefined) return notMeasured('no soak run');
      const bad = (num(r, 'duplicates') ?? NaN) + (num(r, 'misses') ?? NaN) + (num(r, 'unaccounted') ?? NaN);
      const failovers = (num(r, 'clusterFailovers') ?? 0) > 0 && (num(r, 'sentinelFailovers') ?? 0) > 0;
      const measured = `${f0(occ)} occurrences, ${num(r, 'duplicates')} / ${num(r, 'misses')} / ${num(r, 'unaccounted')}${failovers ? '' : '; no Redis Cluster or Sentinel failovers in the soak yet'}`;
      const verdict: Verdict = !(bad === 0) ? 'missed' : occ >= 1_000_000 && failovers ? 'met' : occ < 1_000_000 ? 'missed' : 'not measured';
      return { measured, runs: [runOf(r)], verdict };
    },
  },
];

function mapU<T, U>(v: T | undefined, f: (v: T) => U): U | undefined {
  return v === undefined ? undefined : f(v);
}
function fmtU(v: number | undefined, f: (v: number) => string): string {
  return v === undefined ? '–' : f(v);
}
/** A target judged on one figure of the newest record that has it. */
function single(cur: readonly BenchRecord[], name: string, ok: (v: number) => boolean, say: (v: number) => string): Judgement {
  const r = newestWith(cur, name);
  const v = num(r, name);
  if (!r || v === undefined) return notMeasured(`no run with ${name}`);
  return { measured: say(v), runs: [runOf(r)], verdict: ok(v) ? 'met' : 'missed' };
}

/** The targets table: measure | target | measured | runs | verdict. */
export function targetsTable(current: readonly BenchRecord[], targets: readonly Target[] = TARGETS): Table {
  return {
    title: 'Targets (issue 16)',
    header: ['measure', 'target', 'measured', 'runs', 'verdict'],
    rows: targets.map((t) => {
      const j = t.judge(current);
      return [t.measure, t.target, j.measured, j.runs.join(', ') || '–', j.verdict];
    }),
  };
}

const PAGE_HEAD = `# Benchmark results

The current figures: for each scenario and setting, the latest run of \`npm run bench\`, with when, on what machine
and under what load it ran (the machine is often shared: compare ratios within a table, not figures across runs).
Every run's full tables, and the notes written about them, are in [history/](history/), one file per day.

This page and \`bench/current.json\` are written by the bench after each run (\`BENCH_NO_RESULTS=1\` to skip);
do not edit them by hand: add notes to the day's history file.`;

/**
 * The whole RESULTS.md: the targets with their verdicts (a target is met when every cronflock column of its run
 * meets it: jittered and jitter 0), then every current record.
 */
export function renderResultsPage(current: readonly BenchRecord[], targets: readonly Target[] = TARGETS): string {
  const tt = targetsTable(current, targets);
  const widths = tt.header.map((h, i) => Math.max(h.length, ...tt.rows.map((r) => r[i]!.length)));
  const line = (cells: string[]): string => `| ${cells.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`;
  return [
    PAGE_HEAD,
    '',
    '## Targets (issue 16)',
    '',
    'Each measured side by side in one run on a 2-core machine, quiet, reported as ratios. A target is **met** when every cronflock column of its run meets it (jittered and jitter 0, where the run measured both).',
    '',
    line(tt.header),
    `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`,
    ...tt.rows.map(line),
    '',
    '## Current figures',
    '',
    ...current.map((r) => renderRecord(r)),
  ].join('\n');
}
