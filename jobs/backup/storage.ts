/**
 * Where archives live: a local directory, or S3-compatible object storage (AWS SDK v3; path-style addressing for
 * MinIO, moto, Ceph; multipart streaming uploads through `@aws-sdk/lib-storage`). Both implement
 * {@link BackupStorage}: an archive is streamed to a temporary name (never a valid backup name, so retention and
 * listings of backups ignore it) and then published under its final name atomically and without overwriting.
 *
 * - Local: the temporary is `.<name>.partial-<random>` in the same directory, written with fsync; publishing is
 *   `link(2)` (fails with EEXIST when the name exists: no overwrite, atomic) and then unlinking the temporary.
 * - S3: the temporary is the key `<prefix><name>.partial-<random>`, a multipart upload (aborted on error or
 *   abort); publishing is HeadObject (exists: done) then server-side CopyObject to the final key and DeleteObject
 *   of the temporary. S3 has no rename: the final key appears whole or not at all; CopyObject limits an archive
 *   to 5 GB. Two claimants of one occurrence cannot race here: the engine fences a stale claimant (its signal
 *   fires before another replica can claim), and a claimant checks for the published name before it starts.
 */
import { randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { link, mkdir, readdir, stat, unlink } from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import {
  CopyObjectCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  S3Client,
  type S3ClientConfig,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { getObject, type KubeClient, type KubeObject } from '../../k8s/index.js';
import { BackupError } from './errors.js';
import type { BackupStorage, StoredBackup } from './format.js';

function tempName(name: string): string {
  return `${name}.partial-${randomBytes(6).toString('hex')}`;
}

function checkName(name: string): void {
  if (name === '' || name.includes('/') || name === '.' || name === '..') throw new BackupError('STORAGE', `${JSON.stringify(name)} is not a backup file name`);
}

/** Options of {@link localStorage}. */
export interface LocalStorageOptions {
  /** Directory (created when missing). */
  directory: string;
}

/**
 * A {@link BackupStorage} in a local directory (e.g. a mounted volume). Errors: `BackupError` `STORAGE` naming the
 * path, `NOT_FOUND` for a missing archive on `read`.
 */
export function localStorage(options: LocalStorageOptions): BackupStorage {
  const dir = path.resolve(options.directory);
  const full = (name: string): string => {
    checkName(name);
    return path.join(dir, name);
  };
  const fail = (what: string, e: unknown): BackupError => new BackupError('STORAGE', `${what}: ${(e as Error).message}`, { cause: e });
  return {
    location: `${dir}/`,
    async list() {
      let names: string[];
      try {
        names = await readdir(dir);
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code === 'ENOENT') return [];
        throw fail(`listing ${dir}`, e);
      }
      const out: StoredBackup[] = [];
      for (const name of names) {
        const s = await stat(path.join(dir, name)).catch(() => undefined);
        if (s?.isFile()) out.push({ name, sizeBytes: s.size, modifiedMs: s.mtimeMs });
      }
      return out;
    },
    async stat(name) {
      try {
        const s = await stat(full(name));
        return s.isFile() ? { name, sizeBytes: s.size, modifiedMs: s.mtimeMs } : undefined;
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
        throw fail(`reading ${full(name)}`, e);
      }
    },
    async read(name) {
      const p = full(name);
      const s = await stat(p).catch((e: NodeJS.ErrnoException) => {
        if (e.code === 'ENOENT') throw new BackupError('NOT_FOUND', `backup ${name} does not exist in ${dir}/`);
        throw fail(`reading ${p}`, e);
      });
      if (!s.isFile()) throw new BackupError('NOT_FOUND', `${p} is not a file`);
      return createReadStream(p);
    },
    async writeTemp(name, body, signal) {
      const tmp = `.${tempName(name)}`;
      const p = full(tmp);
      try {
        await mkdir(dir, { recursive: true });
        await pipeline(body, createWriteStream(p, { flags: 'wx', flush: true }), signal ? { signal } : {});
        return tmp;
      } catch (e) {
        await unlink(p).catch(() => undefined);
        if (signal?.aborted) throw new BackupError('ABORTED', `writing ${name}: aborted`, { cause: e });
        if (e instanceof BackupError) throw e;
        throw fail(`writing ${p}`, e);
      }
    },
    async publish(tmp, name) {
      try {
        await link(full(tmp), full(name));
        return 'published';
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code === 'EEXIST') return 'exists';
        throw fail(`publishing ${full(name)}`, e);
      } finally {
        await unlink(full(tmp)).catch(() => undefined);
      }
    },
    async remove(name) {
      await unlink(full(name)).catch((e: NodeJS.ErrnoException) => {
        if (e.code !== 'ENOENT') throw fail(`deleting ${full(name)}`, e);
      });
    },
  };
}

