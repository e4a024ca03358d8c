/**
 * The backup archive format, shared by `kind: backup` (writer) and `kind: restore` / `cronflock restore`
 * (reader). Pure: no I/O here (hashing only).
 *
 * An archive is a gzip-compressed tar (`.tar.gz`), optionally wrapped whole in cronflock's encryption envelope
 * (`.tar.gz.enc`, see encryption.ts). Inside:
 *
 *   <resource>.<group>#<version>/[<namespace>/]<name>.json   one object per file (JSON, server fields stripped)
 *   manifest.json                                            the {@link BackupManifest}, always the LAST entry
 *
 * The object layout is backup-restore-operator's (pkg/resourcesets/collector.go: `resource + "." + group + "#" +
 * version`, namespaced objects in a `<namespace>/` directory), so its users can read our archives; like it, the
 * core group is the empty string: a core ConfigMap is `configmaps.#v1/<ns>/<name>.json`. The manifest comes last
 * because the writer streams objects from paged lists and only knows every sha256 at the end.
 */
import { createHash } from 'node:crypto';
import type { ArchiveLimits } from './limits.js';

/** Current {@link BackupManifest.formatVersion}. A reader refuses a higher major version. */
export const FORMAT_VERSION = 1;

/** File name of the manifest inside the tar; the last entry of every archive. */
export const MANIFEST_PATH = 'manifest.json';

/** Label that keeps an object out of every backup (value `"true"`). */
export const EXCLUDE_LABEL = 'cronflock.io/exclude-from-backup';

/**
 * `metadata` fields the writer removes from every object (server-owned, meaningless on another cluster), besides
 * the top-level `status`. The original `metadata.uid` is kept in the manifest ({@link ManifestEntry.uid}) so a
 * restore can rewrite owner references.
 */
export const STRIPPED_METADATA_FIELDS = [
  'uid',
  'resourceVersion',
  'creationTimestamp',
  'generation',
  'managedFields',
  'selfLink',
  'deletionTimestamp',
  'deletionGracePeriodSeconds',
] as const;

/** Top-level fields the writer removes from every object. */
export const STRIPPED_TOP_LEVEL_FIELDS = ['status'] as const;

/**
 * One resource set of a backup's selection, as validated by the schema (schema.ts) and recorded in the manifest.
 * Semantics (same as backup-restore-operator's ResourceSelector, plus excludes): kinds are resolved through
 * discovery within `apiVersion`; `kinds` (Kind or plural resource name) OR `kindsRegexp` (matched against both);
 * neither = every listable kind of the group/version. Names: `names` OR `nameRegexp`; neither = all. Namespaces:
 * `namespaces` OR `namespaceRegexp`; neither = all (ignored for cluster-scoped kinds). Then `labelSelector` and
 * `fieldSelector` (sent to the server), then the excludes. Regular expressions are JavaScript (`u` flag),
 * unanchored unless written with `^…$`.
 */
export interface ResourceSet {
  /** `v1`, `apps/v1`, `example.com/v1alpha1`. */
  apiVersion: string;
  kinds?: string[];
  kindsRegexp?: string;
  names?: string[];
  nameRegexp?: string;
  namespaces?: string[];
  namespaceRegexp?: string;
  labelSelector?: string;
  fieldSelector?: string;
  /** Kinds (Kind or plural resource name) never backed up from this set. */
  excludeKinds?: string[];
  /** Object names matching any of these are left out. */
  excludeNameRegexps?: string[];
  excludeNamespaces?: string[];
}

/** The selection a backup was made from: the resource sets after presets were expanded. */
export interface BackupSelection {
  resourceSets: ResourceSet[];
}

/**
 * One object in the archive. `sha256` is the lowercase hex SHA-256 of the exact bytes of the file at `path`
 * (the stripped object's JSON, UTF-8).
 */
export interface ManifestEntry {
  /** API group; `''` for the core group. */
  group: string;
  version: string;
  /** Plural resource name, e.g. `configmaps`. */
  resource: string;
  kind: string;
  namespaced: boolean;
  /** Present for namespaced objects only. */
  namespace?: string;
  name: string;
  /** The object's `metadata.uid` on the cluster it was backed up from (stripped from the object itself). */
  uid: string;
  /** Lowercase hex SHA-256 of the file's bytes. */
  sha256: string;
  /** Path inside the tar: {@link objectPath} of this entry. */
  path: string;
}

/** Encryption of a backup: the data-key wrapping algorithm and the id of the key-encryption key. */
export interface ManifestEncryption {
  /** `AES-256-GCM-STREAM-64K` (see encryption.ts). */
  algorithm: string;
  /** Fingerprint of the key-encryption key, `k1-<16 hex>` (see encryption.ts `keyIdOf`). */
  keyId: string;
}

