/**
 * Fixture helpers for the k8s tests: create objects, set status through the status subresource (the control
 * plane has no controller-manager or kubelet, so Job conditions, Pod phases and container `finishedAt` only
 * change when a test sets them), install CRDs and wait until they are `Established` and discoverable, mint
 * service-account tokens with `TokenRequest`, and grant RBAC rules.
 *
 * All of them go through the k8s/ access layer with an admin client.
 */
import {
  createObject,
  getObject,
  patchObject,
  resourcePath,
  type KubeClient,
  type KubeObject,
} from '../../k8s/index.js';

/** Creates namespace `name` and its `default` ServiceAccount (the Pod admission needs it). Returns `name`. */
export async function createNamespace(admin: KubeClient, name: string): Promise<string> {
  await createObject(admin, { apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
  await createObject(admin, { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'default', namespace: name } });
  return name;
}

/** Creates each object in order and returns what the server stored. */
export async function createAll<T extends KubeObject>(admin: KubeClient, objects: T[]): Promise<T[]> {
  const out: T[] = [];
  for (const o of objects) out.push(await createObject(admin, o));
  return out;
}

/** A ConfigMap manifest. */
export function configMap(namespace: string, name: string, data: Record<string, string> = {}, labels: Record<string, string> = {}): KubeObject {
  return { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace, labels }, data };
}

/** A Job manifest (one container; nothing will run it: there is no controller-manager). */
export function job(namespace: string, name: string, labels: Record<string, string> = {}): KubeObject {
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: { name, namespace, labels },
    spec: {
      backoffLimit: 0,
      template: {
        metadata: { labels },
        spec: { restartPolicy: 'Never', containers: [{ name: 'main', image: 'registry.invalid/noop:1' }] },
      },
    },
  };
}

/** A Pod manifest with one container `main` (never scheduled: there is no scheduler). */
export function pod(namespace: string, name: string, labels: Record<string, string> = {}): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace, labels },
    spec: { restartPolicy: 'Never', containers: [{ name: 'main', image: 'registry.invalid/noop:1' }] },
  };
}

/**
 * Marks a Job finished through `jobs/status`, as the Job controller would: `Complete` (with the
 * `SuccessCriteriaMet` condition the API requires before it, `succeeded: 1` and `completionTime`) or `Failed`
 * (with `FailureTarget` first and `failed: 1`). `at` is the finish time (the API keeps second precision);
 * `startTime` is one minute earlier. Returns the updated Job.
 */
export async function setJobFinished(
  admin: KubeClient,
  namespace: string,
  name: string,
  outcome: 'Complete' | 'Failed',
  at: Date,
): Promise<KubeObject> {
  const t = iso(at);
  const start = iso(new Date(at.getTime() - 60_000));
  const cond = (type: string, reason: string) => ({ type, status: 'True', reason, message: reason, lastProbeTime: t, lastTransitionTime: t });
  const status =
    outcome === 'Complete'
      ? {
          startTime: start,
          completionTime: t,
          succeeded: 1,
          active: 0,
          ready: 0,
          terminating: 0,
          uncountedTerminatedPods: {},
          conditions: [cond('SuccessCriteriaMet', 'CompletionsReached'), cond('Complete', 'CompletionsReached')],
        }
      : {
          startTime: start,
          failed: 1,
          active: 0,
          ready: 0,
          terminating: 0,
          uncountedTerminatedPods: {},
          conditions: [cond('FailureTarget', 'BackoffLimitExceeded'), cond('Failed', 'BackoffLimitExceeded')],
        };
  return patchObject(admin, { apiVersion: 'batch/v1', kind: 'Job', namespace, name }, { status }, { subresource: 'status' });
}

/**
 * Sets a Pod's phase through `pods/status`, as a kubelet would. For `Succeeded`/`Failed` the container `main`
 * is reported terminated (exit code 0 or 1) with `finishedAt` (second precision); for `Running` it is
 * running since `at`. Returns the updated Pod.
 */
