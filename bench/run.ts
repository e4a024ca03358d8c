/**
 * `npm run bench -- <scenario> [flags]`: figures for cronflock measured side by side with the peers a user would
 * pick instead, on this machine, with real replica processes and a real redis-server. Each scenario prints its
 * tables with date, machine, load at the start, Node, Redis and package versions; appends them in full to
 * bench/history/<YYYY-MM-DD>.md; and makes them the current figures of their setting in bench/current.json, from
 * which bench/RESULTS.md (current figures and issue 16's targets, met or missed) is rewritten (bench/lib/report.ts).
 *
 *   throughput  --replicas 1,3,5 --schedules 1000,10000,100000 --seconds 15   cronflock (jittered, jitter 0) vs BullMQ Job Schedulers
 *               (--redis-replicas 1 --redis-wait-replicas 1: the cost of WAIT after each claim and final state)
 *   burst       --schedules 100000 --jitters 0,60s                            one instant, jitter 0 vs 60 s
 *   failover    --trials 30 --locks default,1s,500ms                          vs a lease singleton (15/10/2 s)
 *   idle        --schedules 1000000 --due 10                                  RSS/CPU with many registered schedules
 *   api         --schedules 10000 --requests 300                              the dashboard's GET /api/v1/schedules latency
 *   health      --schedules 100000 --modes on,top:100                         cost of the per-schedule health metrics
 *   script-args --claims 20000 --plans 200                                    claim/plan script cost, argument forms
 *   store       --schedules 100000 --replicas 3 --rate 1000 --seconds 10    stored schedules followed by replicas vs BullMQ upsertJobScheduler
 *   wakeup      --seconds 3 --together 8                                      Redis CPU of a script call that wakes Redis vs calls arriving together
 *   soak        --minutes 10                                                  the chaos soak (also `npm run soak`)
 *   results                                                                   rewrite bench/RESULTS.md from bench/current.json
 *
 * Every scenario takes `--note "…"`: a remark printed with each of its tables (e.g. that the machine was busy).
 *
 * Scenario modules are in bench/scenarios/, peers in bench/peers/, the soak in bench/soak/.
 */
import { installCleanup } from './lib/procs.js';
import { beginRun, setRunNote, writeCurrent } from './lib/report.js';
import { Flags } from './lib/util.js';
import { burst } from './scenarios/burst.js';
import { failover } from './scenarios/failover.js';
import { health } from './scenarios/health.js';
import { idle } from './scenarios/idle.js';
import { api } from './scenarios/api.js';
import { scriptArgs } from './scenarios/script-args.js';
import { store } from './scenarios/store.js';
import { throughput } from './scenarios/throughput.js';
import { soakMain } from './soak/main.js';
import { wakeup } from './scenarios/wakeup.js';

const scenario = process.argv[2] ?? 'throughput';
const flags = new Flags(process.argv.slice(3));
const scenarios: Record<string, () => Promise<number | void>> = {
  throughput: () => throughput(flags),
  burst: () => burst(flags),
  failover: () => failover(flags),
  idle: () => idle(flags),
  api: () => api(flags),
  health: () => health(flags),
  'script-args': () => scriptArgs(flags),
  store: () => store(flags),
  wakeup: () => wakeup(flags),
  soak: () => soakMain(process.argv.slice(3)),
  results: async () => writeCurrent(),
};
if (!scenarios[scenario]) {
  process.stderr.write(`unknown scenario "${scenario}"; choose one of: ${Object.keys(scenarios).join(', ')}\n`);
  process.exit(2);
}
installCleanup();
setRunNote(flags.str('note', ''));
beginRun()
  .then(() => scenarios[scenario]!())
  .then(
  (code) => process.exit(typeof code === 'number' ? code : 0),
  (err: unknown) => {
    process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
    process.exit(1);
  },
);
