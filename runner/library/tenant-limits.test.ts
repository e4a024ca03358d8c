/**
 * A tenant's own "no limit" overrides the default ('*') limit (found by a user: `setLimit('acme', null)`,
 * documented "null for no limit", deleted acme's own limit, so acme fell back to '*' and its upserts were
 * refused); `'default'` puts the tenant back under '*'. Real redis-server.
 */
import { describe, expect, it } from 'vitest';
import { usePrivateRedis } from '../../test/support/private-redis.js';
import { connectFlock, LibraryArgumentError, TenantLimitError } from './index.js';

const pr = usePrivateRedis();
const def = (name: string) => ({ name, cron: '0 8 * * *', tenant: 'acme', job: { kind: 'http', url: 'http://127.0.0.1:9/x' } });

describe('tenant limits: null (no limit) against a default', () => {
  it("null exempts the tenant from '*', 'default' holds it to '*' again, and the listing says which", async () => {
    const flock = await connectFlock({ redis: pr.server.url, namespace: 'tl' });
    try {
      await flock.tenants.setLimit('*', 1);
      expect((await flock.schedules.upsert(def('a1'))).ok).toBe(true);
      const refused = await flock.schedules.upsert(def('a2'));
      expect(!refused.ok && refused.error).toBeInstanceOf(TenantLimitError);

      await flock.tenants.setLimit('acme', null);
      expect((await flock.tenants.list()).tenants).toEqual([{ tenant: 'acme', count: 1, limit: null, defaultLimit: false }]);
      expect((await flock.schedules.upsert(def('a2'))).ok).toBe(true);
      expect((await flock.schedules.upsert(def('a3'))).ok).toBe(true);

      await flock.tenants.setLimit('acme', 'default');
      expect((await flock.tenants.list()).tenants).toEqual([{ tenant: 'acme', count: 3, limit: 1, defaultLimit: true }]);
      const again = await flock.schedules.upsert(def('a4'));
      expect(!again.ok && again.error).toBeInstanceOf(TenantLimitError);

      await expect(flock.tenants.setLimit('*', 'default')).rejects.toThrow(LibraryArgumentError);
      await flock.tenants.setLimit('*', null); // no default: nothing limits acme
      expect((await flock.tenants.list()).defaultLimit).toBeNull();
      expect((await flock.schedules.upsert(def('a4'))).ok).toBe(true);
    } finally {
      await flock.close();
    }
  });
});