export async function setPodPhase(
  admin: KubeClient,
  namespace: string,
  name: string,
  phase: 'Pending' | 'Running' | 'Succeeded' | 'Failed',
  at: Date,
): Promise<KubeObject> {
  const t = iso(at);
  const started = iso(new Date(at.getTime() - 60_000));
  const base = { name: 'main', image: 'registry.invalid/noop:1', imageID: '', restartCount: 0 };
  const containerStatuses =
    phase === 'Pending'
      ? []
      : phase === 'Running'
        ? [{ ...base, ready: true, started: true, state: { running: { startedAt: t } } }]
        : [
            {
              ...base,
              ready: false,
              started: false,
              state: {
                terminated: {
                  exitCode: phase === 'Succeeded' ? 0 : 1,
                  reason: phase === 'Succeeded' ? 'Completed' : 'Error',
                  startedAt: started,
                  finishedAt: t,
                },
              },
            },
          ];
  return patchObject(
    admin,
    { apiVersion: 'v1', kind: 'Pod', namespace, name },
    { status: { phase, startTime: phase === 'Pending' ? undefined : started, containerStatuses } },
    { subresource: 'status' },
  );
}

/** What {@link installCrd} needs. */
export interface CrdSpec {
  group: string;
  version: string;
  kind: string;
  plural: string;
  scope: 'Namespaced' | 'Cluster';
}

/**
 * Installs a CRD with a permissive schema and a status subresource, waits until its `Established` condition
 * is `True` and discovery serves the kind (polling every 100 ms, `timeoutMs` default 30 000). Returns the CRD.
 * Throws when the CRD reports `NamesAccepted=False` or the wait times out.
 */
export async function installCrd(admin: KubeClient, spec: CrdSpec, timeoutMs = 30_000): Promise<KubeObject> {
  const name = `${spec.plural}.${spec.group}`;
  await createObject(admin, {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name },
    spec: {
      group: spec.group,
      scope: spec.scope,
      names: { kind: spec.kind, plural: spec.plural, singular: spec.kind.toLowerCase(), listKind: `${spec.kind}List` },
      versions: [
        {
          name: spec.version,
          served: true,
          storage: true,
          subresources: { status: {} },
          schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } },
        },
      ],
    },
  });
  const deadline = Date.now() + timeoutMs;
  const ref = { apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', name };
  for (;;) {
    const crd = await getObject(admin, ref);
    const conditions = ((crd.status as { conditions?: { type: string; status: string; message?: string }[] } | undefined)?.conditions ?? []);
    const names = conditions.find((c) => c.type === 'NamesAccepted');
    if (names?.status === 'False') throw new Error(`CRD ${name} names not accepted: ${names.message}`);
    if (conditions.some((c) => c.type === 'Established' && c.status === 'True')) {
      const apiVersion = `${spec.group}/${spec.version}`;
      admin.discovery.invalidate(apiVersion);
      const served = await admin.discovery.resources(apiVersion);
      if (served.some((r) => r.kind === spec.kind)) return crd;
    }
    if (Date.now() > deadline) throw new Error(`CRD ${name} not Established and discoverable within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * Mints a token for ServiceAccount `namespace/name` with `TokenRequest` (`serviceaccounts/<name>/token`),
 * creating the ServiceAccount if it is missing. `expirationSeconds` default 3600 (the API's minimum is 600).
 */
export async function mintToken(admin: KubeClient, namespace: string, name: string, expirationSeconds = 3600): Promise<string> {
  const sa = { apiVersion: 'v1', kind: 'ServiceAccount', namespace, name };
  try {
    await getObject(admin, sa);
  } catch {
    await createObject(admin, { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name, namespace } });
  }
  const info = await admin.discovery.resolve('v1', 'ServiceAccount');
  const res = await admin.request<{ status?: { token?: string } }>({
    method: 'POST',
    path: resourcePath(info, { namespace, name, subresource: 'token' }),
    body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { expirationSeconds } },
  });
  const token = res.body.status?.token;
  if (!token) throw new Error(`TokenRequest for ${namespace}/${name} returned no token`);
  return token;
}

/** RBAC: a Role `name` with `rules` in `namespace`, bound to `subject`. */
export async function grantRole(
  admin: KubeClient,
  namespace: string,
  name: string,
  subject: { kind: 'User' | 'ServiceAccount' | 'Group'; name: string; namespace?: string },
  rules: { apiGroups: string[]; resources: string[]; verbs: string[] }[],
): Promise<void> {
  await createObject(admin, { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata: { name, namespace }, rules });
  await createObject(admin, {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'RoleBinding',
    metadata: { name, namespace },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name },
    subjects: [subject.kind === 'ServiceAccount' ? { kind: 'ServiceAccount', name: subject.name, namespace: subject.namespace ?? namespace } : { apiGroup: 'rbac.authorization.k8s.io', ...subject }],
  });
}

/** RFC 3339 with second precision, as the API stores `metav1.Time`. */
export function iso(d: Date): string {
  return new Date(Math.floor(d.getTime() / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}