/** `manifest.json`. Times are ISO-8601 UTC strings. */
export interface BackupManifest {
  /** {@link FORMAT_VERSION} of the writer. */
  formatVersion: number;
  /** package.json version of the cronflock that wrote it. */
  cronflockVersion: string;
  /** The API server's `gitVersion` (`GET /version`), e.g. `v1.37.2`. */
  kubernetesVersion: string;
  /** UID of the `kube-system` namespace of the source cluster: a stable cluster identity. */
  clusterId: string;
  /** When the writer started listing (ISO, the replica's clock). */
  createdAt: string;
  /** Schedule name; null for a backup not made by a schedule. */
  schedule: string | null;
  /** Occurrence key `<schedule>@<due ISO>`; null when not made by a schedule. */
  occurrence: string | null;
  /** The occurrence's due time (ISO); null when not made by a schedule. */
  dueTime: string | null;
  /** True for `cronflock trigger` / backfill occurrences. */
  manual: boolean;
  /** Archive name (see {@link backupName}). */
  name: string;
  selection: BackupSelection;
  /** null when the archive is not encrypted. */
  encryption: ManifestEncryption | null;
  /** Every object, in archive order. */
  objects: ManifestEntry[];
  /** Counts by `<resource>.<group>` (core: `<resource>`). */
  counts: Record<string, number>;
}

/** What {@link objectPath} needs. */
export interface ObjectPathParts {
  group: string;
  version: string;
  resource: string;
  /** Omitted or undefined for cluster-scoped objects. */
  namespace?: string | undefined;
  name: string;
}

/**
 * Path of an object inside the tar: `<resource>.<group>#<version>/[<namespace>/]<name>.json`, e.g.
 * `configmaps.#v1/team-a/settings.json`, `deployments.apps#v1/team-a/web.json`,
 * `clusterroles.rbac.authorization.k8s.io#v1/admin.json`. Throws `TypeError` for a name or namespace that is
 * empty or contains `/` (Kubernetes never allows that).
 */
export function objectPath(p: ObjectPathParts): string {
  for (const [field, v] of [['name', p.name], ['namespace', p.namespace]] as const) {
    if (v === undefined) continue;
    if (v === '' || v.includes('/') || v === '.' || v === '..') throw new TypeError(`object ${field} ${JSON.stringify(v)} cannot be a path segment`);
  }
  const dir = `${p.resource}.${p.group}#${p.version}`;
  return p.namespace ? `${dir}/${p.namespace}/${p.name}.json` : `${dir}/${p.name}.json`;
}

/** What {@link parseObjectPath} returns. */
export interface ParsedObjectPath {
  group: string;
  version: string;
  resource: string;
  namespace?: string;
  name: string;
}

/** Inverse of {@link objectPath}; undefined for a path that is not an object file (e.g. `manifest.json`). */
export function parseObjectPath(path: string): ParsedObjectPath | undefined {
  const m = /^([a-z0-9-]+)\.([a-z0-9.-]*)#([a-z0-9]+)\/(?:([^/]+)\/)?([^/]+)\.json$/.exec(path);
  if (!m) return undefined;
  const [, resource, group, version, namespace, name] = m as unknown as [string, string, string, string, string | undefined, string];
  return { resource, group, version, ...(namespace !== undefined ? { namespace } : {}), name };
}

/**
 * A copy of `obj` without the {@link STRIPPED_METADATA_FIELDS} and {@link STRIPPED_TOP_LEVEL_FIELDS}. The input
 * is not changed. Everything else (labels, annotations, finalizers, ownerReferences, spec, data) is kept.
 */
export function stripObject<T extends Record<string, unknown>>(obj: T): Record<string, unknown> {
  const out: Record<string, unknown> = { ...obj };
  for (const f of STRIPPED_TOP_LEVEL_FIELDS) delete out[f];
  if (obj.metadata && typeof obj.metadata === 'object') {
    const md: Record<string, unknown> = { ...(obj.metadata as Record<string, unknown>) };
    for (const f of STRIPPED_METADATA_FIELDS) delete md[f];
    out.metadata = md;
  }
  return out;
}

/** The resource serving an object, as discovery describes it (k8s `ResourceInfo` fits). */
export interface ResourceRef {
  /** `''` for the core group. */
  group: string;
  version: string;
  resource: string;
  kind: string;
  namespaced: boolean;
}

