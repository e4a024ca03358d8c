/**
 * `cronflock apply | delete | list | tenants`: the stored schedules (runner/store/) from the command line, with
 * the same Redis options as the other one-shot commands. Every change is recorded in the audit log (via `cli`,
 * who: user@host, the version) by the store's own scripts.
 *
 * `apply -f` checks the WHOLE input before it writes anything: every file loads (file:line:col errors as
 * `validate` prints them), every schedule is a valid stored definition (no `group:` or `calendar:`: those belong
 * to one file), no name is owned by another source (a schedule file or Schedule resource whose replica is live
 * or was seen within NAME_HOLD_MS: runner/store/ownership.ts), and
 * no tenant would pass its limit. Any refusal stores nothing. Then each schedule is written (an upsert each);
 * should one still be refused by then (another writer got in between), the output says which were stored.
 */
import { readFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { hostname, userInfo } from 'node:os';
import type { Command } from 'commander';
import { LineCounter, parseDocument } from 'yaml';
import { redactDefinition } from '../../jobs/summary.js';
import { loadSchedules, type CompiledSchedule } from '../config/load.js';
import { YAML_OPTIONS } from '../config/precheck.js';
import { fieldPath, fieldSegments, formatError } from '../config/errors.js';
import { Locator } from '../config/yaml-position.js';
import { maxAliasCountOf } from '../config/yaml-aliases.js';
import type { RedisClient } from '../redis/connect.js';
import { Keyspace } from '../redis/keys.js';
import { checkDefinition } from '../store/definition.js';
import { ScheduleStore, TenantLimitArgumentError, type StoredSchedule } from '../store/store.js';
import { ownedElsewhere, ownerText } from '../store/ownership.js';
import { positiveIntArg } from './arg-parsers.js';
import { isOutcomeUnknown, outcomeUnknownMessage } from '../api/outcome-unknown.js';
import { addOneShotRedisOptions, CliError, DEFAULT_REDIS_TIMEOUT_S, withOneShotRedis, type RedisFlags } from './redis-target.js';
import { reportLoad } from './start-command.js';
import { iso, table } from './text.js';

type Flags = RedisFlags & { json?: boolean; reason?: string };

/** Who a CLI change is by: `user@host`. */
function whoAmI(): string {
  let user = 'unknown';
  try {
    user = userInfo().username;
  } catch {
    /* no user name (a container without passwd entry) */
  }
  return `${user}@${hostname()}`;
}

const print = (o: { json?: boolean }, value: unknown, text: string): void => {
  process.stdout.write(o.json ? `${JSON.stringify(value, null, 2)}\n` : text);
};

/** One schedule of the input, checked: what to write, and where it comes from (file:line). */
interface Checked {
  name: string;
  json: string;
  tenant: string;
  at: string;
}

/**
 * Loads and checks every schedule of `path` as a stored definition. @throws CliError listing every problem
 * (nothing is written).
 */
async function checkInput(path: string): Promise<Checked[]> {
  const res = await loadSchedules(path);
  if (reportLoad(res, false) > 0) throw new CliError(`${path}: refused (see the errors above); nothing was stored`);
  const byName = new Map<string, CompiledSchedule>(res.schedules.map((s) => [s.name, s]));
  const out: Checked[] = [];
  const problems: string[] = [];
  for (const f of res.files) {
    // Read with the loader's options (merge keys `<<` merged, as the loader and replicas read the file), so what is
    // stored is what the loader checked: without them `<<` would be stored as a key named "<<". A refusal is placed
    // at file:line:col of its field, as the loader's own errors are, by a positioned document parsed only then
    // (~2.7 KB a schedule: a clean file of 100,000 schedules does not pay for it).
    const text = await readFile(f.file, 'utf8');
    const parsed = parseDocument(text, YAML_OPTIONS);
    const data = parsed.toJS({ maxAliasCount: maxAliasCountOf(parsed) }) as { schedules?: unknown[] } | null;
    let positioned: Locator | undefined;
    const locator = (): Locator => {
      if (positioned === undefined) {
        const lineCounter = new LineCounter();
        positioned = new Locator(parseDocument(text, { ...YAML_OPTIONS, lineCounter }), (offset) => lineCounter.linePos(offset));
      }
      return positioned;
    };
    const located: { line: number; col: number; text: string }[] = [];
    for (const [i, entry] of (data?.schedules ?? []).entries()) {
      const c = await checkDefinition(entry, { baseDir: dirname(resolve(f.file)), writing: true });
      const name = (entry as { name?: string }).name ?? '?';
      const source = byName.get(name)?.source;
      const at = `${f.file}:${source?.line ?? 0}:${source?.col ?? 0}`;
      if (!c.ok) {
        for (const p of c.error.problems) {
          const segments = fieldSegments(entry, p.field);
          const path = ['schedules', i, ...segments];
          // The field inside the file's list (schedules[2].job.params.x), its keys as the file writes them (a key
          // YAML read as a number by its text); a field not in the data (a missing key) as the store names it.
          const field = fieldPath(segments) === p.field ? locator().fieldName(path) : `schedules[${i}]${p.field === '' ? '' : p.field.startsWith('[') ? p.field : `.${p.field}`}`;
          const pos = locator().position(path, false);
          located.push({ ...pos, text: formatError({ file: f.file, ...pos, field, reason: p.reason, ...(p.hint !== undefined ? { hint: p.hint } : {}) }) });
        }
        continue;
      }
      out.push({ name: c.schedule.name, json: c.json, tenant: c.schedule.tenant ?? '', at });
    }
    // In file order, as the loader's errors.
    problems.push(...located.sort((a, b) => a.line - b.line || a.col - b.col).map((x) => x.text));
  }
  if (problems.length > 0) {
    // As `validate` and the loader's refusal above: every error on its own line(s), then what happened.
    for (const p of problems) process.stderr.write(`${p}\n`);
    throw new CliError(`${path}: refused as stored schedules (see the errors above); nothing was stored`);
  }
  return out;
}

/**
 * The problems writing `input` would meet now: names a file or Schedule resource owns (runner/store/ownership.ts:
 * its replica live, or seen within NAME_HOLD_MS), and
 * tenants the input would take past their limit. Empty: go ahead.
 */
async function conflictsOf(redis: RedisClient, keys: Keyspace, store: ScheduleStore, input: readonly Checked[]): Promise<string[]> {
  const problems: string[] = [];
  const names = input.map((c) => c.name);
  const [owned, stored] = await Promise.all([ownedElsewhere(redis, keys, names), store.getMany(names)]);
  for (const c of input) {
    const o = owned.get(c.name);
    if (o) problems.push(`${c.at}: schedule "${c.name}" is defined by ${ownerText(o)}; a name is owned by one source: rename it, or remove it there first`);
  }
  const current = new Map<string, StoredSchedule>(stored.map((s) => [s.name, s]));
  const adding = new Map<string, number>();
  for (const c of input) if (c.tenant && current.get(c.name)?.tenant !== c.tenant) adding.set(c.tenant, (adding.get(c.tenant) ?? 0) + 1);
  if (adding.size > 0) {
    const t = await store.tenants();
    for (const [tenant, n] of adding) {
      const info = t.tenants.find((x) => x.tenant === tenant);
      const limit = info ? info.limit : t.defaultLimit; // info.limit null: its own "no limit", or no default
      const count = info?.count ?? 0;
      if (limit !== null && count + n > limit) {
        problems.push(`tenant "${tenant}": ${n} new schedule(s) would make ${count + n}, its limit is ${limit}; raise it with cronflock tenants set-limit ${tenant} <n>, or remove some of its schedules`);
      }
    }
  }
  return problems;
}

/** A `key=value` of `--label`, collected. */
function labelArg(v: string, prev: Record<string, string> = {}): Record<string, string> {
  const eq = v.indexOf('=');
  if (eq <= 0) throw new CliError(`--label ${v}: expected key=value, e.g. --label plan=gold`);
  return { ...prev, [v.slice(0, eq)]: v.slice(eq + 1) };
}

/** What a change that got no answer saw, for {@link outcomeUnknownMessage}: the command timeout it waited. */
const noAnswerWhy = (o: RedisFlags): string => `no answer within ${o.redisTimeout ?? DEFAULT_REDIS_TIMEOUT_S} s, --redis-timeout`;

/** Adds the stored-schedule commands to the program. */
export function addStoreCommands(program: Command): void {
  addOneShotRedisOptions(
    program
      .command('apply')
      .description('store the schedules of a schedule file or directory (create or change each); the whole input is checked first and refused whole')
      .requiredOption('-f, --file <path>', 'schedule file or directory')
      .option('--dry-run', 'check everything, write nothing')
      .option('--reason <text>', 'why (kept in the audit log: cronflock audit)')
      .option('--json', 'print JSON'),
  ).action(async (o: Flags & { file: string; dryRun?: boolean }) => {
    const input = await checkInput(o.file);
    const results = await withOneShotRedis(o, 'cannot store schedules in', async (redis) => {
      const keys = new Keyspace(o.namespace);
      const store = new ScheduleStore(redis, keys);
      const problems = await conflictsOf(redis, keys, store, input);
      if (problems.length > 0) throw new CliError(`${problems.join('\n')}\n${o.file}: refused; nothing was stored`);
      if (o.dryRun) return input.map((c) => ({ name: c.name, stored: false as const, message: 'would be stored (dry run)' }));
      const by = whoAmI();
      const out: { name: string; stored: boolean; version?: number; changed?: boolean; message: string }[] = [];
      for (const c of input) {
        const r = await store
          .write(c.name, c.json, c.tenant, { by, via: 'cli', ...(o.reason !== undefined ? { reason: o.reason } : {}) })
          .catch((err: unknown) => {
            if (!isOutcomeUnknown(err)) throw err;
            // Sent, no answer: it may be stored (a paused Redis runs it when it wakes), so not "failed".
            const rest = input.length - out.length - 1;
            const before = `stored before this: ${out.map((x) => x.name).join(', ') || 'none'}${rest > 0 ? `; the ${rest} after it were not sent` : ''}`;
            throw new CliError(
              `${c.at}: ${outcomeUnknownMessage(noAnswerWhy(o), `cronflock list --prefix ${c.name}: its version; cronflock audit --schedule ${c.name}`, 'with the same cronflock apply -f (a schedule stored already is answered unchanged)')}\n${before}`,
            );
          });
        if (!r.ok) {
          const done = out.map((x) => x.name).join(', ') || 'none';
          throw new CliError(`${c.at}: ${r.error.message}\nstored before this refusal: ${done}; the rest was not stored`);
        }
        out.push({ name: c.name, stored: true, version: r.version, changed: r.changed, message: r.changed ? `stored (version ${r.version})` : `unchanged (version ${r.version})` });
      }
      return out;
    });
    print(o, results, results.map((r) => `${r.name}: ${r.message}\n`).join('') || 'no schedules\n');
  });

  addOneShotRedisOptions(
    program
      .command('delete')
      .description('remove stored schedules: each stops after its run in flight; refused whole when one is not stored')
      .argument('<name...>', 'schedule names')
      .option('--if-version <n>', 'only if the (one) schedule is at this version', positiveIntArg)
      .option('--reason <text>', 'why (kept in the audit log: cronflock audit)')
      .option('--json', 'print JSON'),
  ).action(async (names: string[], o: Flags & { ifVersion?: number }) => {
    if (o.ifVersion !== undefined && names.length !== 1) throw new CliError('--if-version takes one schedule name');
    const out = await withOneShotRedis(o, 'cannot remove schedules from', async (redis) => {
      const store = new ScheduleStore(redis, new Keyspace(o.namespace));
      const found = new Set((await store.getMany(names)).map((s) => s.name));
      const missing = names.filter((n) => !found.has(n));
      if (missing.length > 0) {
        // A name owned by a schedule file or a Schedule resource is said so, with how to remove it there.
        const why = await Promise.all(missing.map((n) => store.notStored(n)));
        const owned = why.filter((w) => w.source !== undefined).map((w) => `${w.message}\n`).join('');
        const plain = missing.filter((_, i) => why[i]!.source === undefined);
        throw new CliError(`${owned}${plain.length > 0 ? `not stored: ${plain.join(', ')} (cronflock list shows the stored schedules)\n` : ''}nothing was removed`);
      }
      const by = whoAmI();
      const done: { name: string; version: number }[] = [];
      for (const name of names) {
        const r = await store
          .remove(name, { by, via: 'cli', ...(o.ifVersion !== undefined ? { ifVersion: o.ifVersion } : {}), ...(o.reason !== undefined ? { reason: o.reason } : {}) })
          .catch((err: unknown) => {
            if (!isOutcomeUnknown(err)) throw err;
            // Sent, no answer: it may be removed (a paused Redis runs it when it wakes), so not "failed".
            throw new CliError(
              `${name}: ${outcomeUnknownMessage(noAnswerWhy(o), `cronflock list --prefix ${name}: gone or not; cronflock audit --schedule ${name}`, `with cronflock delete ${name} if it is still stored`)}` +
                `${done.length > 0 ? `\nremoved before this: ${done.map((d) => d.name).join(', ')}` : ''}${names.length > done.length + 1 ? '; the rest was not sent' : ''}`,
            );
          });
        if (!r.ok) throw new CliError(`${r.error.message}${done.length > 0 ? `\nremoved before this: ${done.map((d) => d.name).join(', ')}` : ''}`);
        done.push({ name, version: r.version });
      }
      return done;
    });
    print(o, out, out.map((d) => `${d.name}: removed (version ${d.version})\n`).join(''));
  });

  addOneShotRedisOptions(
    program
      .command('list')
      .description('list the stored schedules, in name order, filtered by prefix, tenant and labels')
      .option('--prefix <text>', 'names starting with this')
      .option('--tenant <name>', "only this tenant's schedules")
      .option('--label <key=value>', 'only schedules with this label (repeat: all must match)', labelArg)
      .option('-n, --limit <n>', 'most schedules', positiveIntArg, 100)
      .option('--json', 'print JSON'),
  ).action(async (o: Flags & { prefix?: string; tenant?: string; label?: Record<string, string>; limit: number }) => {
    const items = await withOneShotRedis(o, 'cannot list schedules of', async (redis) => {
      const store = new ScheduleStore(redis, new Keyspace(o.namespace));
      const all: StoredSchedule[] = [];
      let cursor: string | undefined;
      do {
        const page = await store.list({
          limit: Math.min(1000, o.limit - all.length),
          ...(o.prefix !== undefined ? { prefix: o.prefix } : {}),
          ...(o.tenant !== undefined ? { tenant: o.tenant } : {}),
          ...(o.label !== undefined ? { labels: o.label } : {}),
          ...(cursor !== undefined ? { cursor } : {}),
        });
        all.push(...page.items);
        cursor = page.cursor;
      } while (cursor !== undefined && all.length < o.limit);
      return all;
    });
    // Secrets in a definition (URL user info and query values, header values, inline credentials) are never
    // printed: the API's redaction (jobs/summary.ts redactDefinition), so --json shows what GET /schedules/{name} does.
    print(
      o,
      items.map((s) => ({ ...s, definition: redactDefinition(s.definition) })),
      table(
        ['NAME', 'VERSION', 'TENANT', 'LABELS', 'CRON', 'UPDATED (UTC)', 'BY'],
        items.map((s) => [
          s.name,
          String(s.version),
          s.tenant ?? '-',
          Object.entries(s.definition.labels ?? {}).map(([k, v]) => `${k}=${v}`).join(',') || '-',
          s.definition.cron,
          iso(s.updatedAtMs),
          s.by,
        ]),
      ),
    );
  });

  const tenants = program.command('tenants').description("the tenants of the stored schedules: their counts and limits");
  addOneShotRedisOptions(tenants.command('list').description('every tenant with stored schedules or a limit, with its count and limit').option('--json', 'print JSON')).action(
    async (o: Flags) => {
      const t = await withOneShotRedis(o, 'cannot read tenants of', (redis) => new ScheduleStore(redis, new Keyspace(o.namespace)).tenants());
      print(
        o,
        t,
        `default limit: ${t.defaultLimit ?? 'none'}\n` +
          table(['TENANT', 'SCHEDULES', 'LIMIT'], t.tenants.map((x) => [x.tenant, String(x.count), x.limit === null ? 'none' : `${x.limit}${x.defaultLimit ? ' (default)' : ''}`]), { right: [1] }),
      );
    },
  );
  addOneShotRedisOptions(
    tenants
      .command('set-limit')
      .description('set the most stored schedules a tenant may have, flock-wide (checked atomically by every upsert); lowering it removes nothing')
      .argument('<tenant>', "the tenant, or '*' (quoted): every tenant without a limit of its own")
      .argument('<limit>', "a whole number ≥ 0; none: no limit (for a tenant, even when '*' has one); default: the tenant drops its own limit and is held to '*' again"),
  ).action(async (tenant: string, limit: string, o: Flags) => {
    const who = tenant;
    // The store checks both (ScheduleStore.setTenantLimit, the one check); here only the text becomes a number
    // (decimal digits; anything else, 1e3 or 0x10 too, is NaN, which the store refuses), none null, default 'default'.
    const n = limit === 'none' ? null : limit === 'default' ? 'default' : /^\d+$/.test(limit) ? Number(limit) : Number.NaN;
    await withOneShotRedis(o, 'cannot set a tenant limit in', (redis) =>
      new ScheduleStore(redis, new Keyspace(o.namespace)).setTenantLimit(who, n).catch((err: unknown) => {
        if (err instanceof TenantLimitArgumentError) throw new CliError(`${err.argument} "${err.argument === 'tenant' ? who : limit}": ${err.rule}`);
        throw err;
      }),
    );
    const what = n === 'default' ? "the default ('*') limit" : n === null ? (who === '*' ? 'none' : "no limit (even if '*' has one)") : `at most ${n} stored schedules`;
    process.stdout.write(`${who === '*' ? 'default limit' : `tenant ${who}`}: ${what}\n`);
  });
}