/** Options of {@link s3Storage}. */
export interface S3StorageOptions {
  bucket: string;
  /** Key prefix, e.g. `prod/cluster-a/` (a `/` is added when missing); default none. */
  prefix?: string;
  /** Endpoint URL for S3-compatible servers, e.g. `http://minio:9000`; default AWS. */
  endpoint?: string;
  /** Region; default `us-east-1`. */
  region?: string;
  /** Path-style URLs (`endpoint/bucket/key`), needed by MinIO and moto; default true when `endpoint` is set. */
  forcePathStyle?: boolean;
  /** Static credentials; default the SDK's chain (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, profile, IRSA, …). */
  credentials?: { accessKeyId: string; secretAccessKey: string; sessionToken?: string };
  /** Multipart part size in bytes; default 8 MiB (S3's minimum is 5 MiB). Memory of an upload: 4 parts. */
  partSizeBytes?: number;
}

function isNotFound(e: unknown): boolean {
  const err = e as { name?: string; $metadata?: { httpStatusCode?: number } };
  return err?.name === 'NotFound' || err?.name === 'NoSuchKey' || err?.$metadata?.httpStatusCode === 404;
}

/**
 * A {@link BackupStorage} in an S3 bucket under a prefix. Errors: `BackupError` `STORAGE` naming
 * `s3://bucket/key` (never credentials), `NOT_FOUND` for a missing archive on `read`.
 */
export function s3Storage(options: S3StorageOptions): BackupStorage {
  const prefix = options.prefix ? (options.prefix.endsWith('/') ? options.prefix : `${options.prefix}/`).replace(/^\/+/, '') : '';
  const config: S3ClientConfig = {
    region: options.region ?? 'us-east-1',
    forcePathStyle: options.forcePathStyle ?? options.endpoint !== undefined,
    // The SDK's default CRC checksums (since 3.729) are not computed alike by every S3-compatible server (moto
    // answers multipart objects with a whole-object CRC the SDK then refuses; older MinIO and Ceph reject them):
    // only when an operation requires one. Integrity is ours anyway: per-object sha256 and authenticated chunks.
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    ...(options.endpoint ? { endpoint: options.endpoint } : {}),
    ...(options.credentials ? { credentials: options.credentials } : {}),
  };
  const s3 = new S3Client(config);
  const bucket = options.bucket;
  const key = (name: string): string => {
    checkName(name);
    return `${prefix}${name}`;
  };
  const where = (name?: string): string => `s3://${bucket}/${name === undefined ? prefix : key(name)}`;
  const fail = (what: string, e: unknown): BackupError => {
    const err = e as { name?: string; message?: string; $metadata?: { httpStatusCode?: number } };
    const status = err?.$metadata?.httpStatusCode;
    return new BackupError('STORAGE', `${what}: ${err?.name ?? 'Error'}${status ? ` (HTTP ${status})` : ''}: ${err?.message ?? String(e)}`, { cause: e });
  };
  const head = async (name: string, signal?: AbortSignal): Promise<StoredBackup | undefined> => {
    try {
      const r = await s3.send(new HeadObjectCommand({ Bucket: bucket, Key: key(name) }), signal ? { abortSignal: signal } : {});
      return { name, sizeBytes: r.ContentLength ?? 0, modifiedMs: r.LastModified?.getTime() ?? 0 };
    } catch (e) {
      if (isNotFound(e)) return undefined;
      throw fail(`reading ${where(name)}`, e);
    }
  };
  return {
    location: where(),
    async list(signal) {
      const out: StoredBackup[] = [];
      let token: string | undefined;
      try {
        do {
          const r = await s3.send(
            new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, Delimiter: '/', ...(token ? { ContinuationToken: token } : {}) }),
            signal ? { abortSignal: signal } : {},
          );
          for (const o of r.Contents ?? []) {
            if (!o.Key) continue;
            out.push({ name: o.Key.slice(prefix.length), sizeBytes: o.Size ?? 0, modifiedMs: o.LastModified?.getTime() ?? 0 });
          }
          token = r.IsTruncated ? r.NextContinuationToken : undefined;
        } while (token);
      } catch (e) {
        throw fail(`listing ${where()}`, e);
      }
      return out;
    },
    stat: head,
    async read(name, signal) {
      try {
        const r = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key(name) }), signal ? { abortSignal: signal } : {});
        return r.Body as Readable;
      } catch (e) {
        if (isNotFound(e)) throw new BackupError('NOT_FOUND', `backup ${name} does not exist in ${where()}`, { cause: e });
        throw fail(`reading ${where(name)}`, e);
      }
    },
    async writeTemp(name, body, signal) {
      const tmp = tempName(name);
      const upload = new Upload({
        client: s3,
        params: { Bucket: bucket, Key: key(tmp), Body: body as Readable },
        partSize: options.partSizeBytes ?? 8 * 1024 * 1024,
        queueSize: 2,
        leavePartsOnError: false,
      });
      const onAbort = (): void => void upload.abort().catch(() => undefined);
      signal?.addEventListener('abort', onAbort, { once: true });
      try {
        if (signal?.aborted) throw new Error('aborted');
        await upload.done();
        return tmp;
      } catch (e) {
        // A completed upload may exist if the abort came late: remove it (best effort).
        await s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: key(tmp) })).catch(() => undefined);
        if (signal?.aborted) throw new BackupError('ABORTED', `uploading ${where(name)}: aborted`, { cause: e });
        if (e instanceof BackupError) throw e;
        throw fail(`uploading ${where(tmp)}`, e);
      } finally {
        signal?.removeEventListener('abort', onAbort);
      }
    },
    async publish(tmp, name, signal) {
      try {
        if (await head(name, signal)) return 'exists';
        const source = `${bucket}/${key(tmp)}`.split('/').map(encodeURIComponent).join('/');
        await s3.send(new CopyObjectCommand({ Bucket: bucket, Key: key(name), CopySource: source }), signal ? { abortSignal: signal } : {});
        return 'published';
      } catch (e) {
        if (e instanceof BackupError) throw e;
        throw fail(`publishing ${where(name)}`, e);
      } finally {
        await s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: key(tmp) })).catch(() => undefined);
      }
    },
    async remove(name, signal) {
      try {
        await s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: key(name) }), signal ? { abortSignal: signal } : {});
      } catch (e) {
        if (!isNotFound(e)) throw fail(`deleting ${where(name)}`, e);
      }
    },
  };
}

