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
 *   replicas follow it (follow.ts) and re-read only the names it carries;
 * - tenants: a count of stored schedules per tenant (HASH), a tenant index (ZSET of `<tenant>\0<name>`) for
 *   listing by tenant, and the per-tenant limits (HASH, `*` for every tenant without its own), set by
 *   `cronflock tenants set-limit` ({@link ScheduleStore.setTenantLimit}). The upsert script checks the limit and
 *   takes the count in one step: concurrent upserts never pass it.
 *
 * Every change is written to the audit log (runner/history/audit.ts) by the same script, with who, via
 * (library, api, cli) and the version: no change without its entry, however the writer dies.
 *
 * Writes are one script each (lua/store-upsert.lua, lua/store-remove.lua): atomic, with an optional
 * compare-and-set on the version (`ifVersion`; 0 = only if it does not exist). A definition is validated
 * (definition.ts, the schedule files' own code) before anything is written: refused whole, never in part.
 */
import { AUDIT_MAX_ENTRIES, NO_REASON } from '../history/audit.js';
import { HistoryKeys } from '../history/keys.js';
import type { RedisClient } from '../redis/connect.js';
import type { Keyspace } from '../redis/keys.js';
import { Scripts } from '../redis/script-loader.js';
import { tenantSchema } from '../config/schema.js';
import { checkDefinition, MAX_DEFINITION_BYTES, ScheduleDefinitionError, tooLargeProblem, type ScheduleDefinition } from './definition.js';
import { NAME_HOLD_MS, ownerText } from './ownership.js';

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
  /** Its tenant (the definition's `tenant`); absent: none. */
  tenant?: string;
}

/** Who makes a change, for the stored schedule and the audit log. */
export interface ChangeAuthor {
  /** Who (default `library`): a token name, user@host. */
  by?: string;
  /** Through what (default `library`). */
  via?: 'library' | 'api' | 'cli';
  /** Why, kept in the audit log (optional). */
  reason?: string;
}

/** A refusal of an upsert that would take a tenant past its limit of stored schedules (nothing was written). */
export class TenantLimitError extends Error {
  readonly code = 'TENANT_LIMIT';
  constructor(
    readonly schedule: string,
    readonly tenant: string,
    /** The most stored schedules the tenant may have (its own limit, else the default `*`). */
    readonly limit: number,
    /** How many it has. */
    readonly count: number,
  ) {
    super(
      `schedule "${schedule}" refused: tenant "${tenant}" has ${count} stored schedule(s) and its limit is ${limit}; ` +
        `remove some of its schedules, or raise the limit: cronflock tenants set-limit ${tenant} <n>`,
    );
    this.name = 'TenantLimitError';
  }
}

/** The largest tenant limit taken (a bound against typos such as 1e308). */
export const MAX_TENANT_LIMIT = 100_000_000;

/**
 * A refusal of {@link ScheduleStore.setTenantLimit}'s arguments (nothing was written): `argument` is `tenant` or
 * `limit`; the message says what it takes. The one check of a tenant limit: the library and the CLI pass what
 * they were given and report this error.
 */
export class TenantLimitArgumentError extends TypeError {
  readonly code = 'ARGUMENT_INVALID';
  constructor(
    readonly argument: 'tenant' | 'limit',
    /** The value given, as shown. */
    readonly got: string,
    /** What it takes, e.g. `must be a whole number from 0 to …`. */
    readonly rule: string,
  ) {
    super(`${argument} ${got}: ${rule}`);
    this.name = 'TenantLimitArgumentError';
  }
}

const shown = (v: unknown): string =>
  typeof v === 'string' ? JSON.stringify(v.length > 60 ? `${v.slice(0, 57)}...` : v) : typeof v === 'bigint' ? `${v}n` : v === undefined ? 'undefined' : typeof v === 'object' && v !== null ? 'an object' : String(v);

/** What {@link ScheduleStore.remove} answers for a name that is not stored. */
export interface NotStored {
  code: 'NOT_FOUND';
  message: string;
  /** The source a replica publishes the name from when it is not the store (`file:line`, `Schedule ns/name`). */
  source?: string;
}

/** The stored value of a tenant's own "no limit" in the tenant-limits hash: overrides the default (`*`). */
const TENANT_NO_LIMIT = 'none';

/** One tenant's stored schedules and limit ({@link ScheduleStore.tenants}). */
export interface TenantInfo {
  tenant: string;
  count: number;
  /** Its limit: its own, else the default; null: none (its own "no limit", or no default). */
  limit: number | null;
  /**
   * Whether `limit` is the default's (`*`): it has no limit of its own and a default exists. False when it has
   * its own limit or its own "no limit" (`set-limit <tenant> none`), which overrides the default.
   */
  defaultLimit: boolean;
}

