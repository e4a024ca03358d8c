/**
 * Stored schedules: the third source of schedules (after schedule files and Schedule resources), made for many
 * schedules that change often and are managed from code (runner/library/) or the API.
 *
 * In Redis, under the flock's hash tag (keys: runner/redis/keys.ts):
 * - one HASH per schedule, `{ns}:store:s:<name>`: `def` (the definition as canonical JSON: one entry of a
 *   schedule file's list), `version`, `updatedAtMs` (Redis time), `by`;
 * - a name index (ZSET, every score 0) for listing by prefix and cursor in name order;
 * - one version counter for the flock: every upsert and removal takes its next value, so a schedule's versions
 *   only grow, across a removal and a re-creation too;
 * - a change stream (`name`, `version`, `op` upsert|remove), capped at about {@link CHANGES_MAX_LEN} entries:
 *   replicas follow it (follow.ts) and re-read only the names it carries.
 *
 * Writes are one script each (lua/store-upsert.lua, lua/store-remove.lua): atomic, with an optional
 * compare-and-set on the version (`ifVersion`; 0 = only if it does not exist). A definition is validated
 * (definition.ts, the schedule files' own code) before anything is written: refused whole, never in part.
 */
import type { RedisClient } from '../redis/connect.js';
import type { Keyspace } from '../redis/keys.js';
import { Scripts } from '../redis/script-loader.js';
import { checkDefinition, ScheduleDefinitionError, type ScheduleDefinition } from './definition.js';

/** About how many entries the change stream keeps (XADD MAXLEN ~): a replica further behind reads everything. */
export const CHANGES_MAX_LEN = 100_000;

/** One stored schedule. */
export interface StoredSchedule {
  name: string;
  /** The definition as stored (as given, keys sorted). */
  definition: ScheduleDefinition;
  /** Grows with every change of the flock's stored schedules (never reused, also across remove and re-create). */
  version: number;
  /** Redis time (ms) of the latest change. */
  updatedAtMs: number;
  /** Who wrote it (the library's `by`, an API user). */
  by: string;
}

/** A refusal of a write that lost its compare-and-set: the schedule's version is not the one expected. */
export class VersionConflictError extends Error {
  readonly code = 'VERSION_CONFLICT';
  constructor(
    readonly schedule: string,
    /** The `ifVersion` asked for (0: only if it does not exist). */
    readonly expected: number,
    /** The version it has (0: it does not exist). */
    readonly actual: number,
  ) {
    super(
      expected === 0
        ? `schedule "${schedule}" already exists (version ${actual}); pass ifVersion: ${actual} to change it`
        : actual === 0
          ? `schedule "${schedule}" does not exist (expected version ${expected})`
          : `schedule "${schedule}" is at version ${actual}, not ${expected}: someone changed it since you read it; read it again and retry`,
    );
    this.name = 'VersionConflictError';
  }
}

/** A refusal of an upsert whose name a live replica runs from another source (a schedule file or a Schedule). */
export class NameOwnedError extends Error {
  readonly code = 'NAME_OWNED';
  constructor(
    readonly schedule: string,
    /** The other source as the replica publishes it: `file:line`, or `Schedule <namespace>/<name>`. */
    readonly source: string,
    readonly replica: string,
  ) {
    super(`schedule "${schedule}" is defined by ${source} (run by replica ${replica}); a name is owned by one source: rename it, or remove it there first`);
    this.name = 'NameOwnedError';
  }
}

/** What {@link ScheduleStore.upsert} gives back. */
export type UpsertResult =
  | { ok: true; name: string; version: number; /** false when the definition equals the stored one (nothing written) */ changed: boolean }
  | { ok: false; error: ScheduleDefinitionError | VersionConflictError | NameOwnedError };

/** What {@link ScheduleStore.remove} gives back. */
export type RemoveResult = { ok: true; version: number } | { ok: false; error: VersionConflictError | { code: 'NOT_FOUND'; message: string } };

/** One entry of the change stream. */
export interface StoreChange {
  /** Stream entry id. */
  id: string;
  name: string;
  version: number;
  op: 'upsert' | 'remove';
}

