/**
 * The Lua scripts' contracts, listed and called: for every script in runner/redis/lua/, the keys it is called
 * with (built by Keyspace), its arguments, and the shape of what it returns, on a real redis-server; its header
 * (KEYS, ARGV, Returns) against its body. And the loader itself: headers, includes, one definition per
 * connection. The behaviour behind each script is tested in store.test.ts, job-locks.test.ts and the
 * integration tests; this file is the contract's list.
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { beforeAll, describe, expect, it } from 'vitest';
import { HistoryKeys } from '../history/keys.js';
import { OutboxKeys } from '../outbox/keys.js';
import { OUTBOX_GROUP } from '../outbox/store.js';
import { FINAL_STATES } from '../records/runs.js';
import { Keyspace } from './keys.js';
import { composeScript, loadScript, LUA_DIR, parseHeader, SCRIPT_COMMANDS, SCRIPT_NAMES, Scripts, type ScriptName } from './script-loader.js';
import { connectCommands } from './connect.js';
import { usePrivateRedis } from '../../test/support/private-redis.js';

const priv = usePrivateRedis();
const { redisNow } = priv;
let redis: Redis;
const k = new Keyspace('c');
const ob = new OutboxKeys(k);

beforeAll(() => {
  redis = priv.redis;
});

type Arg = string | number | Buffer;
type Args = Arg[] | Record<string, unknown>;
/** What one call of a script is: its KEYS and ARGV, what to set up first, and what it returns. */
interface Contract {
  keys: string[];
  /** Positional ARGV, or the fields of a packed ARGV[1]. */
  argv: Args;
  before?: () => Promise<unknown>;
  returns: unknown;
}

const run = (name: ScriptName, keys: string[], argv: Args): Promise<unknown> => Scripts.on(redis).run(name, keys, argv);
const anyNumber = expect.any(Number);

