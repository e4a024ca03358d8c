import { describe, expect, it } from 'vitest';
import { limitsFromFlags } from '../../runner/cli/restore-command.js';
import { archiveLimits, archiveLimitsSchema, DEFAULT_LIMITS, formatByteSize, overLimits, parseByteSize } from './limits.js';

describe('archive limits', () => {
  it('sizes: bytes or binary suffixes; anything else is refused with an example', () => {
    expect(parseByteSize('123')).toBe(123);
    expect(parseByteSize('8Mi')).toBe(8 * 1024 * 1024);
    expect(parseByteSize('2Gi')).toBe(2 * 1024 ** 3);
    for (const bad of ['8MB', '8 Mi', '-1', '0', '1.5Gi', 'lots']) expect(() => parseByteSize(bad), bad).toThrow(/e\.g\. 8Mi, 2Gi|≥ 1 byte/);
    expect(formatByteSize(8 * 1024 * 1024)).toBe('8 MiB');
    expect(formatByteSize(1536)).toBe('1.5 KiB');
    expect(formatByteSize(100)).toBe('100 bytes');
  });

  it('the limits: block and --limit override some limits; the rest keep their defaults', () => {
    expect(archiveLimits(archiveLimitsSchema.parse({ maxTotalSize: '4Gi', maxObjects: 10 }))).toEqual({ ...DEFAULT_LIMITS, maxTotalSize: 4 * 1024 ** 3, maxObjects: 10 });
    expect(archiveLimitsSchema.safeParse({ maxObjectSize: '8MB' }).success).toBe(false);
    expect(archiveLimitsSchema.safeParse({ maxEntries: 1 }).success).toBe(false);
    expect(limitsFromFlags(['maxObjectSize=32Mi', 'maxCompressionRatio=500'])).toEqual({ ...DEFAULT_LIMITS, maxObjectSize: 32 * 1024 * 1024, maxCompressionRatio: 500 });
    expect(limitsFromFlags([])).toEqual(DEFAULT_LIMITS);
    expect(() => limitsFromFlags(['maxTotalSize'])).toThrow('--limit maxTotalSize: must be <name>=<value>, e.g. --limit maxTotalSize=4Gi (names: maxObjectSize, maxManifestSize, maxObjects, maxTotalSize, maxCompressionRatio)');
    expect(() => limitsFromFlags(['maxBytes=1Gi'])).toThrow(/--limit maxBytes: unknown limit \(names: maxObjectSize/);
    expect(() => limitsFromFlags(['maxTotalSize=4GB'])).toThrow(/--limit maxTotalSize: "4GB" is not a size/);
  });

  it("a writer learns which of a restore's limits its archive is over", () => {
    const stats = { objects: 3, totalBytes: 2048, largest: { path: 'configmaps.#v1/a/b.json', bytes: 1024 }, manifestBytes: 500 };
    expect(overLimits(stats, DEFAULT_LIMITS)).toEqual([]);
    expect(overLimits(stats, archiveLimits({ maxObjects: 2, maxTotalSize: 2000, maxObjectSize: 1000, maxManifestSize: 400 }))).toEqual([
      'maxObjects: 3 entries',
      'maxTotalSize: 2 KiB',
      'maxObjectSize: configmaps.#v1/a/b.json is 1 KiB',
      'maxManifestSize: 500 bytes',
    ]);
  });
});