/** Reads and writes the stored schedules of one flock (see the module docs). */
export class ScheduleStore {
  constructor(
    readonly redis: RedisClient,
    readonly keys: Keyspace,
    private readonly opts: { baseDir?: string; maxLen?: number } = {},
  ) {}

  /**
   * Validates `def` (a schedule file's entry) and writes it, unless `ifVersion` does not match (0: only if it
   * does not exist) or a live replica runs its name from a file or Schedule resource. Refusals are values;
   * throws only for Redis errors.
   */
  async upsert(def: ScheduleDefinition, o: { ifVersion?: number; by?: string } = {}): Promise<UpsertResult> {
    const checked = await checkDefinition(def, this.opts.baseDir !== undefined ? { baseDir: this.opts.baseDir } : {});
    if (!checked.ok) return { ok: false, error: checked.error };
    const name = checked.schedule.name;
    const k = this.keys;
    const r = (await Scripts.on(this.redis).run('store-upsert', [k.storedSchedule(name), k.storeIndex, k.storeVersion, k.storeChanges, k.definitions, k.replicas], {
      name,
      def: checked.json,
      ifVersion: o.ifVersion ?? -1,
      by: o.by ?? 'library',
      maxLen: this.opts.maxLen ?? CHANGES_MAX_LEN,
    })) as [string, number | string, number | string];
    if (r[0] === 'conflict') return { ok: false, error: new VersionConflictError(name, o.ifVersion ?? -1, Number(r[1])) };
    if (r[0] === 'clash') return { ok: false, error: new NameOwnedError(name, String(r[1]), String(r[2])) };
    return { ok: true, name, version: Number(r[1]), changed: Number(r[2]) === 1 };
  }

  /** Removes `name` (only if at version `ifVersion`, when given). Refusals are values. */
  async remove(name: string, o: { ifVersion?: number } = {}): Promise<RemoveResult> {
    const k = this.keys;
    const r = (await Scripts.on(this.redis).run('store-remove', [k.storedSchedule(name), k.storeIndex, k.storeVersion, k.storeChanges], [
      name,
      o.ifVersion ?? -1,
      this.opts.maxLen ?? CHANGES_MAX_LEN,
    ])) as [string, number | string];
    if (r[0] === 'absent') return { ok: false, error: { code: 'NOT_FOUND', message: `schedule "${name}" is not stored` } };
    if (r[0] === 'conflict') return { ok: false, error: new VersionConflictError(name, o.ifVersion ?? -1, Number(r[1])) };
    return { ok: true, version: Number(r[1]) };
  }

  /** The stored schedule `name`, or undefined. */
  async get(name: string): Promise<StoredSchedule | undefined> {
    return parseStored(name, await this.redis.hgetall(this.keys.storedSchedule(name)));
  }

  /** Several stored schedules at once (one pipeline); absent names are left out. */
  async getMany(names: readonly string[]): Promise<StoredSchedule[]> {
    if (names.length === 0) return [];
    const p = this.redis.pipeline();
    for (const n of names) p.hgetall(this.keys.storedSchedule(n));
    const out = (await p.exec()) ?? [];
    const found: StoredSchedule[] = [];
    for (const [i, [err, h]] of out.entries()) {
      if (err) throw err;
      const s = parseStored(names[i]!, h as Record<string, string>);
      if (s) found.push(s);
    }
    return found;
  }

  /**
   * One page of stored schedules in name order: those starting with `prefix` (default all) after `cursor`
   * (the previous page's `cursor`), at most `limit` (default 100, at most 1000).
   * @returns the page and the cursor of the next one (absent: this was the last page).
   */
  async list(o: { prefix?: string; cursor?: string; limit?: number } = {}): Promise<{ items: StoredSchedule[]; cursor?: string }> {
    const limit = Math.max(1, Math.min(1000, Math.floor(o.limit ?? 100)));
    const prefix = o.prefix ?? '';
    const min = o.cursor !== undefined && o.cursor >= prefix ? `(${o.cursor}` : `[${prefix}`;
    const max = prefix === '' ? '+' : `[${prefix}\xff`;
    const names = await this.redis.zrangebylex(this.keys.storeIndex, min, max, 'LIMIT', 0, limit + 1);
    const page = names.slice(0, limit);
    const items = await this.getMany(page);
    return { items, ...(names.length > limit ? { cursor: page[page.length - 1]! } : {}) };
  }

