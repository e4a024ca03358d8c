/**
 * Peer for the throughput scenario: one BullMQ worker process consuming the jobs of BullMQ Job Schedulers
 * (`upsertJobScheduler`), the way a user would run them instead of cronflock. The processor is a no-op that
 * notes its start time and its lateness after the scheduled time (`job.opts.prevMillis`, the instant BullMQ
 * scheduled that iteration for).
 *
 * Forked with IPC. Env: BENCH_REDIS_URL, BENCH_PREFIX, BENCH_QUEUE, BENCH_CONCURRENCY.
 * Messages: in `{cmd: 'report', fromMs, toMs}` → out `{type: 'report', count, lateness: number[]}`;
 * out `{type: 'ready'}` once the worker runs.
 */
import { Worker } from 'bullmq';
import { Redis } from 'ioredis';

let n = 0;
let starts = new Float64Array(1 << 16);
let late = new Float64Array(1 << 16);

function note(startMs: number, latenessMs: number): void {
  if (n === starts.length) {
    const s = new Float64Array(n * 2);
    s.set(starts);
    starts = s;
    const l = new Float64Array(n * 2);
    l.set(late);
    late = l;
  }
  starts[n] = startMs;
  late[n] = latenessMs;
  n++;
}

const connection = new Redis(process.env.BENCH_REDIS_URL!, { maxRetriesPerRequest: null });
connection.on('error', () => undefined);
const worker = new Worker(
  process.env.BENCH_QUEUE ?? 'bench',
  async (job) => {
    const now = Date.now();
    const scheduled = Number(job.opts.prevMillis ?? job.timestamp + (job.opts.delay ?? 0));
    note(now, now - scheduled);
  },
  {
    connection,
    prefix: process.env.BENCH_PREFIX ?? '{bullbench}',
    concurrency: Number(process.env.BENCH_CONCURRENCY ?? 1000),
  },
);
worker.on('error', () => undefined);
void worker.waitUntilReady().then(() => process.send?.({ type: 'ready' }));

process.on('message', (m: { cmd: string; fromMs?: number; toMs?: number }) => {
  if (m.cmd === 'report') {
    const lateness: number[] = [];
    for (let i = 0; i < n; i++) if (starts[i]! >= m.fromMs! && starts[i]! < m.toMs!) lateness.push(late[i]!);
    process.send?.({ type: 'report', count: lateness.length, lateness });
  } else if (m.cmd === 'exit') {
    void worker.close(true).finally(() => process.exit(0));
  }
});
process.on('disconnect', () => process.exit(0));