/** Every script's contract, with one call that succeeds. `now` is the Redis clock at the start of the call. */
function contracts(now: number): Record<ScriptName, Contract> {
  const key = `s@${new Date(now).toISOString()}`;
  const claimKeys = [k.pending, k.schedules, k.suspended];
  const claimArgv = {
    items: [
      {
        occKey: k.occurrence(key), runsKey: k.runs('s'), activeKey: k.active('s'), backfillKey: k.backfillQueue('s'),
        replica: 'a', lockMs: 5000, horizonMs: 60_000, retentionMs: 120_000, schedule: 's', dueMs: now, fireMs: now, key,
        startingDeadlineMs: -1, earlyToleranceMs: 0, maxStalls: 2, origin: 'schedule', concurrencyPolicy: 'Allow', maxConcurrent: -1, gates: [],
      },
    ],
  };
  const manual = { schedule: 's', key, dueMs: now, origin: 'manual', by: 'cli', retentionMs: 120_000 };
  const claimed = (): Promise<unknown> => run('claim', claimKeys, claimArgv);
  const locked = (): Promise<unknown> => run('job-lock-acquire', [k.jobLock('l'), k.jobFence('l')], ['owner', 2000]);
  const backfilled = (): Promise<unknown> =>
    run('backfill-enqueue', [k.backfillSchedules, k.backfillQueue('s'), k.runs('s'), k.schedules], { occPrefix: k.occurrencePrefix, schedule: 's', by: 'cli', policy: 'Forbid', retentionMs: 120_000, items: [[key, now]] });
  const take = { field: 'ok/c', consumer: 'a#1', leaseMs: 5000, rateMax: 0, rateWindowMs: 60_000, event: 'ok', schedule: 's', channel: 'c', stateTtlMs: 60_000 };
  const sent = { field: 'ok/c', consumer: 'a#1', outcome: 'sent', retryInMs: 0, error: '' };
  const taken = (): Promise<unknown> =>
    run('outbox-take', [ob.deliveries('1-1'), ob.rate('s', 'c'), ob.summaries, ob.consumers, ob.stream, ob.last], take);
  return {
    plan: {
      keys: [k.pending, k.watermarks, k.schedules, k.planMarks],
      argv: {
        occPrefix: k.occurrencePrefix, runsPrefix: k.runsPrefix, activePrefix: k.activePrefix, horizonMs: 60_000, retentionMs: 120_000, replica: 'a', mark: 'i:1', catchUpGraceMs: 1000,
        offers: [{ schedule: 's', suspend: false, startingDeadlineMs: -1, catchUp: 'latest', maxCatchUpRuns: 10, rows: [[now + 1000, now + 1000, key, -1, '', '', now + 1000]] }],
      },
      returns: [key, '', '|'],
    },
    heartbeat: { keys: [k.replicas, k.replicaDigests, k.replicasSeen, k.handoffs('a'), k.replicaCapabilities], argv: ['a', 'digest', 2000], returns: [0, 'a', 'digest'] },
    claim: { keys: claimKeys, argv: claimArgv, returns: [['claimed', 1, 1, anyNumber, anyNumber]] },
    'enqueue-manual': {
      keys: [k.occurrence(key), k.pending, k.runs('s'), k.schedules],
      argv: manual,
      returns: [1, anyNumber],
    },
    renew: { before: claimed, keys: [k.occurrence(key)], argv: [1, 5000, 120_000, key], returns: [anyNumber, ''] },
    finish: {
      before: claimed,
      keys: [k.pending, k.lastSuccess],
      argv: {
        occPrefix: k.occurrencePrefix,
        items: [
          {
            token: 1, state: 'succeeded', reason: '', error: '', result: '{"ok":true}', retentionMs: 120_000, key, retries: 0,
            retryBackoffMs: 1000, retryBackoffMaxMs: 300_000, jitter: 0.5, lockMs: 5000,
          },
        ],
      },
      returns: [[1, 0]],
    },
    release: { before: claimed, keys: [k.occurrence(key)], argv: [1, 'handed over', key, 5000], returns: 1 },
    sweep: {
      before: () => run('enqueue-manual', [k.occurrence(key), k.pending, k.runs('s'), k.schedules], manual),
      keys: [k.pending],
      argv: { sweepAfterMs: 0, limit: 10, occPrefix: k.occurrencePrefix, jobPrefix: 'none:', backlogJobPrefix: '', horizonMs: 60_000, retentionMs: 120_000 },
      returns: [key, 's', String(now), expect.any(String), 'manual', ''],
    },
    abandon: {
      before: () => run('enqueue-manual', [k.occurrence(key), k.pending, k.runs('s'), k.schedules], manual),
      keys: [k.occurrence(key), k.pending],
      argv: { state: 'skipped', reason: 'schedule removed', retentionMs: 120_000, key, minAgeMs: -1 },
      returns: [1, 'skipped'],
    },
    'due-delayed': { before: () => redis.zadd('{c}:q:delayed', now * 0x1000, 'job-1'), keys: ['{c}:q:delayed'], argv: [10], returns: ['job-1'] },
    'backfill-enqueue': {
      keys: [k.backfillSchedules, k.backfillQueue('s'), k.runs('s'), k.schedules],
      argv: { occPrefix: k.occurrencePrefix, schedule: 's', by: 'cli', policy: 'Forbid', retentionMs: 120_000, items: [[key, now]] },
      returns: [key],
    },
    'backfill-admit': {
      before: backfilled,
      keys: [k.backfillSchedules, k.backfillAdmitted, k.pending, k.suspended],
      argv: { occPrefix: k.occurrencePrefix, queuePrefix: k.backfillQueuePrefix, cap: 2, retentionMs: 120_000, scan: 100 },
      returns: [key, 's', String(now), anyNumber],
    },
    'backfill-cancel': {
      before: backfilled,
      keys: [k.backfillQueue('s'), k.backfillAdmitted, k.pending],
      argv: { occPrefix: k.occurrencePrefix, schedule: 's', retentionMs: 120_000, reason: 'cancelled', limit: 100 },
      returns: [1, 0, 0],
    },
    'publish-definitions': {
      keys: [k.definitions, k.definitionsVersion, k.definitionsChanges, k.definitionsLog, k.replicas, k.definitionsSuspended],
      argv: ['a', 100, 's', JSON.stringify({ cron: '* * * * *', definitionHash: 'h1', replica: 'a' }), '|', 'gone'],
      returns: 1,
    },
    'definitions-changes': { keys: [k.definitions, k.definitionsVersion, k.definitionsChanges, k.definitionsLog], argv: [0, 100], returns: ['changes', '0'] },
    'owned-names': { keys: [k.definitions, k.replicas, k.replicasSeen], argv: [600_000, 's'], returns: [] },
    'handoff-take': { keys: [k.handoffs('a')], argv: [500, 10], returns: [] },
    'is-live-member': { before: () => redis.zadd(k.replicas, now + 60_000, 'a'), keys: [k.replicas], argv: ['a'], returns: 1 },
    time: { keys: [k.ns], argv: [], returns: [expect.stringMatching(/^\d+$/), expect.stringMatching(/^\d+$/)] },
    'job-lock-acquire': { keys: [k.jobLock('l'), k.jobFence('l')], argv: ['owner', 2000], returns: [1, anyNumber] },
    'job-lock-renew': { before: locked, keys: [k.jobLock('l')], argv: [1, 2000], returns: anyNumber },
    'job-lock-release': { before: locked, keys: [k.jobLock('l')], argv: [1], returns: 1 },
    'job-checkpoint': {
      before: locked,
      keys: [k.jobLock('l'), k.jobCheckpoints('l', 'scope')],
      argv: [1, 60_000, 'set', 'field', 'value'],
      returns: 1,
    },
    'outbox-take': {
      keys: [ob.deliveries('1-1'), ob.rate('s', 'c'), ob.summaries, ob.consumers, ob.stream, ob.last],
      argv: take,
      returns: ['take', 1],
    },
    'outbox-settle': { before: taken, keys: [ob.deliveries('1-1')], argv: sent, returns: 1 },
    'outbox-complete': {
      before: async () => {
        await redis.xgroup('CREATE', ob.stream, OUTBOX_GROUP, '0', 'MKSTREAM');
        await redis.xadd(ob.stream, '1-1', 'kind', 'outcome');
        await taken();
        await run('outbox-settle', [ob.deliveries('1-1')], sent);
      },
      keys: [ob.stream, ob.deliveries('1-1')],
      argv: [OUTBOX_GROUP, '1-1', 'ok/c'],
      returns: 1,
    },
    'store-upsert': {
      keys: [k.storedSchedule('s'), k.storeIndex, k.storeVersion, k.storeChanges, k.definitions, k.replicas, k.storeTenantCounts, k.storeTenantIndex, k.storeTenantLimits, `${k.ns}:audit`, k.replicasSeen],
      argv: { name: 's', def: '{"name":"s"}', tenant: 'acme', ifVersion: 0, by: 'test', via: 'library', reason: '', maxLen: 1000, auditMaxLen: 1000, holdMs: 600000 },
      returns: ['ok', 1, 1, expect.stringMatching(/^\d+-\d+$/)],
    },
    'store-remove': {
      before: () => run('store-upsert', [k.storedSchedule('s'), k.storeIndex, k.storeVersion, k.storeChanges, k.definitions, k.replicas, k.storeTenantCounts, k.storeTenantIndex, k.storeTenantLimits, `${k.ns}:audit`, k.replicasSeen], { name: 's', def: '{}', tenant: 't', ifVersion: -1, by: 't', via: 'library', reason: '', maxLen: 1000, auditMaxLen: 1000, holdMs: 600000 }),
      keys: [k.storedSchedule('s'), k.storeIndex, k.storeVersion, k.storeChanges, k.storeTenantCounts, k.storeTenantIndex, `${k.ns}:audit`],
      argv: { name: 's', ifVersion: -1, by: 't', via: 'cli', reason: '', maxLen: 1000, auditMaxLen: 1000 },
      returns: ['ok', 2, expect.stringMatching(/^\d+-\d+$/)],
    },
    'outbox-tick': { keys: [ob.summaries, ob.stream, ob.last, ob.consumers], argv: [ob.ratePrefix, 100, 'a#1', 60_000], returns: 0 },
  };
}

