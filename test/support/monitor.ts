/**
 * Redis MONITOR on a plain socket, for tests that count the commands a flock sends. ioredis's `monitor()` can
 * throw "Command queue state error" from its socket handler when a monitored line arrives with MONITOR's +OK
 * (seen under load), which fails the test for a reason in the client; a line reader has no queue to confuse.
 * Each line is `+<time> [<db> <source>] "<cmd>" "<arg>" …` (source `lua` for commands a script ran).
 */
import { connect, type Socket } from 'node:net';

/** A monitored command: its source (`lua` or client address) and its arguments, the command first. */
export interface MonitoredCommand {
  source: string;
  args: string[];
}

/** Parses one MONITOR line; undefined for anything else (the +OK, a blank). */
export function parseMonitorLine(line: string): MonitoredCommand | undefined {
  const m = /^\+\d+\.\d+ \[\d+ ([^\]]+)\] (.*)$/.exec(line);
  if (!m) return undefined;
  const args: string[] = [];
  const re = /"((?:[^"\\]|\\.)*)"/g;
  for (let a = re.exec(m[2]!); a; a = re.exec(m[2]!)) args.push(a[1]!.replace(/\\(.)/g, '$1'));
  return { source: m[1]!, args };
}

/** Starts MONITOR on `url`'s server (no AUTH: test servers); `onCommand` gets every command after +OK. */
export async function monitorCommands(url: string, onCommand: (c: MonitoredCommand) => void): Promise<{ close(): void }> {
  const u = new URL(url);
  const socket: Socket = connect(Number(u.port), u.hostname);
  socket.setEncoding('utf8');
  let buffered = '';
  let ok!: () => void;
  const started = new Promise<void>((resolve, reject) => {
    ok = resolve;
    socket.once('error', reject);
  });
  socket.on('data', (chunk: string) => {
    buffered += chunk;
    let nl = buffered.indexOf('\r\n');
    while (nl >= 0) {
      const line = buffered.slice(0, nl);
      buffered = buffered.slice(nl + 2);
      if (line === '+OK') ok();
      else {
        const c = parseMonitorLine(line);
        if (c) onCommand(c);
      }
      nl = buffered.indexOf('\r\n');
    }
  });
  socket.on('error', () => undefined); // the server stopping at the end of a test
  socket.write('MONITOR\r\n');
  await started;
  return { close: () => socket.destroy() };
}
