/**
 * Fencing guards for receivers: refuse a call whose fencing token is lower than the highest one already seen for
 * the same occurrence (Kleppmann's fencing tokens). cronflock gives every claim of an occurrence a larger token
 * (the http job sends it as `fencingToken` and in `x-cronflock-fencing-token`); a claimant that was paused past its
 * lease and wakes up carries an older token than the replica that took over, and the guard refuses it.
 *
 * Equal tokens are accepted: the same claim may legitimately call twice (a proxy retry). A replayed request is
 * the signature check's to refuse (timestamp tolerance + {@link ../signature.ts}'s replay guard).
 *
 * The guard protects the receiver's writes only when it is checked atomically with them: with the Postgres
 * statement, inside the transaction that does the work (its row lock serialises two claimants); with Redis or
 * memory, before work that is itself idempotent.
 */

/** Where the highest token per key is kept. `acceptIfNotLower` must compare and store in one atomic step. */
export interface FencingStore {
  /** Records `token` for `key` and returns true unless a higher token was already recorded for `key`. */
  acceptIfNotLower(key: string, token: number): Promise<boolean>;
}

/**
 * True when `token` is not lower than the highest token seen for `key` (and records it); false for a stale token.
 * @param key usually the occurrence key (`<schedule>@<due ISO>`), the body's `occurrence`.
 * @throws TypeError for an empty key or a token that is not a non-negative safe integer.
 */
export async function acceptFencingToken(store: FencingStore, key: string, token: number): Promise<boolean> {
  if (typeof key !== 'string' || key === '') throw new TypeError('acceptFencingToken: key must be a non-empty string');
  if (!Number.isSafeInteger(token) || token < 0) throw new TypeError(`acceptFencingToken: token must be a non-negative integer, got ${String(token)}`);
  return store.acceptIfNotLower(key, token);
}

/**
 * A store in this process's memory: for a single receiver process, and tests. Keeps at most `maxKeys` keys
 * (oldest dropped first; default 100 000), so it does not grow forever.
 */
export function memoryFencingStore(o: { maxKeys?: number } = {}): FencingStore {
  const max = o.maxKeys ?? 100_000;
  const tokens = new Map<string, number>();
  return {
    acceptIfNotLower(key, token) {
      const cur = tokens.get(key);
      if (cur !== undefined && token < cur) return Promise.resolve(false);
      tokens.delete(key); // re-insert: Map order is the eviction order
      tokens.set(key, token);
      if (tokens.size > max) tokens.delete(tokens.keys().next().value!);
      return Promise.resolve(true);
    },
  };
}

/** The part of an ioredis (or node-redis v4 `sendCommand`-wrapped) client the Redis store needs. */
export interface RedisEvalClient {
  eval(script: string, numKeys: number, ...args: (string | number)[]): Promise<unknown>;
}

/**
 * The compare-and-set, inline on purpose (not a file of runner/redis/lua/ through the script loader): this module
 * is part of the `cronflock/receiver` entry that users' receivers import, which stays self-contained (only
 * node: built-ins, nothing from runner/); it runs on the user's own client through plain EVAL (ioredis or
 * node-redis, {@link RedisEvalClient}), not on a cronflock connection the loader defines its commands on; and its
 * key is the user's (`<prefix><key>`), not one of a flock's Keyspace. It reads no clock (the expiry is `EX`).
 */
const REDIS_ACCEPT_LUA = `
local cur = redis.call('GET', KEYS[1])
if cur and tonumber(ARGV[1]) < tonumber(cur) then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2])
return 1
`;

/**
 * A store in Redis (compare-and-set in one Lua script), shared by every receiver process. Keys are
 * `<prefix><key>` (default prefix `cronflock:fence:`) and expire `ttlS` after the last accepted token (default
 * 7 days: longer than any occurrence stays claimable).
 */
export function redisFencingStore(client: RedisEvalClient, o: { prefix?: string; ttlS?: number } = {}): FencingStore {
  const prefix = o.prefix ?? 'cronflock:fence:';
  const ttl = o.ttlS ?? 7 * 86_400;
  return {
    async acceptIfNotLower(key, token) {
      return Number(await client.eval(REDIS_ACCEPT_LUA, 1, prefix + key, token, ttl)) === 1;
    },
  };
}

/** The part of a `pg` Client or Pool (or any driver with the same shape) the Postgres guard needs. */
export interface PgQueryable {
  query(text: string, values?: unknown[]): Promise<{ rowCount: number | null }>;
}

/**
 * The Postgres guard: one statement that inserts the token, or raises it, only when it is not lower than the
 * stored one, and returns a row when accepted.
 *
 *     INSERT INTO cronflock_fencing AS f (occurrence, token) VALUES ($1, $2)
 *     ON CONFLICT (occurrence) DO UPDATE SET token = EXCLUDED.token, seen_at = now()
 *       WHERE f.token <= EXCLUDED.token
 *     RETURNING token
 *
 * Run it inside the transaction that does the work: the conflicting row stays locked until commit, so a second
 * claimant's statement waits and then sees the committed token. Create the table once with {@link createTableSql}.
 * @param o.table table name (default `cronflock_fencing`; letters, digits, `_`, optionally schema-qualified).
 */
export function postgresFencingStore(client: PgQueryable, o: { table?: string } = {}): FencingStore & { createTableSql: string; acceptSql: string } {
  const table = o.table ?? 'cronflock_fencing';
  if (!/^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?$/.test(table)) {
    throw new TypeError(`postgresFencingStore: table "${table}" must be an identifier (letters, digits, _), optionally schema.table`);
  }
  const acceptSql =
    `INSERT INTO ${table} AS f (occurrence, token) VALUES ($1, $2) ` +
    'ON CONFLICT (occurrence) DO UPDATE SET token = EXCLUDED.token, seen_at = now() WHERE f.token <= EXCLUDED.token RETURNING token';
  return {
    createTableSql: `CREATE TABLE IF NOT EXISTS ${table} (occurrence text PRIMARY KEY, token bigint NOT NULL, seen_at timestamptz NOT NULL DEFAULT now())`,
    acceptSql,
    async acceptIfNotLower(key, token) {
      const r = await client.query(acceptSql, [key, token]);
      return (r.rowCount ?? 0) === 1;
    },
  };
}