/** The `storage:` block of a backup (see schema.ts), after validation. */
export type StorageParams =
  | { type: 'local'; directory: string }
  | {
      type: 's3';
      bucket: string;
      prefix?: string | undefined;
      endpoint?: string | undefined;
      region?: string | undefined;
      forcePathStyle?: boolean | undefined;
      credentials?:
        | { env: { accessKeyId: string; secretAccessKey: string } }
        | { secret: { namespace: string; name: string; accessKeyIdKey: string; secretAccessKeyKey: string } }
        | undefined;
    };

/**
 * Makes the storage a `storage:` block describes; S3 credentials are read from the named environment variables
 * or Secret (with `client`) now. Errors: `BackupError` `INVALID` naming the missing variable or Secret key.
 */
export async function storageFor(p: StorageParams, options: { client?: KubeClient; signal?: AbortSignal } = {}): Promise<BackupStorage> {
  if (p.type === 'local') return localStorage({ directory: p.directory });
  let credentials: S3StorageOptions['credentials'];
  const c = p.credentials;
  if (c && 'env' in c) {
    const id = process.env[c.env.accessKeyId];
    const secret = process.env[c.env.secretAccessKey];
    if (!id || !secret) {
      throw new BackupError('INVALID', `storage.credentials.env: ${!id ? c.env.accessKeyId : c.env.secretAccessKey} is not set (set it in the replica's environment)`);
    }
    credentials = { accessKeyId: id, secretAccessKey: secret };
  } else if (c && 'secret' in c) {
    const { namespace, name, accessKeyIdKey, secretAccessKeyKey } = c.secret;
    if (!options.client) throw new BackupError('INVALID', 'storage.credentials.secret needs a Kubernetes client');
    let s: KubeObject & { data?: Record<string, string> };
    try {
      s = await getObject<KubeObject & { data?: Record<string, string> }>(options.client, { apiVersion: 'v1', kind: 'Secret', namespace, name }, options.signal ? { signal: options.signal } : {});
    } catch (e) {
      throw new BackupError('INVALID', `storage.credentials.secret: cannot read Secret ${namespace}/${name}: ${(e as Error).message}`, { cause: e });
    }
    const get = (k: string): string => {
      const v = s.data?.[k];
      if (v === undefined) throw new BackupError('INVALID', `storage.credentials.secret: Secret ${namespace}/${name} has no key ${k}`);
      return Buffer.from(v, 'base64').toString('utf8').trim();
    };
    credentials = { accessKeyId: get(accessKeyIdKey), secretAccessKey: get(secretAccessKeyKey) };
  }
  return s3Storage({
    bucket: p.bucket,
    ...(p.prefix !== undefined ? { prefix: p.prefix } : {}),
    ...(p.endpoint !== undefined ? { endpoint: p.endpoint } : {}),
    ...(p.region !== undefined ? { region: p.region } : {}),
    ...(p.forcePathStyle !== undefined ? { forcePathStyle: p.forcePathStyle } : {}),
    ...(credentials ? { credentials } : {}),
  });
}
