import { describe, expect, it } from 'vitest';
import { canonicalJson } from './canonical-json.js';
import { editDistance } from './edit-distance.js';

describe('editDistance', () => {
  it('counts insertions, deletions and substitutions', () => {
    expect(editDistance('', '')).toBe(0);
    expect(editDistance('jitter', 'jitter')).toBe(0);
    expect(editDistance('jiter', 'jitter')).toBe(1);
    expect(editDistance('kitten', 'sitting')).toBe(3);
    expect(editDistance('Europe/Pari', 'Europe/Paris')).toBe(1);
    expect(editDistance('abc', '')).toBe(3);
  });

  it('gives up at the cap', () => {
    expect(editDistance('kitten', 'sitting', 2)).toBe(2);
    expect(editDistance('a', 'abcdefgh', 4)).toBe(4);
    expect(editDistance('kitten', 'sitting', 4)).toBe(3);
  });
});

describe('canonicalJson', () => {
  it('sorts keys at every level by code units, keeps array order, leaves undefined out', () => {
    expect(canonicalJson({ b: 1, a: { d: [3, { z: 1, y: 2 }], c: undefined }, B: null })).toBe('{"B":null,"a":{"d":[3,{"y":2,"z":1}]},"b":1}');
    expect(canonicalJson({ é: 1, e: 2, Z: 3 })).toBe('{"Z":3,"e":2,"é":1}');
  });

  it('gives equal text for equal values built in another order', () => {
    const a = { spec: { replicas: 2, template: { labels: { app: 'x', tier: 'web' } } }, kind: 'Deployment' };
    const b = { kind: 'Deployment', spec: { template: { labels: { tier: 'web', app: 'x' } }, replicas: 2 } };
    expect(canonicalJson(a)).toBe(canonicalJson(b));
  });
});
