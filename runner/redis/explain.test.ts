import { describe, expect, it } from 'vitest';
import { explainRedisError, formatRedisProblem } from './explain.js';

describe('Redis failures in words', () => {
  it("says the connection's cause when the command only reports the client's internals", () => {
    const internals = [
      'Reached the max retries per request limit (which is 1). Refer to "maxRetriesPerRequest" option for details.',
      "Stream isn't writeable and enableOfflineQueue options is false",
      'Connection is closed.',
    ];
    for (const m of internals) {
      const p = explainRedisError(new Error(m), ['connect ECONNREFUSED 127.0.0.1:6390']);
      expect(p.message).toBe('nothing accepts connections there (connection refused)');
      expect(p.hint).toMatch(/is Redis running/);
      expect(formatRedisProblem(p)).not.toMatch(/maxRetriesPerRequest|enableOfflineQueue|Connection is closed/);
    }
    expect(explainRedisError(new Error(internals[0]!), []).message).toBe('Redis is not reachable');
  });

  it("keeps the server's own words (WRONGPASS, NOAUTH, a certificate) and adds what to do", () => {
    expect(explainRedisError(new Error('WRONGPASS invalid username-password pair or user is disabled.')).message).toMatch(/WRONGPASS/);
    expect(explainRedisError(new Error('Connection is closed.'), ['NOAUTH Authentication required.']).hint).toMatch(/redis:\/\/:password@/);
    const cert = explainRedisError(new Error('Connection is closed.'), ['self-signed certificate in certificate chain']);
    expect(cert.message).toMatch(/certificate was not accepted: self-signed certificate/);
    expect(cert.hint).toMatch(/--redis-tls-ca/);
    expect(explainRedisError(new Error("OOM command not allowed when used memory > 'maxmemory'.")).message).toMatch(/out of memory/);
  });

  it("finds the most specific cause among the connection's errors (a Cluster hides WRONGPASS behind its own words)", () => {
    const p = explainRedisError(new Error('Failed to refresh slots cache.'), ['WRONGPASS invalid username-password pair', 'Connection is closed.']);
    expect(p.message).toMatch(/WRONGPASS/);
  });

  it('passes other errors through as they are (one line)', () => {
    expect(explainRedisError(new Error('ERR unknown command\nsecond line'))).toEqual({ message: 'ERR unknown command' });
  });
});
