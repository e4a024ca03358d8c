/**
 * Reading a file the loader parses without first holding more of it than it may parse.
 */
import { open } from 'node:fs/promises';

/**
 * The file as UTF-8 text, unless it holds more than `maxBytes` (then its size; at most `maxBytes` + 64 KiB are read).
 * @throws the fs error when the file cannot be opened or read (ENOENT, EACCES, EISDIR).
 */
export async function readBounded(file: string, maxBytes: number): Promise<{ tooLarge: false; text: string } | { tooLarge: true; sizeBytes: number }> {
  const fh = await open(file, 'r');
  try {
    const size = (await fh.stat()).size;
    if (size > maxBytes) return { tooLarge: true, sizeBytes: size };
    // Read in chunks, not by the size from stat: the file may grow in between.
    const chunks: Buffer[] = [];
    let n = 0;
    for (;;) {
      const chunk = Buffer.allocUnsafe(64 * 1024);
      const { bytesRead } = await fh.read(chunk, 0, chunk.length, null);
      if (bytesRead === 0) break;
      chunks.push(chunk.subarray(0, bytesRead));
      n += bytesRead;
      if (n > maxBytes) return { tooLarge: true, sizeBytes: Math.max(n, (await fh.stat()).size) };
    }
    return { tooLarge: false, text: Buffer.concat(chunks, n).toString('utf8') };
  } finally {
    await fh.close();
  }
}
