import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { buffer } from 'node:stream/consumers';
import { pipeline } from 'node:stream/promises';
import { describe, expect, it } from 'vitest';
import { CHUNK_SIZE, createDecryptStream, createEncryptStream, decodeKey, keyIdOf, parseEnvelopeHeader } from './encryption.js';

const kek = randomBytes(32);

async function encrypt(plain: Buffer): Promise<Buffer> {
  // Feed in uneven pieces, as a real stream would.
  const pieces: Buffer[] = [];
  for (let i = 0; i < plain.length; i += 7777) pieces.push(plain.subarray(i, i + 7777));
  const enc = createEncryptStream(kek);
  const [out] = await Promise.all([buffer(enc), pipeline(Readable.from(pieces), enc)]);
  return out;
}

async function decrypt(box: Buffer, keys: Buffer[] = [kek]): Promise<Buffer> {
  const dec = createDecryptStream(keys);
  const [out] = await Promise.all([buffer(dec), pipeline(Readable.from([box.subarray(0, 100), box.subarray(100)]), dec)]);
  return out;
}

function chunkStart(box: Buffer, i: number): number {
  return parseEnvelopeHeader(box)!.length + i * (CHUNK_SIZE + 16);
}

describe('backup encryption envelope', () => {
  it.each([0, 1, CHUNK_SIZE - 1, CHUNK_SIZE, CHUNK_SIZE + 1, 3 * CHUNK_SIZE, 3 * CHUNK_SIZE + 5])('round-trips %i bytes', async (n) => {
    const plain = randomBytes(n);
    const box = await encrypt(plain);
    expect(parseEnvelopeHeader(box)!.header.keyId).toBe(keyIdOf(kek));
    expect((await decrypt(box)).equals(plain)).toBe(true);
  });

  it('refuses a flipped byte, a dropped final chunk, swapped chunks and a wrong key', async () => {
    const plain = randomBytes(3 * CHUNK_SIZE + 10);
    const box = await encrypt(plain);
    const flipped = Buffer.from(box);
    flipped[chunkStart(box, 1) + 5]! ^= 1;
    await expect(decrypt(flipped)).rejects.toMatchObject({ code: 'VERIFY', message: expect.stringContaining('chunk 1') });
    // Truncated at a chunk boundary: the last remaining chunk was sealed as non-final.
    await expect(decrypt(box.subarray(0, chunkStart(box, 3)))).rejects.toMatchObject({ code: 'VERIFY' });
    const swapped = Buffer.concat([box.subarray(0, chunkStart(box, 0)), box.subarray(chunkStart(box, 1), chunkStart(box, 2)), box.subarray(chunkStart(box, 0), chunkStart(box, 1)), box.subarray(chunkStart(box, 2))]);
    await expect(decrypt(swapped)).rejects.toMatchObject({ code: 'VERIFY' });
    const header = Buffer.from(box);
    header[20]! ^= 1; // inside the JSON header
    await expect(decrypt(header)).rejects.toMatchObject({ code: expect.stringMatching(/VERIFY|KEY/) });
    await expect(decrypt(box, [randomBytes(32)])).rejects.toMatchObject({ code: 'KEY', message: expect.stringContaining(keyIdOf(kek)) });
  });

  it('decodes keys as base64, hex or raw bytes, and says how to make one otherwise', () => {
    expect(decodeKey(Buffer.from(kek.toString('base64')), 'k').equals(kek)).toBe(true);
    expect(decodeKey(Buffer.from(`${kek.toString('hex')}\n`), 'k').equals(kek)).toBe(true);
    expect(decodeKey(kek, 'k').equals(kek)).toBe(true);
    expect(() => decodeKey(Buffer.from('short'), 'key file x')).toThrow(/key file x: not a 32-byte key .*openssl rand -base64 32/);
  });
});