/**
 * One live object as the writer stores it: the file's bytes (the object {@link stripObject}ped, with `apiVersion`
 * and `kind` set from `info`, since list items of built-in kinds come without them; compact JSON, UTF-8) and its
 * manifest entry (original uid, sha256 of the bytes, layout path). `TypeError` for an object without
 * `metadata.name`, or a namespaced one without `metadata.namespace`.
 */
export function storedObject(info: ResourceRef, object: Record<string, unknown>): { data: Buffer; entry: ManifestEntry } {
  const md = (object.metadata ?? {}) as { name?: string; namespace?: string; uid?: string };
  if (!md.name || (info.namespaced && !md.namespace)) {
    throw new TypeError(`an object of ${info.resource} needs metadata.name${info.namespaced ? ' and metadata.namespace' : ''}`);
  }
  const apiVersion = info.group ? `${info.group}/${info.version}` : info.version;
  const data = Buffer.from(JSON.stringify(stripObject({ ...object, apiVersion, kind: info.kind })), 'utf8');
  const entry: ManifestEntry = {
    group: info.group,
    version: info.version,
    resource: info.resource,
    kind: info.kind,
    namespaced: info.namespaced,
    ...(info.namespaced ? { namespace: md.namespace! } : {}),
    name: md.name,
    uid: md.uid ?? '',
    sha256: createHash('sha256').update(data).digest('hex'),
    path: objectPath({ ...info, namespace: info.namespaced ? md.namespace : undefined, name: md.name }),
  };
  return { data, entry };
}

// ---- backup names -----------------------------------------------------------------------------------------

/** File extension of a plain archive. */
export const PLAIN_EXTENSION = '.tar.gz';
/** File extension of an encrypted archive. */
export const ENCRYPTED_EXTENSION = '.tar.gz.enc';

/** What a backup name says. */
export interface ParsedBackupName {
  /** Schedule name (a DNS-1123 label). */
  schedule: string;
  /** Due time of the occurrence, UTC ms. Scheduled: whole seconds; manual: the trigger instant, whole ms. */
  dueMs: number;
  /** True for a manual (`cronflock trigger`) backup: its name ends in `-manual`. */
  manual: boolean;
  encrypted: boolean;
}

const SCHEDULE_RE = '[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?';
const NAME_RE = new RegExp(`^(${SCHEDULE_RE})-(\\d{8})T(\\d{6})(\\d{3})?Z(-manual)?\\.tar\\.gz(\\.enc)?$`);

/**
 * The name of a schedule's backup of one occurrence (a file name in a directory, or the last part of an S3 key):
 *
 *   scheduled:  `<schedule>-<YYYYMMDD>T<HHMMSS>Z.tar.gz[.enc]`          e.g. `nightly-20261130T020000Z.tar.gz`
 *   manual:     `<schedule>-<YYYYMMDD>T<HHMMSSmmm>Z-manual.tar.gz[.enc]` e.g. `nightly-20261130T094512345Z-manual.tar.gz`
 *
 * The time is the occurrence's due time in UTC, so every claimant of one occurrence computes the same name (that
 * is how a re-claim finds the archive it already published). Schedule names are lowercase DNS-1123 labels, so the
 * upper-case `T…Z` part can never be mistaken for part of a schedule name. Throws `RangeError` for a scheduled
 * due time that is not a whole second, or a schedule that is not a DNS-1123 label.
 */
export function backupName(o: { schedule: string; dueMs: number; manual: boolean; encrypted: boolean }): string {
  if (!new RegExp(`^${SCHEDULE_RE}$`).test(o.schedule)) throw new RangeError(`schedule name ${JSON.stringify(o.schedule)} is not a DNS-1123 label`);
  if (!Number.isInteger(o.dueMs) || o.dueMs < 0) throw new RangeError(`due time ${o.dueMs} is not a whole number of ms`);
  if (!o.manual && o.dueMs % 1000 !== 0) throw new RangeError(`a scheduled due time is whole seconds; got ${o.dueMs} ms`);
  const iso = new Date(o.dueMs).toISOString(); // 2026-11-30T02:00:00.000Z
  const date = iso.slice(0, 10).replaceAll('-', '');
  const time = iso.slice(11, 19).replaceAll(':', '') + (o.manual ? iso.slice(20, 23) : '');
  return `${o.schedule}-${date}T${time}Z${o.manual ? '-manual' : ''}${o.encrypted ? ENCRYPTED_EXTENSION : PLAIN_EXTENSION}`;
}

/**
 * Parses a name made by {@link backupName}, exactly (anchored at both ends; anything else, e.g. a temporary
 * upload, a `.partial` file or another tool's file, is undefined). Retention relies on this: it only ever deletes
 * names this returns a result for.
 */
