/**
 * `npm run soak -- --minutes N [flags]`: the chaos soak (bench/soak/soak.ts) from the command line. Prints
 * progress, then a table (bench/lib/report.ts: the day's bench/history file and bench/RESULTS.md); exits 1 when a duplicate, a miss or an
 * unaccounted occurrence was found.
 *
 *   --minutes 10          total length (warm-up + faults + settle), setup excluded
 *   --replicas 5 --ticks 100 --longs 10 --slows 4
 *   --lock 4s             the replicas' --lock (default: the engine's default)
 *   --faults kill,stop,redis,clock,slow
 *   --epsilon 250         ms a stale claimant's call may stay open while its process runs
 *   --redis-crash         stop Redis with SIGKILL (and run it with appendfsync always)
 */
import { installCleanup } from '../lib/procs.js';
import { beginRun, reportFigures, setRunNote } from '../lib/report.js';
import { Flags } from '../lib/util.js';
import { FAULT_KINDS, runSoak, soakRows, type FaultKind } from './soak.js';

export async function soakMain(argv: readonly string[]): Promise<number> {
  const f = new Flags(argv);
  const faults = f.list('faults', [...FAULT_KINDS]) as FaultKind[];
  for (const k of faults) if (!FAULT_KINDS.includes(k)) throw new Error(`unknown fault "${k}"; known: ${FAULT_KINDS.join(', ')}`);
  setRunNote(f.str('note', ''));
  await beginRun();
  const r = await runSoak({
    minutes: f.num('minutes', 10),
    replicas: f.num('replicas', 5),
    ticks: f.num('ticks', 100),
    longs: f.num('longs', 10),
    slows: f.num('slows', 4),
    lock: f.str('lock', '4s'),
    faults,
    epsilonMs: f.num('epsilon', 250),
    redisCrash: f.bool('redis-crash'),
    log: (l) => process.stdout.write(`${l}\n`),
  });
  const bad = r.duplicates.total + r.misses.total + r.unaccounted.total + r.crashes.length;
  await reportFigures(
    `soak: ${r.options.replicas} replicas (lock ${r.options.lock}), ${r.options.ticks} + ${r.options.longs} + ${r.options.slows} schedules, ${r.options.minutes} min, faults ${r.options.faults.join(', ')}`,
    soakRows(r),
    [
      `Definitions: bench/soak/soak.ts. Live-overlap tolerance ${r.options.epsilonMs} ms.`,
      ...(r.crashes.length ? [`Unexpected replica exits: ${r.crashes.map((c) => `${c.replica} (${c.code ?? c.signal}) ${c.stderr.slice(-300)}`).join('; ')}`] : []),
      ...r.examples.slice(0, 10).map((e) => `example: ${e}`),
    ],
    {
      key: 'soak',
      figures: { occurrences: r.expected, duplicates: r.duplicates.total, misses: r.misses.total, unaccounted: r.unaccounted.total, minutes: r.options.minutes },
    },
  );
  return bad === 0 ? 0 : 1;
}

// Run when executed directly (not when imported by bench/run.ts).
if (import.meta.url === `file://${process.argv[1]}`) {
  installCleanup();
  soakMain(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (err: unknown) => {
      process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
      process.exit(2);
    },
  );
}
