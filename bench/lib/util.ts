/**
 * Small helpers shared by the benchmark scenarios and the soak: flags, sleeping, percentiles, the package root.
 */
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { sleep } from '../../runner/time/wait.js';

/**
 * The package root: the nearest folder above this file holding package.json. Works from the sources (vitest,
 * tsx) and from dist/bench/ alike.
 */
export const ROOT: string = (() => {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json'))) {
    const up = dirname(dir);
    if (up === dir) throw new Error(`no package.json above ${fileURLToPath(import.meta.url)}`);
    dir = up;
  }
  return dir;
})();

/** The compiled CLI a user runs. */
export const BIN = join(ROOT, 'bin/cronflock.js');
/** The compiled benchmark folder: child processes (peers, receiver) run from there, as the replicas do. */
export const DIST_BENCH = join(ROOT, 'dist/bench');
/**
 * A job that does nothing: the benchmarks measure the engine, not the work. Schedules use it with
 * `isolation: none` (in the replica process, like BullMQ's processor), not a worker thread per run.
 */
export const NOOP_JOB = join(ROOT, 'bench/noop.mjs');

/** Command-line flags: `--name value`; `--name` alone is "true". */
export class Flags {
  constructor(private readonly argv: readonly string[] = process.argv.slice(2)) {}

  str(name: string, dflt: string): string {
    const i = this.argv.indexOf(`--${name}`);
    if (i < 0) return dflt;
    const v = this.argv[i + 1];
    return v === undefined || v.startsWith('--') ? 'true' : v;
  }

  num(name: string, dflt: number): number {
    const v = Number(this.str(name, String(dflt)));
    if (!Number.isFinite(v)) throw new Error(`--${name} must be a number`);
    return v;
  }

  /** Comma-separated numbers, e.g. `--replicas 1,3,5`. */
  nums(name: string, dflt: number[]): number[] {
    const v = this.str(name, dflt.join(','));
    const out = v.split(',').map((x) => Number(x.trim()));
    if (out.some((x) => !Number.isFinite(x))) throw new Error(`--${name} must be comma-separated numbers`);
    return out;
  }

  list(name: string, dflt: string[]): string[] {
    return this.str(name, dflt.join(','))
      .split(',')
      .map((x) => x.trim())
      .filter(Boolean);
  }

  bool(name: string): boolean {
    return this.argv.includes(`--${name}`) && this.str(name, 'true') !== 'false';
  }
}

/** The engine's one sleep (runner/time/wait.ts). */
export { sleep };

/** Nearest-rank percentile; NaN for an empty list. */
export function pct(xs: readonly number[], p: number): number {
  if (xs.length === 0) return NaN;
  const s = Float64Array.from(xs).sort();
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]!;
}

/** Uniform random number in [a, b). */
export const uniform = (a: number, b: number): number => a + Math.random() * (b - a);

/** A random element. */
export function pick<T>(xs: readonly T[]): T {
  if (xs.length === 0) throw new Error('pick from an empty list');
  return xs[Math.floor(Math.random() * xs.length)]!;
}

/** Fisher–Yates shuffle, in place. */
export function shuffle<T>(xs: T[]): T[] {
  for (let i = xs.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [xs[i], xs[j]] = [xs[j]!, xs[i]!];
  }
  return xs;
}

/** Formats a number for a table: integers as is, others with `digits` decimals; NaN/undefined as "–". */
export function fmt(v: number | undefined, digits = 0): string {
  if (v === undefined || !Number.isFinite(v)) return '–';
  return v.toFixed(digits);
}

/** `a / b` formatted as a ratio, e.g. `1.52×`; "–" when undefined. */
export function ratio(a: number | undefined, b: number | undefined): string {
  if (a === undefined || b === undefined || !Number.isFinite(a) || !Number.isFinite(b) || b === 0) return '–';
  return `${(a / b).toFixed(2)}×`;
}

/** p50 / p99 / max of a list, in a table cell. */
export function dist3(xs: readonly number[], digits = 0): string {
  if (xs.length === 0) return '–';
  let max = -Infinity;
  for (const x of xs) if (x > max) max = x;
  return `${fmt(pct(xs, 50), digits)} / ${fmt(pct(xs, 99), digits)} / ${fmt(max, digits)}`;
}

/** Polls `pred` every `everyMs` until true; throws after `timeoutMs`. */
export async function until(pred: () => boolean | Promise<boolean>, timeoutMs: number, what: string, everyMs = 50): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await pred())) {
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(everyMs);
  }
}
