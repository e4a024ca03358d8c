/**
 * Diagnostics for the benches (`BENCH_DIAG_DIR`): a MONITOR of the bench's private redis-server for a few seconds,
 * grouped by script (EVALSHA sha → cronflock's or BullMQ's script name), the commands each script ran inside Lua,
 * and how many times each script was called per occurrence (the occurrence key or BullMQ job id in its arguments).
 * MONITOR costs Redis time: the figures of a window with it on are not the bench's figures.
 */
import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { EventEmitter } from 'node:events';
import { connect } from 'node:net';
import { createRequire } from 'node:module';
import { loadScript, SCRIPT_NAMES } from '../../runner/redis/script-loader.js';

function sha1(s: string): string {
  return createHash('sha1').update(s).digest('hex');
}

/** sha → script name, for cronflock's scripts and BullMQ's. */
function scriptNames(): Map<string, string> {
  const m = new Map<string, string>();
  for (const n of SCRIPT_NAMES) m.set(sha1(loadScript(n).lua), `cf:${n}`);
  for (const s of Object.values(createRequire(import.meta.url)('bullmq/dist/cjs/scripts/index.js') as Record<string, { name: string; content: string }>)) {
    if (s && typeof s.content === 'string') m.set(sha1(s.content), `bull:${s.name}`);
  }
  return m;
}

/** An occurrence key (`b12@2026-…Z`), possibly inside a record key or a BullMQ job id / key. */
const OCC = /b-?b?\d+@\d{4}-\d\d-\d\dT[0-9:._-]+Z(?:-[0-9a-f]{8})?/;

/**
 * Records Redis MONITOR output for `seconds` and writes the summary (JSON) and the first lines (raw) to
 * `file` and `file.raw.txt`.
 */
export async function monitorFor(url: string, seconds: number, file: string): Promise<void> {
  const names = scriptNames();
  // A plain socket: ioredis' monitor mode throws "Command queue state error" when lines arrive early.
  const u = new URL(url);
  const sock = connect({ host: u.hostname, port: Number(u.port) });
  sock.on('error', () => undefined);
  sock.write('MONITOR\r\n');
  const mon = new EventEmitter();
  let buf = '';
  sock.on('data', (b: Buffer) => {
    buf += b.toString('latin1');
    let i;
    while ((i = buf.indexOf('\r\n')) >= 0) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 2);
      const m = /^\+(\S+) \[\d+ ([^\]]+)\] (.*)$/.exec(line);
      if (!m) continue;
      const args = [...m[3]!.matchAll(/"((?:[^"\\]|\\.)*)"/g)].map((x) => x[1]!);
      mon.emit('monitor', m[1], args, m[2]);
    }
  });
  const top = new Map<string, number>(); // top-level command or script name → calls
  const innerBy = new Map<string, Map<string, number>>(); // script → inner command → count (inner lines before the EVALSHA)
  const innerAfter = new Map<string, Map<string, number>>(); // same, attributing inner lines to the preceding EVALSHA
  const perId = new Map<string, Map<string, number>>(); // script/command → identity → calls
  const raw: string[] = [];
  let pending = new Map<string, number>();
  let lastScript = '';
  let lines = 0;
  const bump = (m: Map<string, number>, k: string, n = 1): void => {
    m.set(k, (m.get(k) ?? 0) + n);
  };
  const sub = (m: Map<string, Map<string, number>>, k: string): Map<string, number> => {
    let x = m.get(k);
    if (!x) m.set(k, (x = new Map()));
    return x;
  };
  const timeline: string[] = []; // when the planner's scripts ran, by client
  mon.on('monitor', (time: string, args: string[], source: string) => {
    lines++;
    if (raw.length < 3000) raw.push(`${source} ${args.map((a) => String(a).slice(0, 80)).join(' ')}`);
    const cmd = String(args[0]).toLowerCase();
    if (source === 'lua') {
      bump(pending, cmd);
      if (lastScript) bump(sub(innerAfter, lastScript), cmd);
      return;
    }
    let name = cmd;
    if (cmd === 'evalsha') name = names.get(String(args[1])) ?? `sha:${String(args[1]).slice(0, 8)}`;
    else if (cmd === 'eval') name = names.get(sha1(String(args[1]))) ?? 'eval:?';
    bump(top, name);
    if (/^cf:(heartbeat|plan|publish-definitions|sweep|definitions-changes)$/.test(name)) timeline.push(`${time} ${source} ${name}`);
    if (cmd === 'evalsha' || cmd === 'eval') {
      const inner = sub(innerBy, name);
      for (const [k, v] of pending) bump(inner, k, v);
      lastScript = name;
    } else lastScript = '';
    pending = new Map();
    const id = args.slice(1).map(String).map((a) => OCC.exec(a)?.[0]).find((x) => x !== undefined);
    if (id) bump(sub(perId, name), id);
  });
  await new Promise((r) => setTimeout(r, seconds * 1000));
  sock.destroy();
  const obj = (m: Map<string, number>) => Object.fromEntries([...m].sort((a, b) => b[1] - a[1]));
  const perIdSummary: Record<string, unknown> = {};
  for (const [k, m] of perId) {
    const counts = [...m.values()];
    const hist: Record<string, number> = {};
    for (const c of counts) hist[c >= 10 ? '10+' : String(c)] = (hist[c >= 10 ? '10+' : String(c)] ?? 0) + 1;
    perIdSummary[k] = { ids: m.size, calls: counts.reduce((a, b) => a + b, 0), max: Math.max(...counts), hist };
  }
  const summary = {
    seconds,
    lines,
    top: obj(top),
    innerBefore: Object.fromEntries([...innerBy].map(([k, v]) => [k, obj(v)])),
    innerAfter: Object.fromEntries([...innerAfter].map(([k, v]) => [k, obj(v)])),
    perId: perIdSummary,
    timeline,
  };
  writeFileSync(file, JSON.stringify(summary, null, 1));
  writeFileSync(`${file}.raw.txt`, raw.join('\n'));
}