/**
 * The `ifVersion` of a write that must find the schedule stored, whatever its version (HTTP `If-Match: *`,
 * RFC 9110 §13.1.1): refused with a {@link VersionConflictError} (actual 0) when it is not.
 */
export const IF_EXISTS = -2;

/** A refusal of a write that lost its compare-and-set: the schedule's version is not the one expected. */
export class VersionConflictError extends Error {
  readonly code = 'VERSION_CONFLICT';
  constructor(
    readonly schedule: string,
    /** The `ifVersion` asked for (0: only if it does not exist; {@link IF_EXISTS}: only if it exists). */
    readonly expected: number,
    /** The version it has (0: it does not exist). */
    readonly actual: number,
  ) {
    super(
      expected === 0
        ? `schedule "${schedule}" already exists (version ${actual}) and it was to be created only (ifVersion: 0); pass ifVersion: ${actual} to change it`
        : expected === IF_EXISTS
          ? `schedule "${schedule}" does not exist, and it was to be changed only if it exists (ifVersion: 'exists'); create it without that condition, or with ifVersion: 0`
          : actual === 0
          ? `schedule "${schedule}" does not exist (expected version ${expected})`
          : `schedule "${schedule}" is at version ${actual}, not ${expected}: someone changed it since you read it; read it again and retry`,
    );
    this.name = 'VersionConflictError';
  }

  /**
   * Which condition failed: `absent` (ifVersion 0, create only: it exists), `exists` ({@link IF_EXISTS}, the
   * library's `ifVersion: 'exists'`: it does not exist), `version` (it is at another version, or gone).
   */
  get condition(): 'absent' | 'exists' | 'version' {
    return this.expected === 0 ? 'absent' : this.expected === IF_EXISTS ? 'exists' : 'version';
  }
}

/**
 * A refusal of an upsert whose name another source owns: a schedule file or a Schedule published by a replica
 * that is live or was seen within NAME_HOLD_MS (runner/store/ownership.ts).
 */
export class NameOwnedError extends Error {
  readonly code = 'NAME_OWNED';
  constructor(
    readonly schedule: string,
    /** The other source as the replica publishes it: `file:line`, or `Schedule <namespace>/<name>`. */
    readonly source: string,
    readonly replica: string,
    /** How long ago that replica was last seen (ms); null: it is a live member. */
    readonly lastSeenAgoMs: number | null = null,
  ) {
    super(`schedule "${schedule}" is defined by ${ownerText({ source, replica, lastSeenAgoMs })}; a name is owned by one source: rename it, or remove it there first`);
    this.name = 'NameOwnedError';
  }
}

/** What {@link ScheduleStore.upsert} gives back. */
export type UpsertResult =
  | {
      ok: true;
      name: string;
      version: number;
      /** false when the definition equals the stored one (nothing written, nothing audited) */
      changed: boolean;
      /** Its audit entry (null when unchanged). */
      auditId: string | null;
    }
  | { ok: false; error: ScheduleDefinitionError | VersionConflictError | NameOwnedError | TenantLimitError };

/** What {@link ScheduleStore.remove} gives back. */
export type RemoveResult = { ok: true; version: number; /** its audit entry */ auditId: string } | { ok: false; error: VersionConflictError | NotStored };

/** What {@link ScheduleStore.list} filters by. */
export interface ListFilter {
  /** Names starting with this. */
  prefix?: string;
  /** Only this tenant's schedules. */
  tenant?: string;
  /** Only schedules carrying every one of these labels with these values. */
  labels?: Readonly<Record<string, string>>;
}

/** One entry of the change stream. */
export interface StoreChange {
  /** Stream entry id. */
  id: string;
  name: string;
  version: number;
  op: 'upsert' | 'remove';
}

/** How long a replica's refusal of a stored schedule is kept after its last write, ms (a day). */
export const STORE_REFUSAL_KEEP_MS = 86_400_000;

