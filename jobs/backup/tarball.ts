/**
 * A streamed tar.gz writer for files held in memory, one at a time: tar's own header encoders (`Header`, and
 * `Pax` for paths longer than ustar's 100 bytes, as tar's WriteEntry does) and Node's gzip stream, with
 * backpressure (`add` waits while the consumer is behind).
 *
 * Why not tar's `Pack`: fed with in-memory entries and read by a consumer that applies backpressure (a file or
 * an upload), Pack 7.5 stalled here after the first entries; its flow control is built for file-system entries.
 */
import { createGzip, type Gzip } from 'node:zlib';
import { Header, Pax } from 'tar';

const BLOCK = 512;

/** Writes a tar.gz; read the bytes from {@link TarGzWriter.stream}. */
export class TarGzWriter {
  /** The compressed archive. Destroy it (with an error) to abandon the archive. */
  readonly stream: Gzip = createGzip();

  /**
   * Appends one regular file (mode 0644, uid/gid 0). Resolves when the consumer can take more. Rejects when the
   * stream was destroyed (the consumer failed). `TypeError` for an empty path.
   */
  async add(path: string, data: Buffer, mtime: Date): Promise<void> {
    if (path === '') throw new TypeError('a tar entry needs a path');
    const header = new Header({ path, mode: 0o644, size: data.length, mtime, type: 'File', uid: 0, gid: 0 });
    const parts: Buffer[] = [];
    // encode() fills header.block and says whether the path needs a PAX extended header before it.
    if (header.encode()) parts.push(new Pax({ path, mtime }).encode());
    parts.push(header.block!, data);
    const pad = (BLOCK - (data.length % BLOCK)) % BLOCK;
    if (pad > 0) parts.push(Buffer.alloc(pad));
    await this.write(Buffer.concat(parts));
  }

  /** Writes the end-of-archive marker (two zero blocks) and ends the stream. */
  async end(): Promise<void> {
    await this.write(Buffer.alloc(2 * BLOCK));
    this.stream.end();
  }

  private write(buf: Buffer): Promise<void> {
    const s = this.stream;
    if (s.destroyed) return Promise.reject(new Error('the archive stream was closed'));
    if (s.write(buf)) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const done = (err?: Error): void => {
        s.off('drain', onDrain);
        s.off('close', onClose);
        if (err) reject(err);
        else resolve();
      };
      const onDrain = (): void => done();
      const onClose = (): void => done(new Error('the archive stream was closed'));
      s.on('drain', onDrain);
      s.on('close', onClose);
    });
  }
}
