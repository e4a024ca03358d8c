/**
 * The Postgres fencing guard of cronflock/receiver against a real PostgreSQL server: the one statement
 * accepts the first and equal or higher tokens, refuses a lower one, and — inside the transaction that does the
 * work — makes a stale claimant wait for the current one's commit and then refuses it, so only the current
 * claimant's write lands.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { acceptFencingToken, postgresFencingStore } from '../../receiver/index.js';
import { PostgresServer } from '../support/postgres.js';

describe('postgresFencingStore on a real PostgreSQL', () => {
  let server: PostgresServer;
  let pool: pg.Pool;
  beforeAll(async () => {
    server = await PostgresServer.start();
    pool = new pg.Pool({ ...server.config, max: 4 });
    // A server stopping under an idle client's feet says so on the client: not a test failure.
    pool.on('error', () => undefined);
    await pool.query(postgresFencingStore(pool).createTableSql);
    await pool.query('CREATE TABLE exports (occurrence text PRIMARY KEY, written_by bigint NOT NULL)');
  });
  afterAll(async () => {
    await pool?.end();
    await server?.stop();
  });

  it('accepts equal and higher tokens and refuses a lower one, per occurrence', async () => {
    const store = postgresFencingStore(pool);
    expect(await acceptFencingToken(store, 'a@1', 2)).toBe(true);
    expect(await acceptFencingToken(store, 'a@1', 2)).toBe(true);
    expect(await acceptFencingToken(store, 'a@1', 1)).toBe(false);
    expect(await acceptFencingToken(store, 'a@1', 7)).toBe(true);
    expect(await acceptFencingToken(store, 'a@1', 6)).toBe(false);
    expect(await acceptFencingToken(store, 'b@1', 1)).toBe(true);
    expect((await pool.query("SELECT token FROM cronflock_fencing WHERE occurrence = 'a@1'")).rows).toEqual([{ token: '7' }]);
  });

  it('in the work\'s transaction, a stale claimant waits for the current one and is then refused', async () => {
    const current = await pool.connect();
    const stale = await pool.connect();
    try {
      await current.query('BEGIN');
      expect(await acceptFencingToken(postgresFencingStore(current), 'c@1', 5)).toBe(true);
      await current.query("INSERT INTO exports VALUES ('c@1', 5)");
      // The stale claimant (token 4) starts its own transaction now: its guard blocks on the row lock.
      await stale.query('BEGIN');
      const staleGuard = acceptFencingToken(postgresFencingStore(stale), 'c@1', 4);
      let settled = false;
      void staleGuard.then(() => (settled = true));
      await new Promise((r) => setTimeout(r, 300));
      expect(settled).toBe(false);
      await current.query('COMMIT');
      expect(await staleGuard).toBe(false);
      await stale.query('ROLLBACK');
      expect((await pool.query("SELECT written_by FROM exports WHERE occurrence = 'c@1'")).rows).toEqual([{ written_by: '5' }]);
    } finally {
      current.release();
      stale.release();
    }
  });

  it('refuses a table name that is not an identifier', () => {
    expect(() => postgresFencingStore(pool, { table: 'x; DROP TABLE y' })).toThrow(TypeError);
  });
});