/** The script's own text after its header (its includes are checked where they are used). */
function body(name: ScriptName): string {
  const text = readFileSync(path.join(LUA_DIR, `${name}.lua`), 'utf8');
  return text.slice(text.indexOf(']]') + 2);
}

describe('the Lua scripts (runner/redis/lua/)', () => {
  it('are exactly the files of the folder', () => {
    const files = readdirSync(LUA_DIR)
      .filter((f) => f.endsWith('.lua'))
      .map((f) => f.slice(0, -4));
    expect([...SCRIPT_NAMES].sort()).toEqual(files.sort());
  });

  describe.each(SCRIPT_NAMES.map((name) => [name]))('%s', (name) => {
    it('has a header (what it does, KEYS, ARGV, Returns) that its body keeps to', () => {
      const { header, numberOfKeys } = loadScript(name);
      expect(header.summary.length).toBeGreaterThan(name.length + 20);
      expect(header.returns).toMatch(/^Returns/);
      const used = (re: RegExp): number[] => [...new Set([...body(name).matchAll(re)].map((m) => Number(m[1])))].sort((a, b) => a - b);
      // Every declared key is used (unless the header says it only routes the call), and no other.
      const read = header.keys.flatMap((d, i) => (d.includes('(not read') ? [] : [i + 1]));
      expect(used(/KEYS\[(\d+)\]/g)).toEqual(read);
      expect(numberOfKeys).toBe(header.keys.length);
      // Every fixed argument is used by its number, and none beyond the header's.
      const fixed = header.argv.length - (header.argvTail ? 1 : 0);
      const argv = used(/ARGV\[(\d+)\]/g);
      for (let i = 1; i <= fixed; i++) expect(argv, `ARGV[${i}] (${header.argv[i - 1]}) is declared but not used`).toContain(i);
      for (const i of argv) expect(i, `ARGV[${i}] is used but not declared`).toBeLessThanOrEqual(header.argv.length);
      // A packed ARGV[1] is unpacked once, and the body reads exactly the fields its header lists.
      if (header.packed) {
        expect(body(name)).toContain('local args = cmsgpack.unpack(ARGV[1])');
        const fields = [...new Set([...body(name).matchAll(/\bargs\.(\w+)/g)].map((m) => m[1]!))].sort();
        expect(fields).toEqual([...header.packed.keys()].sort());
      }
    });

    it('is called with the keys and arguments of its contract and returns its shape', async () => {
      const c = contracts(await redisNow())[name];
      const { numberOfKeys, header } = loadScript(name);
      expect(c.keys).toHaveLength(numberOfKeys);
      // Long argument lists are packed (more than four fixed arguments); short ones stay positional.
      if (header.packed) expect(Array.isArray(c.argv)).toBe(false);
      else expect(header.argv.length - (header.argvTail ? 1 : 0)).toBeLessThanOrEqual(4);
      await c.before?.();
      expect(await run(name, c.keys, c.argv)).toEqual(c.returns);
    });
  });
});

