import { describe, expect, it } from 'vitest';
import { EngineEvents, type RunEvent } from './events.js';
import { LiveReplicas } from './ownership.js';

const run = (state: RunEvent['state']): RunEvent => ({ schedule: 's', key: 's@x', state, replica: 'a', dueMs: 1, fireMs: 1 });

describe('EngineEvents', () => {
  it('reports to every listener in the order they subscribed; a listener that throws does not stop the others', () => {
    const events = new EngineEvents();
    const seen: string[] = [];
    events.on('run', (e) => seen.push(`first ${e.state}`));
    events.on('run', () => {
      throw new Error('a subscriber bug');
    });
    events.on('run', (e) => seen.push(`third ${e.state}`));
    events.on('plannedFinal', (e) => seen.push(`final ${e.state} ${e.reason}`));
    expect(() => events.report('run', run('started'))).not.toThrow();
    events.report('plannedFinal', { schedule: 's', key: 's@x', dueMs: 0, state: 'missed', reason: 'starting deadline exceeded' });
    expect(seen).toEqual(['first started', 'third started', 'final missed starting deadline exceeded']);
  });

  it('honours once and off', () => {
    const events = new EngineEvents();
    const seen: string[] = [];
    const l = (e: RunEvent): void => void seen.push(`on ${e.state}`);
    events.once('run', (e) => seen.push(`once ${e.state}`));
    events.on('run', l);
    events.report('run', run('started'));
    events.off('run', l);
    events.report('run', run('succeeded'));
    expect(seen).toEqual(['once started', 'on started']);
    expect(events.listenerCount('run')).toBe(0);
  });
});

describe('LiveReplicas', () => {
  it('counts every replica live before the first view, then those of the latest view; says when the set changed', () => {
    const live = new LiveReplicas();
    expect(live.has('anyone')).toBe(true);
    expect(live.update(['a', 'b'])).toBe(true);
    expect([live.has('a'), live.has('c')]).toEqual([true, false]);
    expect(live.update(['b', 'a'])).toBe(false);
    expect(live.update(['a'])).toBe(true);
    expect(live.update(['a', 'c'])).toBe(true);
    expect(live.has('b')).toBe(false);
  });
});
