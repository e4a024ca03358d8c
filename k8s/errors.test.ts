import { describe, expect, it } from 'vitest';
import { codeForStatus, errorFromResponse, isK8sError, K8sError, parseApiStatus, retryAfterMs } from './errors.js';

describe('retryAfterMs (RFC 9110 §10.2.3 Retry-After)', () => {
  it('reads delta-seconds', () => {
    expect(retryAfterMs('3')).toBe(3000);
    expect(retryAfterMs(' 0 ')).toBe(0);
  });
  it('reads an HTTP-date relative to now, never negative', () => {
    const now = Date.parse('2026-01-01T00:00:00Z');
    expect(retryAfterMs('Thu, 01 Jan 2026 00:00:05 GMT', undefined, now)).toBe(5000);
    expect(retryAfterMs('Wed, 31 Dec 2025 23:59:00 GMT', undefined, now)).toBe(0);
  });
  it("falls back to the Status' details.retryAfterSeconds, else undefined", () => {
    expect(retryAfterMs(undefined, { kind: 'Status', details: { retryAfterSeconds: 2 } })).toBe(2000);
    expect(retryAfterMs('soon')).toBeUndefined();
    expect(retryAfterMs(undefined)).toBeUndefined();
  });
});

describe('codeForStatus', () => {
  it('maps the statuses the API server uses', () => {
    expect([400, 401, 403, 404, 405, 409, 410, 422, 429, 500, 503, 418].map(codeForStatus)).toEqual([
      'BAD_REQUEST', 'UNAUTHORIZED', 'FORBIDDEN', 'NOT_FOUND', 'METHOD_NOT_ALLOWED', 'CONFLICT', 'GONE', 'INVALID',
      'TOO_MANY_REQUESTS', 'SERVER_ERROR', 'SERVER_ERROR', 'HTTP_ERROR',
    ]);
  });
});

describe('parseApiStatus / errorFromResponse', () => {
  const status = { kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'Expired', message: 'too old', code: 410 };
  it('parses a Status from a JSON string (client-node 1.4 ApiException.body), a Buffer or an object', () => {
    expect(parseApiStatus(JSON.stringify(status))?.reason).toBe('Expired');
    expect(parseApiStatus(Buffer.from(JSON.stringify(status)))?.reason).toBe('Expired');
    expect(parseApiStatus(status)?.reason).toBe('Expired');
    expect(parseApiStatus('<html>')).toBeUndefined();
    expect(parseApiStatus({ kind: 'ConfigMap' })).toBeUndefined();
  });
  it('builds a K8sError with code, status, reason, request and retry-after', () => {
    const e = errorFromResponse(410, JSON.stringify(status), { 'retry-after': '1' }, 'GET /api/v1/pods');
    expect(e).toBeInstanceOf(K8sError);
    expect(isK8sError(e, 'GONE')).toBe(true);
    expect(isK8sError(e, 'NOT_FOUND')).toBe(false);
    expect(e).toMatchObject({ code: 'GONE', status: 410, reason: 'Expired', request: 'GET /api/v1/pods', retryAfterMs: 1000 });
    expect(e.message).toBe('GET /api/v1/pods: HTTP 410 Expired: too old');
  });
});