describe('the words the scripts share with the code', () => {
  it("isFinal (includes/record.lua) knows the final states of runs.ts, and only those", () => {
    const lua = readFileSync(path.join(LUA_DIR, 'includes/record.lua'), 'utf8');
    const fn = /local function isFinal\(state\)\n([\s\S]*?)\nend/.exec(lua)![1]!;
    expect([...fn.matchAll(/state == '(\w+)'/g)].map((m) => m[1]).sort()).toEqual([...FINAL_STATES].sort());
  });
});

describe('the record helpers (includes/record.lua and what it includes)', () => {
  const helpers = ['recordLastResult', 'attemptsWith', 'recordHistory', 'emitOutcome', 'createRecord', 'finalize'];
  const withRecords = SCRIPT_NAMES.filter((name) => readFileSync(path.join(LUA_DIR, `${name}.lua`), 'utf8').includes('-- @include "includes/record.lua"'));

  it.each(withRecords.map((name) => [name]))('%s gets last-result.lua, history.lua and outbox.lua once each', (name) => {
    const lua = loadScript(name).lua;
    for (const h of helpers) expect(lua.match(new RegExp(`local function ${h}\\(`, 'g')), h).toHaveLength(1);
  });

  it('a plan row with a fixed final state writes the last result, the history entry and the counts in the same call', async () => {
    const now = await redisNow();
    const key = `s@${new Date(now).toISOString()}`;
    await run('plan', [k.pending, k.watermarks, k.schedules, k.planMarks], {
      occPrefix: k.occurrencePrefix, runsPrefix: k.runsPrefix, activePrefix: k.activePrefix, horizonMs: 60_000, retentionMs: 120_000, replica: 'a', mark: '', catchUpGraceMs: 1000,
      offers: [{ schedule: 's', suspend: false, startingDeadlineMs: -1, catchUp: 'latest', maxCatchUpRuns: 10, rows: [[now, now, key, -1, 'skipped', 'calendar holidays', now]] }],
    });
    expect(await redis.hmget(k.occurrence(key), 'state', 'reason')).toEqual(['skipped', 'calendar holidays']);
    expect(await redis.hget(k.lastResult, 's')).toMatch(/^0\|skipped\|\d+\|\d+\|calendar holidays$/);
    expect(await redis.zcard(new HistoryKeys(k).history('s'))).toBe(1);
    expect(await redis.hget(new HistoryKeys(k).last, 's')).toMatch(/calendar holidays/);
  });
});

