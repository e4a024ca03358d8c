/**
 * cronflock's Lua scripts: one `.lua` file each in `runner/redis/lua/`, loaded here and called by name.
 * (Model: BullMQ's `src/commands/*.lua`, its `includes/` and its script loader.)
 *
 * - **A header per script.** Each file starts with a `--[[ … ]]` block: `<name>: what it does`, then one line per
 *   `KEYS[n]`, per `ARGV[n]` (`ARGV[n..]` for a variable tail) and a `Returns` section. The number of keys is
 *   read from it, so the header cannot drift from how the script is called; `lua.test.ts` checks it against
 *   the body and calls every script.
 * - **Includes.** A line `-- @include "includes/record.lua"` (relative to the including file) is replaced by
 *   that file, each file once per script, recursively: the Redis-clock reading (`includes/now.lua`) and the
 *   run-record helpers (`includes/record.lua`) are written once.
 * - **Defined once per connection**, all of them, when the connection is made (connect.ts), with ioredis
 *   `defineCommand` (EVALSHA, falling back to EVAL when the server does not have the script yet), under the
 *   command name `cronflock<Name>` (`claim` → `cronflockClaim`). All at once and first: ioredis' auto-pipelining
 *   copies a connection's commands into each pipeline it opens, so a command defined while a pipeline of the
 *   same tick is open would be missing from it. The scripts themselves are not auto-pipelined
 *   ({@link SCRIPT_COMMANDS}, connect.ts): each call is written at once.
 * - **Every key a script touches by name is passed in KEYS** (a Redis Cluster routes on them); all of a
 *   flock's keys share its hash tag, so prefixes passed in ARGV stay in the same slot.
 * - **Long argument lists are one packed argument.** A script that takes more than four arguments takes them
 *   as one MessagePack map in ARGV[1] (`local args = cmsgpack.unpack(ARGV[1])`), its fields listed by name in
 *   the header (`ARGV[1] packed:` then one `<field> <what>` line each); callers pass an object, which is
 *   checked against that list and packed here. Decoding the claim's 14 arguments this way costs Redis what
 *   reading them positionally does (bench/scenarios/script-args.ts).
 *
 * The files ship in `dist/`: `npm run build` copies `runner/redis/lua/` to `dist/runner/redis/lua/`, and this
 * module reads them beside itself in either layout.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Packr } from 'msgpackr';
import type { RedisClient } from './connect.js';

/** The folder of the `.lua` files, beside this module (sources or dist/). */
export const LUA_DIR = fileURLToPath(new URL('./lua/', import.meta.url));

/** Every script, by file name (without `.lua`). */
export const SCRIPT_NAMES = [
  'plan',
  'heartbeat',
  'claim',
  'enqueue-manual',
  'renew',
  'finish',
  'release',
  'sweep',
  'abandon',
  'due-delayed',
  'backfill-enqueue',
  'backfill-admit',
  'backfill-cancel',
  'publish-definitions',
  'definitions-changes',
  'is-live-member',
  'time',
  'job-lock-acquire',
  'job-lock-renew',
  'job-lock-release',
  'job-checkpoint',
  'outbox-take',
  'outbox-settle',
  'outbox-complete',
  'outbox-tick',
  'store-upsert',
  'store-remove',
  'owned-names',
  'handoff-take',
] as const;

/** The name of a script: its file name without `.lua`. */
export type ScriptName = (typeof SCRIPT_NAMES)[number];

/** The ioredis command a script is defined as on a connection, e.g. `cronflockEnqueueManual` for enqueue-manual. */
export function scriptCommand(name: ScriptName): string {
  return `cronflock${name.replace(/(^|-)([a-z])/g, (_m, _dash, c: string) => c.toUpperCase())}`;
}

/** Every script's ioredis command ({@link scriptCommand}). */
export const SCRIPT_COMMANDS: readonly string[] = SCRIPT_NAMES.map(scriptCommand);

/** A script's contract, from its header. */
export interface ScriptHeader {
  /** The first paragraph, starting `<name>:`. */
  summary: string;
  /** What each KEYS[n] is, n = 1… */
  keys: string[];
  /** What each ARGV[n] is, n = 1…; the last may be a variable tail (`ARGV[n..]`). */
  argv: string[];
  /** Whether the last ARGV entry is a variable tail. */
  argvTail: boolean;
  /** For a script whose ARGV[1] is one packed map: its fields, by name (what each is). */
  packed?: Map<string, string>;
  /** The `Returns` section. */
  returns: string;
}

/** A loaded script: its composed source (includes resolved) and its contract. */
export interface LuaScript {
  name: ScriptName;
  /** The ioredis command it is defined as on each connection. */
  command: string;
  numberOfKeys: number;
  /** The source sent to Redis. */
  lua: string;
  header: ScriptHeader;
}

/** A script file that cannot be used (a missing or malformed header, an include that cannot be read). */
export class ScriptFileError extends Error {
  readonly code = 'LUA_SCRIPT_INVALID';
  constructor(file: string, reason: string) {
    super(`${file}: ${reason}`);
    this.name = 'ScriptFileError';
  }
}

