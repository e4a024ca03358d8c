import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { RedisTlsError, tlsOptions } from './connect.js';
import { parseRedisUrl, redactRedisUrl, redactSecrets, RedisUrlError } from './url.js';

describe('parseRedisUrl', () => {
  it('reads one server with user, password and database', () => {
    expect(parseRedisUrl('redis://alice:s3cr%40t@redis.example:6380/2')).toEqual({
      mode: 'standalone',
      tls: false,
      nodes: [{ host: 'redis.example', port: 6380 }],
      username: 'alice',
      password: 's3cr@t',
      db: 2,
      redacted: 'redis://alice:***@redis.example:6380/2',
    });
  });

  it('defaults the port and database; a password alone goes after ":"', () => {
    const e = parseRedisUrl('rediss://:pw@10.0.0.1');
    expect(e).toMatchObject({ mode: 'standalone', tls: true, nodes: [{ host: '10.0.0.1', port: 6379 }], password: 'pw', db: 0 });
    expect(e.username).toBeUndefined();
    expect(parseRedisUrl('redis://[::1]:7000').nodes).toEqual([{ host: '::1', port: 7000 }]);
  });

  it('reads Sentinel: sentinels, master name, db, and separate sentinel credentials', () => {
    const e = parseRedisUrl('redis+sentinel://:masterpw@s1:26380,s2,[::1]:26381/mymaster/3?sentinelPassword=sentpw&sentinelUsername=sen');
    expect(e).toEqual({
      mode: 'sentinel',
      tls: false,
      nodes: [
        { host: 's1', port: 26380 },
        { host: 's2', port: 26379 },
        { host: '::1', port: 26381 },
      ],
      password: 'masterpw',
      db: 3,
      masterName: 'mymaster',
      sentinelUsername: 'sen',
      sentinelPassword: 'sentpw',
      redacted: 'redis+sentinel://:***@s1:26380,s2,[::1]:26381/mymaster/3?sentinelPassword=***&sentinelUsername=sen',
    });
    expect(parseRedisUrl('rediss+sentinel://s1/m')).toMatchObject({ tls: true, masterName: 'm', db: 0 });
  });

  it('reads Cluster seed nodes with credentials', () => {
    expect(parseRedisUrl('redis+cluster://u:p@h1:7000,h2:7001,h3')).toMatchObject({
      mode: 'cluster',
      tls: false,
      nodes: [
        { host: 'h1', port: 7000 },
        { host: 'h2', port: 7001 },
        { host: 'h3', port: 6379 },
      ],
      username: 'u',
      password: 'p',
    });
    expect(parseRedisUrl('rediss+cluster://h1:7000').tls).toBe(true);
  });

  it('refuses what it cannot use, without the password in the message', () => {
    const bad: [string, RegExp][] = [
      ['http://:hunter22@h', /unknown scheme/],
      ['localhost:6379', /not a Redis URL/],
      ['redis://hunter22@h', /ambiguous/],
      ['redis://:hunter22@h:99999', /bad port/],
      ['redis://:hunter22@h1,h2', /several hosts/],
      ['redis://:hunter22@h/x', /database "x"/],
      ['redis+cluster://:hunter22@h/1', /only database 0/],
      ['redis+sentinel://:hunter22@h', /master name is missing/],
      ['redis://:hunter22@h?tls=1', /unknown query parameter "tls"/],
      ['redis+sentinel://h/m?sentinelPasword=hunter22', /unknown query parameter "sentinelPasword"/],
      ['redis://:hunter%zz22@h', /percent-encoding/],
    ];
    for (const [url, re] of bad) {
      let err: unknown;
      try {
        parseRedisUrl(url);
      } catch (e) {
        err = e;
      }
      expect(err, url).toBeInstanceOf(RedisUrlError);
      expect((err as Error).message, url).toMatch(re);
      expect((err as Error).message, url).not.toMatch(/hunter/);
    }
  });
});

describe('redactRedisUrl', () => {
  it('hides passwords and query parameter values, in good and bad URLs alike', () => {
    const cases: [string, string][] = [
      ['redis://127.0.0.1:6379', 'redis://127.0.0.1:6379'],
      ['redis://alice:pw@h:1/0', 'redis://alice:***@h:1/0'],
      ['redis://:pw@h', 'redis://:***@h'],
      ['redis://justonething@h', 'redis://***@h'],
      ['redis://:p@ss/w?rd@h:1', 'redis://:***@h:1'],
      ['rediss+sentinel://:a@s1,s2/m?sentinelPassword=b&x=1', 'rediss+sentinel://:***@s1,s2/m?sentinelPassword=***&x=***'],
      ['redis+cluster://u:p@h1:1,h2:2', 'redis+cluster://u:***@h1:1,h2:2'],
      ['not a url with token=abc', 'not a url with token=abc'],
    ];
    for (const [url, want] of cases) expect(redactRedisUrl(url), url).toBe(want);
  });

  it('hides known secrets inside other text', () => {
    expect(redactSecrets('AUTH masterpw failed; sentinel sentpw', { password: 'masterpw', sentinelPassword: 'sentpw' })).toBe(
      'AUTH *** failed; sentinel ***',
    );
  });
});

describe('tlsOptions', () => {
  it('reads the CA and client files for rediss and refuses TLS files for a plain URL', () => {
    const dir = mkdtempSync(join(tmpdir(), 'cronflock-tls-'));
    try {
      for (const f of ['ca.pem', 'c.pem', 'k.pem']) writeFileSync(join(dir, f), `-----${f}-----`);
      const files = { caFile: join(dir, 'ca.pem'), certFile: join(dir, 'c.pem'), keyFile: join(dir, 'k.pem') };
      const o = tlsOptions(parseRedisUrl('rediss://h'), files)!;
      expect(String(o.ca)).toBe('-----ca.pem-----');
      expect(String(o.cert)).toBe('-----c.pem-----');
      expect(String(o.key)).toBe('-----k.pem-----');
      expect(o.rejectUnauthorized).toBeUndefined();
      expect(tlsOptions(parseRedisUrl('rediss://h'), { insecure: true })).toEqual({ rejectUnauthorized: false });
      expect(tlsOptions(parseRedisUrl('redis://h'))).toBeUndefined();
      expect(() => tlsOptions(parseRedisUrl('redis://:pw@h'), { caFile: files.caFile })).toThrow(/not a TLS URL/);
      expect(() => tlsOptions(parseRedisUrl('redis://:pw@h'), { caFile: files.caFile })).not.toThrow(/pw/);
      expect(() => tlsOptions(parseRedisUrl('rediss://h'), { certFile: files.certFile })).toThrow(RedisTlsError);
      expect(() => tlsOptions(parseRedisUrl('rediss://h'), { caFile: join(dir, 'nope.pem') })).toThrow(/cannot read the Redis TLS CA file/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