describe('the script loader', () => {
  it('defines each script once per connection and refuses a call with the wrong number of keys', async () => {
    const scripts = Scripts.on(redis);
    expect(Scripts.on(redis)).toBe(scripts);
    await scripts.run('heartbeat', [k.replicas, k.replicaDigests, k.replicasSeen, k.handoffs('a'), k.replicaCapabilities], ['a', 'd', 1000]);
    expect(typeof (redis as unknown as Record<string, unknown>).cronflockHeartbeat).toBe('function');
    expect(() => scripts.run('heartbeat', [k.replicas], ['a', 'd', 1000])).toThrow('script heartbeat takes 5 keys, got 1');
  });

  it('script calls on a commands connection are written at once, not auto-pipelined; its other commands are', async () => {
    // ioredis copies every script defined on a connection onto each auto-pipeline it opens (~35 µs with ours and
    // BullMQ's): the scripts' callers group their calls themselves (coalesce.ts), so a script call opens none.
    const c = connectCommands(priv.server.url, 'cronflock:test-pipelining');
    try {
      if (c.status !== 'ready') await new Promise((r) => c.once('ready', r)); // no offline queue on this role
      const scripts = Scripts.on(c);
      for (const name of SCRIPT_NAMES) expect(SCRIPT_COMMANDS).toContain(loadScript(name).command);
      const call = scripts.run('time', [k.replicas]);
      expect(c.autoPipelineQueueSize).toBe(0);
      expect(await call).toHaveLength(2);
      const get = c.get(k.replicas);
      expect(c.autoPipelineQueueSize).toBe(1);
      await get;
    } finally {
      c.disconnect();
    }
  });

  it("refuses packed arguments whose fields are not the header's, and a list for a packed script (or the reverse)", () => {
    const scripts = Scripts.on(redis);
    const keys = [k.occurrence('x'), k.pending];
    expect(() => scripts.run('abandon', keys, { state: 'skipped', reason: 'r', retentionMs: 1, key: 'x', minAge: 0 })).toThrow(
      'script abandon: unknown minAge, missing minAgeMs',
    );
    expect(() => scripts.run('abandon', keys, ['skipped', 'r', 1, 'x', -1])).toThrow('script abandon takes its arguments packed: pass an object with state, reason, retentionMs, key, minAgeMs');
    expect(() => scripts.run('renew', [k.occurrence('x')], { token: 1 })).toThrow('script renew takes positional arguments: pass a list');
  });

  it('resolves includes relative to the including file, each file once', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'cronflock-lua-'));
    try {
      writeFileSync(path.join(dir, 'a.lua'), '-- a\n-- @include "inc/b.lua"\n-- @include "inc/c.lua"\nreturn x\n');
      writeFileSync(path.join(dir, 'b.lua'), 'not this one: includes are relative to the including file');
      const inc = path.join(dir, 'inc');
      mkdirSync(inc);
      writeFileSync(path.join(inc, 'b.lua'), '-- @include "c.lua"\nlocal b = 1');
      writeFileSync(path.join(inc, 'c.lua'), 'local c = 2');
      expect(composeScript(path.join(dir, 'a.lua'))).toBe('-- a\nlocal c = 2\nlocal b = 1\n-- (inc/c.lua included above)\nreturn x\n');
      writeFileSync(path.join(dir, 'bad.lua'), '-- @include "inc/missing.lua"\n');
      expect(() => composeScript(path.join(dir, 'bad.lua'))).toThrow('bad.lua: cannot read inc/missing.lua: ENOENT');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses a header that does not say what the script is, does, takes and returns', () => {
    const h = (lines: string): string => `--[[\n${lines}\n]]\nreturn 1\n`;
    expect(() => parseHeader('x', 'return 1')).toThrow('x.lua: must start with a --[[ … ]] header');
    expect(() => parseHeader('x', h('  y: does things\n\n  Returns: 1'))).toThrow('must start with "x: "');
    expect(() => parseHeader('x', h('  x: does things\n\n  KEYS[2] b\n  Returns: 1'))).toThrow('KEYS[2] out of order: expected KEYS[1]');
    expect(() => parseHeader('x', h('  x: does things\n\n  ARGV[1..] rest\n  ARGV[2] more\n  Returns: 1'))).toThrow('must be the last ARGV entry');
    expect(() => parseHeader('x', h('  x: does things\n\n  KEYS[1] a'))).toThrow('no Returns section');
    expect(parseHeader('x', h('  x: does things\n\n  KEYS[1] a\n    (continued)\n  ARGV[1] b\n  ARGV[2..] c, d\n  Returns: 1\n    or 0'))).toEqual({
      summary: 'x: does things',
      keys: ['a (continued)'],
      argv: ['b', 'c, d'],
      argvTail: true,
      returns: 'Returns: 1\n  or 0',
    });
  });
});
