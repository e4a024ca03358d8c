/**
 * The shared state of one restore (options, signal, uid map, what the plan saw of live objects, namespace cache)
 * and the content hash by which the plan and the applies tell "unchanged" from "update".
 */
import { createHash } from 'node:crypto';
import { canonicalJson } from '../../runner/text/canonical-json.js';
import { getObject, isK8sError, type KubeClient, type KubeObject } from '../../k8s/index.js';
import type { BackupManifest, ManifestEntry } from '../backup/format.js';
import type { JobCheckpoints } from '../types.js';
import type { RestoreOptions } from './types.js';

/** Shared state of one restore. */
export class Ctx {
  readonly refs = { rewritten: 0, live: 0, dropped: 0, droppedExamples: [] as string[] };
  /** original uid → uid on the target (applied, or dry-run answer). */
  readonly uidMap = new Map<string, string>();
  readonly crdNames: Set<string>;
  readonly backupNamespaces: Set<string>;
  /** Per object path: the live object's uid and content hash when planned (null: absent). */
  readonly seen = new Map<string, Seen | null>();
  private readonly nsExists = new Map<string, Promise<boolean>>();

  constructor(
    readonly o: RestoreOptions,
    readonly signal: AbortSignal,
    readonly manifest: BackupManifest,
    readonly state: Map<string, string>,
    readonly checkpoints: JobCheckpoints | undefined,
  ) {
    this.crdNames = new Set(manifest.objects.filter((e) => e.kind === 'CustomResourceDefinition').map((e) => e.name));
    this.backupNamespaces = new Set(manifest.objects.filter((e) => e.kind === 'Namespace' && e.group === '').map((e) => e.name));
  }

  get client(): KubeClient {
    return this.o.client;
  }

  namespaceExists(ns: string): Promise<boolean> {
    let p = this.nsExists.get(ns);
    if (!p) {
      p = getObject(this.client, { apiVersion: 'v1', kind: 'Namespace', name: ns }, { signal: this.signal }).then(
        () => true,
        (e: unknown) => {
          if (isK8sError(e, 'NOT_FOUND')) return false;
          throw e;
        },
      );
      this.nsExists.set(ns, p);
    }
    return p;
  }

  /** What the plan saw of an object: from this run's plan, or from the checkpoints of the one resumed. */
  seenAtPlan(path: string): Seen | null {
    const mine = this.seen.get(path);
    if (mine !== undefined) return mine;
    const saved = this.state.get(`l:${path}`);
    if (!saved || saved === '-') return null;
    const [uid, hash] = saved.split(' ') as [string, string];
    return { uid, hash };
  }

  /** True when the backup has the CRD that defines this entry's kind. */
  crdInBackup(e: ManifestEntry): boolean {
    return this.crdNames.has(`${e.resource}.${e.group}`);
  }
}

/** Hash of an object's content for "did anything change": server-owned metadata and status aside. */
export function content(obj: KubeObject | undefined): string {
  if (!obj) return '';
  // apiVersion and kind aside too: list items do not carry them
  const { status: _status, apiVersion: _a, kind: _k, ...rest } = obj as KubeObject & { status?: unknown };
  const md = { ...(rest.metadata ?? {}) } as Record<string, unknown>;
  for (const f of ['resourceVersion', 'generation', 'managedFields', 'creationTimestamp', 'uid', 'selfLink']) delete md[f];
  return createHash('sha256').update(canonicalJson({ ...rest, metadata: md })).digest('hex').slice(0, 32);
}


/** What the plan keeps of a live object. */
export interface Seen {
  uid: string;
  /** {@link content} hash. */
  hash: string;
}

/** What the plan keeps of `obj` (null: absent). */
export function seenOf(obj: KubeObject | undefined): Seen | null {
  return obj ? { uid: obj.metadata?.uid ?? '', hash: content(obj) } : null;
}
