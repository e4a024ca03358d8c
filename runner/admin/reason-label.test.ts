/** The reason label of cronflock_occurrences_not_run_total stays bounded: no seconds, no occurrence keys. */
import { describe, expect, it } from 'vitest';
import { reasonLabel } from './metrics.js';

describe('reasonLabel', () => {
  it('keeps the group or rate limit a missed occurrence waited for, without how long', () => {
    expect(reasonLabel('starting deadline exceeded: waited for group cluster-prod 12.3 s')).toBe('starting deadline exceeded: waited for group cluster-prod');
    expect(reasonLabel('starting deadline exceeded: waited for rate limit of group api 0.4 s')).toBe('starting deadline exceeded: waited for rate limit of group api');
    expect(reasonLabel('starting deadline exceeded')).toBe('starting deadline exceeded');
  });
});
