// The compose flock's HTTP receiver: prints one line per call of an http job (which replica, which occurrence,
// which fencing token) and answers 200. `docker compose logs -f receiver` shows runs arriving and moving.
import { createServer } from 'node:http';

const port = Number(process.env.PORT ?? 8787);
createServer((req, res) => {
  let body = '';
  req.on('data', (d) => (body += d));
  req.on('end', () => {
    let b = {};
    try {
      b = JSON.parse(body);
    } catch {
      // not a cronflock call: print the path only
    }
    console.log(`${new Date().toISOString()} ${req.method} ${req.url} ${b.occurrence ?? ''} replica=${b.replica ?? '?'} token=${b.fencingToken ?? '?'}`);
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}\n');
  });
}).listen(port, '0.0.0.0', () => console.log(`receiver listening on :${port}`));
process.on('SIGTERM', () => process.exit(0));
