/**
 * Helpers of the Schedule tests: install the committed Schedule CRD (the file users install), apply objects the
 * way `kubectl apply --server-side` does (strict field validation), and build Schedule manifests.
 */
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { getObject, isK8sError, serverSideApply, type KubeClient, type KubeObject } from '../../k8s/index.js';
import { CRD_NAME, CRD_PATH } from '../../runner/kubernetes/index.js';
import { API_VERSION, KIND, PLURAL } from '../../runner/kubernetes/resource.js';
import { ROOT } from '../support/replica.js';

/**
 * Applies `k8s/crds/schedules.cronflock.io.yaml` (server-side apply, forced: a test run may have installed an
 * older copy), waits until it is `Established` and the kind is discoverable. Returns the stored CRD.
 */
export async function installScheduleCrd(admin: KubeClient, timeoutMs = 30_000): Promise<KubeObject> {
  const crd = parse(readFileSync(`${ROOT}${CRD_PATH}`, 'utf8')) as KubeObject;
  await serverSideApply(admin, crd, { fieldManager: 'cronflock-test', force: true });
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const got = await getObject(admin, { apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', name: CRD_NAME });
    const conditions = (got.status as { conditions?: { type: string; status: string; message?: string }[] } | undefined)?.conditions ?? [];
    const names = conditions.find((c) => c.type === 'NamesAccepted');
    if (names?.status === 'False') throw new Error(`CRD ${CRD_NAME} names not accepted: ${names.message}`);
    if (conditions.some((c) => c.type === 'Established' && c.status === 'True')) {
      admin.discovery.invalidate(API_VERSION);
      try {
        await admin.discovery.resolve(API_VERSION, KIND);
        return got;
      } catch (e) {
        if (!isK8sError(e, 'RESOURCE_UNKNOWN')) throw e;
      }
    }
    if (Date.now() > deadline) throw new Error(`CRD ${CRD_NAME} not established within ${timeoutMs} ms: ${JSON.stringify(conditions)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** A Schedule manifest. */
export function schedule(namespace: string, name: string, spec: Record<string, unknown>, labels: Record<string, string> = {}): KubeObject {
  return { apiVersion: API_VERSION, kind: KIND, metadata: { name, namespace, labels }, spec };
}

/**
 * `kubectl apply --server-side` of one namespaced object of the Schedule kind: an apply patch with field
 * manager `kubectl` and strict field validation (unknown fields are errors, as with kubectl's default
 * `--validate=strict`). Returns the stored object; throws the API server's refusal as a K8sError.
 */
export async function kubectlApply(client: KubeClient, obj: KubeObject, options: { dryRun?: boolean } = {}): Promise<KubeObject> {
  const meta = obj.metadata as { name: string; namespace: string };
  const res = await client.request<KubeObject>({
    method: 'PATCH',
    path: `/apis/${API_VERSION}/namespaces/${meta.namespace}/${PLURAL}/${meta.name}`,
    query: { fieldManager: 'kubectl', fieldValidation: 'Strict', dryRun: options.dryRun ? 'All' : undefined },
    contentType: 'application/apply-patch+yaml',
    body: obj,
  });
  return res.body;
}

/**
 * The message of a refusal of `obj` by the API server, or undefined when it was accepted: a dry-run create with
 * strict field validation, which is what `kubectl apply` (client-side, the default) sends for a new object.
 */
export async function refusal(client: KubeClient, obj: KubeObject): Promise<string | undefined> {
  const meta = obj.metadata as { namespace: string };
  try {
    await client.request({
      method: 'POST',
      path: `/apis/${API_VERSION}/namespaces/${meta.namespace}/${PLURAL}`,
      query: { fieldManager: 'kubectl-client-side-apply', fieldValidation: 'Strict', dryRun: 'All' },
      body: obj,
    });
    return undefined;
  } catch (e) {
    if (isK8sError(e, 'INVALID', 'BAD_REQUEST')) return e.apiStatus?.message ?? e.message;
    throw e;
  }
}