/** Why a live replica does not run a stored schedule's version (see {@link ScheduleStore.refusals}). */
export interface StoredRefusal {
  replica: string;
  version: number;
  /** The replica's reason: the definition's problems as it saw them. */
  reason: string;
  /** When it refused (its own clock, ms since the epoch). */
  atMs: number;
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
   * does not exist), a file or Schedule resource owns its name (ownership.ts: its replica live or seen within
   * NAME_HOLD_MS), or its tenant is at its
   * limit. Recorded in the audit log with `o.by`, `o.via` and the version. Refusals are values; throws only for
   * Redis errors.
   */
  async upsert(def: ScheduleDefinition, o: { ifVersion?: number } & ChangeAuthor = {}): Promise<UpsertResult> {
    // Through the HTTP API the writer is elsewhere: a relative path's hint must not name this server's directory.
    const checked = await checkDefinition(def, { writing: true, ...(o.via === 'api' ? { remoteWriter: true } : {}), ...(this.opts.baseDir !== undefined ? { baseDir: this.opts.baseDir } : {}) });
    if (!checked.ok) return { ok: false, error: checked.error };
    return this.write(checked.schedule.name, checked.json, checked.schedule.tenant ?? '', o);
  }

  /**
   * Writes a definition already checked by {@link checkDefinition} (its canonical JSON): what {@link upsert}
   * does after validating, for callers that validated a whole input first (`cronflock apply`).
   */
  async write(name: string, json: string, tenant: string, o: { ifVersion?: number } & ChangeAuthor = {}): Promise<UpsertResult> {
    const bytes = Buffer.byteLength(json, 'utf8');
    if (bytes > MAX_DEFINITION_BYTES) return { ok: false, error: new ScheduleDefinitionError(name, [tooLargeProblem(bytes)]) };
    const k = this.keys;
    const r = (await Scripts.on(this.redis).run(
      'store-upsert',
      [k.storedSchedule(name), k.storeIndex, k.storeVersion, k.storeChanges, k.definitions, k.replicas, k.storeTenantCounts, k.storeTenantIndex, k.storeTenantLimits, new HistoryKeys(k).audit, k.replicasSeen],
      {
        name,
        def: json,
        tenant,
        holdMs: NAME_HOLD_MS,
        ...this.changeArgs(o),
      },
    )) as [string, number | string, number | string, string?];
    if (r[0] === 'conflict') return { ok: false, error: new VersionConflictError(name, o.ifVersion ?? -1, Number(r[1])) };
    if (r[0] === 'clash') return { ok: false, error: new NameOwnedError(name, String(r[1]), String(r[2]), Number(r[3]) < 0 ? null : Number(r[3])) };
    if (r[0] === 'limit') return { ok: false, error: new TenantLimitError(name, String(r[1]), Number(r[2]), Number(r[3])) };
    return { ok: true, name, version: Number(r[1]), changed: Number(r[2]) === 1, auditId: r[3] ? r[3] : null };
  }

  /** The arguments every store script takes about a change: its compare-and-set version, author, stream caps. */
  private changeArgs(o: { ifVersion?: number } & ChangeAuthor) {
    return {
      ifVersion: o.ifVersion ?? -1,
      by: o.by ?? 'library',
      via: o.via ?? 'library',
      reason: o.reason?.trim() || NO_REASON,
      maxLen: this.opts.maxLen ?? CHANGES_MAX_LEN,
      auditMaxLen: AUDIT_MAX_ENTRIES,
    };
  }

  /** Removes `name` (only if at version `ifVersion`, when given); recorded in the audit log. Refusals are values. */
  async remove(name: string, o: { ifVersion?: number } & ChangeAuthor = {}): Promise<RemoveResult> {
    const k = this.keys;
    const r = (await Scripts.on(this.redis).run(
      'store-remove',
      [k.storedSchedule(name), k.storeIndex, k.storeVersion, k.storeChanges, k.storeTenantCounts, k.storeTenantIndex, new HistoryKeys(k).audit],
      {
        name,
        ...this.changeArgs(o),
      },
    )) as [string, number | string, string?];
    if (r[0] === 'absent') return { ok: false, error: await this.notStored(name) };
    if (r[0] === 'conflict') return { ok: false, error: new VersionConflictError(name, o.ifVersion ?? -1, Number(r[1])) };
    return { ok: true, version: Number(r[1]), auditId: r[2]! };
  }

  /**
   * Why `name` is not stored, for a remove: when a replica publishes it from a schedule file or a Schedule
   * resource, that source and how to remove it there (a remove through the store cannot: the name is owned by
   * that source, and the replicas would load it again from there).
   */
  async notStored(name: string): Promise<NotStored> {
    const raw = await this.redis.hget(this.keys.definitions, name);
    const source = raw ? (JSON.parse(raw) as { source?: string }).source : undefined;
    if (!source || source.startsWith('store')) return { code: 'NOT_FOUND', message: `schedule "${name}" is not stored` };
    const k8s = /^Schedule ([^/]+)\/(.+)$/.exec(source);
    const how = k8s
      ? `delete it there (kubectl delete schedules.cronflock.io ${k8s[2]} -n ${k8s[1]}, or remove it from its manifest)`
      : `remove it from ${source.replace(/:\d+$/, '')} (line ${/:(\d+)$/.exec(source)?.[1] ?? '?'}); the replicas reload the file`;
    return { code: 'NOT_FOUND', message: `schedule "${name}" is not stored: it is defined by ${source}, which owns the name; ${how}`, source };
  }

  /**
   * Sets the most stored schedules `tenant` may have (`*`: every tenant without a limit of its own).
   * - a number: that limit;
   * - `null`: no limit. For a tenant this is its own "no limit" (stored as `none`), which overrides the default
   *   (`*`); for `*` it removes the default;
   * - `'default'`: the tenant drops its own limit (or its own "no limit") and is held to the default again
   *   (refused for `*`, which is the default).
   * Lowering a limit below the tenant's count removes nothing: further upserts of new schedules of that tenant are
   * refused until it is under the limit again. The one check of these arguments (the library and `cronflock
   * tenants set-limit` pass theirs here unchecked).
   * @throws TenantLimitArgumentError when `tenant` is neither a DNS-1123 label nor `*`, or `limit` is neither null,
   *   `'default'` (for a tenant) nor a whole number from 0 to {@link MAX_TENANT_LIMIT}; nothing is written then.
   */
  async setTenantLimit(tenant: string, limit: number | null | 'default'): Promise<void> {
    if (tenant !== '*' && !(typeof tenant === 'string' && tenantSchema.safeParse(tenant).success)) {
      throw new TenantLimitArgumentError('tenant', shown(tenant), `must be a DNS-1123 label (lowercase letters, digits and "-", at most 63), or '*' for every tenant without a limit of its own`);
    }
    if (limit === 'default') {
      if (tenant === '*') throw new TenantLimitArgumentError('limit', shown(limit), "'*' is the default limit itself: set it to a number, or to none (null) to remove it");
      await this.redis.hdel(this.keys.storeTenantLimits, tenant);
      return;
    }
    if (limit !== null && (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 0 || limit > MAX_TENANT_LIMIT)) {
      throw new TenantLimitArgumentError(
        'limit',
        shown(limit),
        `must be a whole number from 0 to ${MAX_TENANT_LIMIT.toLocaleString('en-US')}, none (null): no limit, or default: back to the '*' limit`,
      );
    }
    if (limit === null) {
      if (tenant === '*') await this.redis.hdel(this.keys.storeTenantLimits, tenant);
      else await this.redis.hset(this.keys.storeTenantLimits, tenant, TENANT_NO_LIMIT);
    } else await this.redis.hset(this.keys.storeTenantLimits, tenant, String(limit));
  }

  /**
   * Every tenant with stored schedules or a limit of its own (a number or "none"), by name, with its count and
   * limit; and the default limit (`*`; null: none).
   */
  async tenants(): Promise<{ tenants: TenantInfo[]; defaultLimit: number | null }> {
    const [counts, limits] = await Promise.all([this.redis.hgetall(this.keys.storeTenantCounts), this.redis.hgetall(this.keys.storeTenantLimits)]);
    const def = limits['*'] !== undefined ? Number(limits['*']) : null;
    const names = [...new Set([...Object.keys(counts), ...Object.keys(limits).filter((t) => t !== '*')])].sort();
    return {
      defaultLimit: def,
      tenants: names.map((tenant) => {
        const own = limits[tenant];
        const limit = own === undefined ? def : own === TENANT_NO_LIMIT ? null : Number(own);
        return { tenant, count: Number(counts[tenant] ?? 0), limit, defaultLimit: own === undefined && def !== null };
      }),
    };
  }

  /** The stored schedule `name`, or undefined. */
  /**
   * Records that `replica` refused version `version` of the stored schedule `name` (one HSET and PEXPIRE on
   * {@link Keyspace.storeRefusals}); `reason` is cut at 1,000 characters.
   */
  async recordRefusal(name: string, replica: string, version: number, reason: string): Promise<void> {
    const key = this.keys.storeRefusals(name);
    await this.redis.multi().hset(key, replica, JSON.stringify({ version, reason: reason.slice(0, 1_000), atMs: Date.now() })).pexpire(key, STORE_REFUSAL_KEEP_MS).exec();
  }

  /** Drops `replica`'s refusal of `name` (it runs a version now). */
  async clearRefusal(name: string, replica: string): Promise<void> {
    await this.redis.hdel(this.keys.storeRefusals(name), replica);
  }

  /**
   * The refusals of version `version` of `name` by replicas that are live at `nowMs` (Redis time: membership in
   * {@link Keyspace.replicas}), oldest first.
   */
  async refusals(name: string, version: number, nowMs: number): Promise<StoredRefusal[]> {
    const h = await this.redis.hgetall(this.keys.storeRefusals(name));
    const out: StoredRefusal[] = [];
    for (const [replica, json] of Object.entries(h)) {
      try {
        const v = JSON.parse(json) as Omit<StoredRefusal, 'replica'>;
        if (v.version !== version) continue;
        const expiresAt = await this.redis.zscore(this.keys.replicas, replica);
        if (expiresAt === null || Number(expiresAt) <= nowMs) continue;
        out.push({ replica, version, reason: String(v.reason), atMs: Number(v.atMs) });
      } catch {
        // not ours to judge: an entry that is not JSON is left out
      }
    }
    return out.sort((a, b) => a.atMs - b.atMs);
  }

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
   * One page of stored schedules in name order: those starting with `prefix` (default all), of `tenant` (when
   * given: read from the tenant index) and carrying every label of `labels` (when given: the definitions read
   * are filtered, so a page may hold fewer than `limit` while `cursor` says there is more), after `cursor` (the
   * previous page's `cursor`), at most `limit` (default 100, at most 1000).
   * @returns the page and the cursor of the next one (absent: this was the last page).
   */
  async list(o: ListFilter & { cursor?: string; limit?: number } = {}): Promise<{ items: StoredSchedule[]; cursor?: string }> {
    const limit = Math.max(1, Math.min(1000, Math.floor(o.limit ?? 100)));
    const prefix = o.prefix ?? '';
    const scope = o.tenant !== undefined ? `${o.tenant}\0` : '';
    const index = o.tenant !== undefined ? this.keys.storeTenantIndex : this.keys.storeIndex;
    const labels = Object.entries(o.labels ?? {});
    const items: StoredSchedule[] = [];
    let cursor = o.cursor;
    // With labels, read up to 10 pages' worth of names for one page of matches (then hand back a cursor).
    for (let scanned = 0; scanned < (labels.length > 0 ? 10 * limit : limit); ) {
      const min = cursor !== undefined && cursor >= prefix ? `(${scope}${cursor}` : `[${scope}${prefix}`;
      const max = prefix === '' && scope === '' ? '+' : `[${scope}${prefix}\xff`;
      const want = limit - items.length;
      const members = await this.redis.zrangebylex(index, min, max, 'LIMIT', 0, want + 1);
      const names = members.slice(0, want).map((m) => m.slice(scope.length));
      scanned += names.length;
      for (const s of await this.getMany(names)) {
        if (labels.every(([k, v]) => s.definition.labels?.[k] === v)) items.push(s);
      }
      if (members.length <= want) return { items };
      cursor = names[names.length - 1]!;
      if (items.length >= limit) break;
    }
    return { items, cursor: cursor! };
  }

  /** Every stored schedule, read page by page (for tests and tools; a replica reads {@link pages}). */
  async all(): Promise<StoredSchedule[]> {
    const out: StoredSchedule[] = [];
    for await (const page of this.pages()) out.push(...page);
    return out;
  }

  /**
   * Every stored schedule in name order, a page (≤ 1,000) at a time: what a replica reads at start and after a
   * trimmed stream, compiling each page before it reads the next, so that a million read definitions are never
   * in memory at once (a replica's peak while it loads 1,000,000 stored schedules).
   */
  async *pages(): AsyncGenerator<StoredSchedule[]> {
    let cursor: string | undefined;
    do {
      const page = await this.list({ limit: 1000, ...(cursor !== undefined ? { cursor } : {}) });
      yield page.items;
      cursor = page.cursor;
    } while (cursor !== undefined);
  }

  /**
   * The flock's stored-schedule version counter now (0 when there is none). Versions only grow, so a counter below
   * a version a reader has seen says Redis lost the store (restarted without its data, a flush).
   */
  async currentVersion(): Promise<number> {
    return Number((await this.redis.get(this.keys.storeVersion)) ?? 0);
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
    } catch (err) {
      // No stream although this reader read entries of it: Redis lost it (restarted without its data, a flush).
      if (/no such key/i.test(String((err as Error)?.message))) return id !== '0-0';
      throw err;
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
  return {
    name,
    definition: JSON.parse(h.def) as ScheduleDefinition,
    version: Number(h.version),
    updatedAtMs: Number(h.updatedAtMs),
    by: h.by ?? '',
    ...(h.tenant ? { tenant: h.tenant } : {}),
  };
}
