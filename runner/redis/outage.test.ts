/**
 * redisFailure's words between a connection's close and its reconnect attempt's first answer: commands fail at
 * once then, before any cause is known; they must say the connection closed (not the client's internals, not
 * a vague "not reachable"), and the cause once the reconnect attempt gives one.
 */
import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import { CLOSED_NOTE, redisFailure, trackConnection } from './outage.js';

describe('redisFailure after a close', () => {
  it('says the connection closed until a reconnect attempt says why, then says why', () => {
    const client = new EventEmitter();
    trackConnection(client, 'redis://127.0.0.1:1');
    client.emit('ready');
    client.emit('close');
    const internal = new Error("Stream isn't writeable and enableOfflineQueue options is false");
    const before = redisFailure(internal);
    expect(before.text).toMatch(/^Redis redis:\/\/127\.0\.0\.1:1 unreachable since \S+ \(the connection to Redis closed; reconnecting\)$/);
    expect(before.fields.err).toBe(CLOSED_NOTE);
    client.emit('error', Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' }));
    const after = redisFailure(internal);
    expect(after.text).toMatch(/connection refused/);
    expect(after.text).not.toMatch(/enableOfflineQueue|closed; reconnecting/);
    client.emit('end');
  });
});