  /** Every stored schedule, read page by page (what a replica reads at start and after a trimmed stream). */
  async all(): Promise<StoredSchedule[]> {
    const out: StoredSchedule[] = [];
    let cursor: string | undefined;
    do {
      const page = await this.list({ limit: 1000, ...(cursor !== undefined ? { cursor } : {}) });
      out.push(...page.items);
      cursor = page.cursor;
    } while (cursor !== undefined);
    return out;
  }

  /** The id of the change stream's latest entry ('0-0' when empty): read it before {@link all} to miss nothing. */
  async lastChangeId(): Promise<string> {
    const last = await this.redis.xrevrange(this.keys.storeChanges, '+', '-', 'COUNT', 1);
    return last[0]?.[0] ?? '0-0';
  }

  /**
   * The changes after `afterId`, waiting up to `blockMs` for one (0: do not wait), at most `count`.
   * `trimmed` is true when entries after `afterId` may have been trimmed away (the stream dropped an entry
   * newer than it): the caller must read everything again. Use a connection of its own (XREAD BLOCK holds it).
   */
  async changesAfter(afterId: string, o: { blockMs: number; count: number }): Promise<{ changes: StoreChange[]; trimmed: boolean }> {
    const args: (string | number)[] = ['COUNT', o.count];
    if (o.blockMs > 0) args.push('BLOCK', o.blockMs);
    const res = (await (this.redis as unknown as { xread(...a: (string | number)[]): Promise<[string, [string, string[]][]][] | null> }).xread(
      ...args,
      'STREAMS',
      this.keys.storeChanges,
      afterId,
    )) ?? [];
    const entries = res[0]?.[1] ?? [];
    const changes = entries.map(([id, fields]) => {
      const f: Record<string, string> = {};
      for (let i = 0; i + 1 < fields.length; i += 2) f[fields[i]!] = fields[i + 1]!;
      return { id, name: f.name ?? '', version: Number(f.version), op: f.op === 'remove' ? ('remove' as const) : ('upsert' as const) };
    });
    return { changes, trimmed: afterId !== '0-0' && (await this.trimmedAfter(afterId)) };
  }

  /**
   * True when entries after `id` may have been trimmed: the stream's first entry is newer than `id` (a reader
   * at `id` read up to it, so the entries between it and the first one are gone, if there were any). Redis 7.0
   * does not count trimmed entries in `max-deleted-entry-id`, so the first entry is what tells.
   */
  async trimmedAfter(id: string): Promise<boolean> {
    let info: unknown[];
    try {
      info = (await this.redis.xinfo('STREAM', this.keys.storeChanges)) as unknown[];
    } catch {
      return false; // no stream yet
    }
    const i = info.indexOf('first-entry');
    const first = i >= 0 ? (info[i + 1] as [string, unknown] | null) : null;
    return first !== null && compareIds(first[0], id) > 0;
  }
}

/** Orders two stream ids (`ms-seq`). */
export function compareIds(a: string, b: string): number {
  const [am, as] = a.split('-').map(BigInt) as [bigint, bigint];
  const [bm, bs] = b.split('-').map(BigInt) as [bigint, bigint];
  return am !== bm ? (am < bm ? -1 : 1) : as === bs ? 0 : as < bs ? -1 : 1;
}

function parseStored(name: string, h: Record<string, string> | null | undefined): StoredSchedule | undefined {
  if (!h || h.def === undefined) return undefined;
  return { name, definition: JSON.parse(h.def) as ScheduleDefinition, version: Number(h.version), updatedAtMs: Number(h.updatedAtMs), by: h.by ?? '' };
}
