// A receiver of cronflock's http job calls that refuses stale or forged work (see the README, "Receiving
// cronflock's calls safely"). Run: CRONFLOCK_SIGNING_KEY=… PORT=8080 node examples/receiver/server.mjs
//
// Every call is checked with cronflock/receiver: the x-cronflock-signature header (HMAC-SHA256 over
// "t.body" with the shared key; during a key rotation set CRONFLOCK_SIGNING_KEY_PREVIOUS too), a replay of the
// same signature, and the fencing token: a call whose fencingToken is lower than one already seen for its
// occurrence comes from a stale claimant (paused past its lease) and is refused with 409.
//
// The fencing store here is in memory (one process). Several receiver processes share one store: use
// redisFencingStore(ioredisClient), or postgresFencingStore(pgClient) inside the transaction that does the work.
import { createServer } from 'node:http';
import { createReplayGuard, memoryFencingStore, receiveCronflockCall } from 'cronflock/receiver';

const keys = [process.env.CRONFLOCK_SIGNING_KEY, process.env.CRONFLOCK_SIGNING_KEY_PREVIOUS].filter(Boolean);
if (keys.length === 0) {
  console.error('set CRONFLOCK_SIGNING_KEY (the key the schedule\'s signing: block names)');
  process.exit(2);
}
const options = { keys, toleranceS: 300, replay: createReplayGuard(), fencing: memoryFencingStore() };

const server = createServer(async (req, res) => {
  const call = await receiveCronflockCall(req, options);
  if (!call.ok) {
    console.log(JSON.stringify({ accepted: false, status: call.status, reason: call.reason, message: call.message }));
    res.writeHead(call.status, { 'content-type': 'text/plain' }).end(`${call.reason}\n`);
    return;
  }
  const { occurrence, fencingToken, attempt } = call.body;
  // Do the work here, passing fencingToken on to anything that can refuse stale writers.
  console.log(JSON.stringify({ accepted: true, occurrence, fencingToken, attempt }));
  res.writeHead(200, { 'content-type': 'text/plain' }).end('ok\n');
});
server.listen(Number(process.env.PORT ?? 8080), process.env.HOST ?? '127.0.0.1', () => {
  console.log(JSON.stringify({ listening: server.address().port }));
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