const INCLUDE = /^--\s*@include\s+"([^"]+)"\s*$/;

/**
 * The source of the script file `file` (an absolute path) with its includes resolved, each included file once.
 * A file already included (or the file itself) is not included again, so includes may include each other.
 * @throws ScriptFileError for an include that cannot be read.
 */
export function composeScript(file: string): string {
  return compose(file, new Set(), []);
}

/** Source of `file` with its includes resolved; files already in `seen` are left out (each once per script). */
function compose(file: string, seen: Set<string>, stack: readonly string[]): string {
  const root = stack[0] ?? file;
  const rel = (f: string): string => path.relative(path.dirname(root), f);
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new ScriptFileError(rel(root), `cannot read ${rel(file)}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  seen.add(file);
  return text
    .split('\n')
    .map((line) => {
      const m = INCLUDE.exec(line);
      if (!m) return line;
      const inc = path.resolve(path.dirname(file), m[1]!);
      return seen.has(inc) ? `-- (${m[1]} included above)` : compose(inc, seen, [...stack, file]).replace(/\n$/, '');
    })
    .join('\n');
}

/**
 * Parses the `--[[ … ]]` header at the top of a script.
 * @throws ScriptFileError naming what is missing or out of order.
 */
export function parseHeader(name: string, text: string, file = `${name}.lua`): ScriptHeader {
  const m = /^--\[\[\n([\s\S]*?)\n\]\]/.exec(text);
  if (!m) throw new ScriptFileError(file, 'must start with a --[[ … ]] header (what it does, KEYS, ARGV, Returns)');
  const lines = m[1]!.split('\n').map((l) => l.replace(/^ {2}/, ''));
  const end = lines.findIndex((l) => l.trim() === '');
  const summary = lines.slice(0, end < 0 ? lines.length : end).join('\n');
  if (!summary.startsWith(`${name}: `)) throw new ScriptFileError(file, `the header must start with "${name}: " and say what the script does`);
  const keys: string[] = [];
  const argv: string[] = [];
  let argvTail = false;
  let returns: string | undefined;
  let last: string[] | undefined;
  let packed: Map<string, string> | undefined;
  let field: string | undefined;
  for (const line of lines) {
    if (returns !== undefined) {
      returns += `\n${line}`;
      continue;
    }
    const k = /^KEYS\[(\d+)\] (.+)$/.exec(line);
    const a = /^ARGV\[(\d+)(\.\.)?\] (.+)$/.exec(line);
    if (k) {
      if (Number(k[1]) !== keys.length + 1) throw new ScriptFileError(file, `KEYS[${k[1]}] out of order: expected KEYS[${keys.length + 1}]`);
      keys.push(k[2]!);
      last = keys;
    } else if (a) {
      if (Number(a[1]) !== argv.length + 1) throw new ScriptFileError(file, `ARGV[${a[1]}] out of order: expected ARGV[${argv.length + 1}]`);
      if (argvTail) throw new ScriptFileError(file, 'a variable tail (ARGV[n..]) must be the last ARGV entry');
      argv.push(a[3]!);
      argvTail = a[2] !== undefined;
      last = argv;
      field = undefined;
      if (/^packed\b/.test(a[3]!)) {
        if (a[1] !== '1') throw new ScriptFileError(file, 'only ARGV[1] may be packed');
        packed = new Map();
      }
    } else if (/^Returns\b/.test(line)) {
      returns = line;
    } else if (packed && last === argv && argv.length === 1 && /^ {2}\S/.test(line)) {
      const f = /^ {2}(\w+) +(.+)$/.exec(line);
      if (!f) throw new ScriptFileError(file, `a packed field line must be "<field> <what it is>": ${JSON.stringify(line.trim())}`);
      field = f[1]!;
      packed.set(field, f[2]!);
    } else if (packed && field && last === argv && argv.length === 1 && /^ {4,}\S/.test(line)) {
      packed.set(field, `${packed.get(field)!} ${line.trim()}`); // a field's continuation line
    } else if (last && /^\s+\S/.test(line)) {
      last[last.length - 1] += ` ${line.trim()}`; // a continuation line
    } else {
      last = undefined;
    }
  }
  if (returns === undefined) throw new ScriptFileError(file, 'the header has no Returns section');
  if (packed && (argv.length !== 1 || packed.size === 0)) throw new ScriptFileError(file, 'a packed ARGV[1] lists its fields and is the only argument');
  return { summary, keys, argv, argvTail, returns, ...(packed ? { packed } : {}) };
}

const loaded = new Map<ScriptName, LuaScript>();

/** Loads (once) the script `name` from {@link LUA_DIR}. @throws ScriptFileError */
export function loadScript(name: ScriptName): LuaScript {
  let s = loaded.get(name);
  if (!s) {
    const file = path.join(LUA_DIR, `${name}.lua`);
    const lua = composeScript(file);
    const header = parseHeader(name, lua);
    const command = scriptCommand(name);
    s = { name, command, numberOfKeys: header.keys.length, lua, header };
    loaded.set(name, s);
  }
  return s;
}

type ScriptFn = (...args: (string | number | Buffer)[]) => Promise<unknown>;
type Arg = string | number | Buffer;

/** MessagePack as Redis' cmsgpack reads it: plain maps and arrays (no msgpackr records), undefined as nil. */
const packr = new Packr({ useRecords: false, encodeUndefinedAsNil: true });

/** `args` packed into one MessagePack map (a script's packed ARGV[1]). */
export function packArgs(args: Readonly<Record<string, unknown>>): Buffer {
  return packr.pack(args);
}

const perConnection = new WeakMap<RedisClient, Scripts>();

/** The scripts on one connection: defined there once, called by name. Get it with {@link Scripts.on}. */
export class Scripts {
  private readonly fns = new Map<ScriptName, { script: LuaScript; fn: ScriptFn }>();

  private constructor(private readonly redis: RedisClient) {
    for (const name of SCRIPT_NAMES) {
      const script = loadScript(name);
      if (!(script.command in redis)) redis.defineCommand(script.command, { numberOfKeys: script.numberOfKeys, lua: script.lua });
      this.fns.set(name, { script, fn: (redis as unknown as Record<string, ScriptFn>)[script.command]!.bind(redis) });
    }
  }

  /** The scripts of `redis`, every one defined there (one instance per connection, however many callers ask). */
  static on(redis: RedisClient): Scripts {
    let s = perConnection.get(redis);
    if (!s) perConnection.set(redis, (s = new Scripts(redis)));
    return s;
  }

  /**
   * Runs script `name` with `keys` (exactly as many as its header declares) and its arguments: a list for a
   * positional script, an object with exactly the header's fields for a packed one.
   * @returns what the script returns (shapes in its header).
   * @throws Error when the keys or arguments do not fit the header (a bug in the caller); what ioredis throws
   *   otherwise.
   */
  run(name: ScriptName, keys: readonly string[], args: readonly Arg[] | Readonly<Record<string, unknown>> = []): Promise<unknown> {
    const { fn, argv } = this.call(name, keys, args);
    return fn(...argv);
  }

  /**
   * Runs script `name` like {@link Scripts.run}, then Redis `WAIT replicas timeoutMs` in the same pipeline: one
   * round trip, on the same connection (and, in a Cluster, the same node: the pipeline goes to the node of the
   * script's keys), so the WAIT covers the script's writes. WAIT blocks that connection in Redis until enough
   * replicas acknowledged or the timeout passed: use a connection nothing else waits on.
   * @returns the script's result and how many replicas acknowledged its writes within `timeoutMs`.
   * @throws the script's error, or WAIT's.
   */
  async runThenWait(
    name: ScriptName,
    keys: readonly string[],
    args: readonly Arg[] | Readonly<Record<string, unknown>>,
    replicas: number,
    timeoutMs: number,
  ): Promise<{ result: unknown; acked: number }> {
    const { command, argv } = this.call(name, keys, args);
    const p = this.redis.pipeline();
    (p as unknown as Record<string, (...a: Arg[]) => unknown>)[command]!(...argv);
    p.wait(replicas, timeoutMs);
    const out = (await p.exec()) ?? [];
    for (const [err] of out) if (err) throw err;
    return { result: out[0]?.[1], acked: Number(out[1]?.[1]) };
  }

  /** The bound command of script `name` and its arguments, checked against the script's header. */
  private call(name: ScriptName, keys: readonly string[], args: readonly Arg[] | Readonly<Record<string, unknown>>): { fn: ScriptFn; command: string; argv: Arg[] } {
    const entry = this.fns.get(name);
    if (!entry) throw new Error(`no script ${name}`); // unreachable: every name is defined in the constructor
    const { numberOfKeys, header, command } = entry.script;
    if (keys.length !== numberOfKeys) throw new Error(`script ${name} takes ${numberOfKeys} keys, got ${keys.length}`);
    if (Array.isArray(args)) {
      if (header.packed) throw new Error(`script ${name} takes its arguments packed: pass an object with ${[...header.packed.keys()].join(', ')}`);
      return { fn: entry.fn, command, argv: [...keys, ...(args as readonly Arg[])] };
    }
    const fields = header.packed;
    if (!fields) throw new Error(`script ${name} takes positional arguments: pass a list`);
    const given = Object.keys(args);
    const wrong = [...given.filter((f) => !fields.has(f)).map((f) => `unknown ${f}`), ...[...fields.keys()].filter((f) => !(f in args)).map((f) => `missing ${f}`)];
    if (wrong.length > 0) throw new Error(`script ${name}: ${wrong.join(', ')}`);
    return { fn: entry.fn, command, argv: [...keys, packArgs(args as Readonly<Record<string, unknown>>)] };
  }
}
