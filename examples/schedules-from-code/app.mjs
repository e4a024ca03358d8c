// Per-customer schedules managed from code (see the README, "Schedules from code"). One process here plays both
// parts a real application has: the replica that runs the jobs (start as many processes as you like: every
// replica is equal), and the code that creates, changes and removes schedules as customers come, change plans
// and leave (an API handler, a sign-up flow).
//
// Run: REDIS_URL=redis://localhost:6379 node examples/schedules-from-code/app.mjs
//   CUSTOMERS=acme,globex,initech (default)  RUN_S=20 (how long to run, default: until Ctrl-C)
import { connectFlock, startReplica } from 'cronflock';

const redis = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const namespace = process.env.NAMESPACE ?? 'reports-example';
const customers = (process.env.CUSTOMERS ?? 'acme,globex,initech').split(',');
const say = (event) => console.log(JSON.stringify({ at: new Date().toISOString(), ...event }));

// 1. A replica inside the application, with its job functions registered by name.
const replica = await startReplica({
  redis,
  namespace,
  logger: (await import('pino')).pino({ level: 'warn' }),
  jobs: {
    // params are the schedule's own; occurrence says which due time this run is (and its fencing token).
    sendReport: async ({ params, occurrence }) => {
      say({ event: 'report', customer: params.customer, format: params.format, due: new Date(occurrence.dueMs).toISOString() });
      return { sent: true };
    },
  },
});

// 2. Schedules as data: one per customer. A definition is a schedule file's entry, validated the same way.
const flock = await connectFlock({ redis, namespace, by: 'example-app' });
const reportOf = (customer, format = 'pdf', cron = '*/2 * * * * *') => ({
  name: `report-${customer}`,
  cron, // every 2 s for the demo; a real one would be e.g. '0 8 * * 1-5' with timeZone: 'Europe/Berlin'
  jitter: '500ms',
  concurrencyPolicy: 'Forbid',
  job: { kind: 'handler', handler: 'sendReport', params: { customer, format } },
});
for (const c of customers) {
  const r = await flock.schedules.upsert(reportOf(c));
  if (!r.ok) throw r.error;
  say({ event: 'upserted', schedule: r.name, version: r.version });
}

// A bad definition is refused whole, with the fields named (nothing is written).
const bad = await flock.schedules.upsert({ name: 'report-bad', cron: 'every day', job: { kind: 'handler', handler: 'sendReport' } });
if (!bad.ok) say({ event: 'refused', schedule: 'report-bad', problems: bad.error.problems });

// A customer changes plan: compare-and-set on the version read, so a concurrent change is not overwritten.
setTimeout(async () => {
  const current = await flock.schedules.get(`report-${customers[0]}`);
  const r = await flock.schedules.upsert(reportOf(customers[0], 'csv'), { ifVersion: current.version });
  say({ event: r.ok ? 'changed' : 'change refused', schedule: `report-${customers[0]}`, ...(r.ok ? { version: r.version } : { reason: r.error.message }) });
}, 4_000);
// A customer leaves: its schedule stops after a run in flight.
setTimeout(async () => {
  const r = await flock.schedules.remove(`report-${customers.at(-1)}`);
  say({ event: 'removed', schedule: `report-${customers.at(-1)}`, ok: r.ok });
}, 6_000);

const stop = async () => {
  // Leave the flock's schedules in place for the next run of the application: they are data, not process state.
  await flock.close();
  await replica.stop();
  say({ event: 'stopped' });
  process.exit(0);
};
process.once('SIGINT', stop);
process.once('SIGTERM', stop);
if (process.env.RUN_S) setTimeout(stop, Number(process.env.RUN_S) * 1000);