export function parseBackupName(name: string): ParsedBackupName | undefined {
  const m = NAME_RE.exec(name);
  if (!m) return undefined;
  const [, schedule, d, t, ms, manual, enc] = m as unknown as [string, string, string, string, string | undefined, string | undefined, string | undefined];
  if ((manual !== undefined) !== (ms !== undefined)) return undefined;
  const iso = `${d.slice(0, 4)}-${d.slice(4, 6)}-${d.slice(6, 8)}T${t.slice(0, 2)}:${t.slice(2, 4)}:${t.slice(4, 6)}.${ms ?? '000'}Z`;
  const dueMs = Date.parse(iso);
  if (!Number.isFinite(dueMs) || new Date(dueMs).toISOString() !== iso) return undefined; // e.g. month 13
  return { schedule, dueMs, manual: manual !== undefined, encrypted: enc !== undefined };
}

// ---- storage and reader contracts (implemented in storage.ts and reader.ts) -------------------------------

/** One stored file as a {@link BackupStorage} lists it. */
export interface StoredBackup {
  /** File name (local) or key relative to the prefix (S3), e.g. `nightly-20261130T020000Z.tar.gz.enc`. */
  name: string;
  sizeBytes: number;
  /** Last modification, UTC ms. */
  modifiedMs: number;
}

/**
 * Where archives live: a local directory or an S3 bucket + prefix (storage.ts: `localStorage`, `s3Storage`,
 * `storageFor`). Names are flat (no `/`). Errors are `BackupError`s with code `STORAGE` naming the location.
 */
export interface BackupStorage {
  /** Human-readable location, e.g. `/var/backups/` or `s3://bucket/prefix/` (never credentials). */
  readonly location: string;
  /** Every file directly in the location (published archives and anything else; temporaries included). */
  list(signal?: AbortSignal): Promise<StoredBackup[]>;
  /** The file, or undefined when it does not exist. */
  stat(name: string, signal?: AbortSignal): Promise<StoredBackup | undefined>;
  /** A stream of the file's bytes. Error `NOT_FOUND` when it does not exist. */
  read(name: string, signal?: AbortSignal): Promise<NodeJS.ReadableStream>;
  /**
   * Streams `body` to a temporary name (not a valid backup name) and returns it. On abort or error nothing is
   * left behind (best effort: a crash can leave a temporary, which {@link list} shows and retention ignores).
   */
  writeTemp(name: string, body: NodeJS.ReadableStream, signal?: AbortSignal): Promise<string>;
  /**
   * Makes `tempName` visible as `name`, atomically and without overwriting: `'exists'` when `name` already exists
   * (then the temporary is removed and the existing file kept).
   */
  publish(tempName: string, name: string, signal?: AbortSignal): Promise<'published' | 'exists'>;
  /** Deletes a file; a missing file is not an error. */
  remove(name: string, signal?: AbortSignal): Promise<void>;
}

/** One object read back from an archive, checked against its manifest entry. */
export interface BackupObject {
  entry: ManifestEntry;
  /** The stored (stripped) object, parsed. */
  object: Record<string, unknown>;
}

/** What `openBackup` (reader.ts) takes. */
export interface OpenBackupOptions {
  storage: BackupStorage;
  /** Archive name (see {@link parseBackupName}); a `.enc` name needs `keys`. */
  name: string;
  /** Whether the file is encrypted; default: `name` ends in `.enc` (set it to read a temporary or renamed file). */
  encrypted?: boolean;
  /** Key-encryption keys (32 bytes each); the one whose id the archive names is used. Load with encryption.ts `loadKey`. */
  keys?: readonly Uint8Array[];
  /** What the archive may hold at most (limits.ts); default `DEFAULT_LIMITS`. */
  limits?: ArchiveLimits;
  signal?: AbortSignal;
}

/**
 * An archive opened by `openBackup`: the whole archive has been read once, decrypted and checked (every entry's
 * sha256 against the manifest, no file missing, none extra, the manifest valid by manifest-schema.ts, each object's
 * apiVersion, kind, namespace and name those of its entry) before this is returned. `objects()` reads it again
 * (streamed: one object in memory at a time), decrypting and re-checking each object's sha256; it throws a
 * `BackupError` with code `VERIFY` if the stored bytes changed in between.
 */
export interface OpenedBackup {
  manifest: BackupManifest;
  /**
   * True when the archive is authenticated: an encrypted archive (AES-GCM under the key: only a key holder can
   * make one that opens). A plain archive is checked for damage (sha256 per file, the manifest's schema, each
   * object against its entry), but whoever can write to the storage can make one that passes.
   */
  authenticated: boolean;
  objects(options?: { signal?: AbortSignal }): AsyncIterable<BackupObject>;
}
