/**
 * k8s/helm/cronflock: the Helm chart, linted and rendered by a `helm` built from the Go module proxy
 * (test/deploy/build-tools.sh, cached by version), with the default values and with every switch on
 * (ci/all-switches-values.yaml), and the renders server-side applied with dryRun=All against the real
 * kube-apiserver of this lane (each render's namespaces and ServiceAccount are created for real first; a
 * namespaced dry run needs its namespace, a Pod its ServiceAccount). The Prometheus Operator's ServiceMonitor and
 * PrometheusRule kinds are installed as CRDs with an open schema, as the operator's CRDs would be.
 *
 * With the default values the chart renders the same Deployment as the kustomize base (k8s/deploy/base): the
 * pod spec and the Deployment spec are compared, image and the generated objects' hash suffixes aside.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { parseAllDocuments } from 'yaml';
import { beforeAll, describe, expect, it } from 'vitest';
import { expandResourceSets } from '../../jobs/backup/presets.js';
import { JOB_KIND_VERBS } from '../../jobs/job/schema.js';
import {
  canI,
  createKubeClient,
  createObject,
  getObject,
  isK8sError,
  loadKubeConfig,
  serverSideApply,
  type KubeClient,
  type KubeObject,
} from '../../k8s/index.js';
import { deployTools } from '../deploy/tools.js';
import { ROOT } from '../support/replica.js';
import { writeKubeconfig } from './control-plane.js';
import { installCrd, mintToken } from './fixtures.js';
import { clientFor, controlPlane, uniqueName } from './harness.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Any = any;
type Obj = KubeObject & { metadata: { name: string; namespace?: string } };

const CHART = path.join(ROOT, 'k8s/helm/cronflock');
const ALL_SWITCHES = path.join(CHART, 'ci/all-switches-values.yaml');
const FIELD_MANAGER = 'cronflock-helm-test';
const KUBE_VERSION = controlPlane().version.replace(/^v/, '');

let helm: string;
let kustomize: string;
let admin: KubeClient;

function run(bin: string, args: string[]): string {
  const r = spawnSync(bin, args, { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${path.basename(bin)} ${args.join(' ')}: exit ${r.status}\n${r.stdout}${r.stderr}`);
  return r.stdout;
}

/** `helm template` of the chart as release `release` in `namespace`, parsed. */
function render(release: string, namespace: string, args: string[] = []): Obj[] {
  const out = run(helm, ['template', release, CHART, '--namespace', namespace, '--kube-version', KUBE_VERSION, ...args]);
  return parseAllDocuments(out).map((d) => d.toJS() as Obj).filter((o) => o?.kind);
}

const find = (objs: Obj[], kind: string, name?: string): Any => {
  const o = objs.find((x) => x.kind === kind && (name === undefined || x.metadata.name === name));
  if (!o) throw new Error(`no ${kind} ${name ?? ''} in the render`);
  return o;
};

async function ensureNamespace(name: string, labels: Record<string, string> = {}): Promise<void> {
  await serverSideApply(admin, { apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels } }, { fieldManager: FIELD_MANAGER });
  await serverSideApply(admin, { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'default', namespace: name } }, { fieldManager: FIELD_MANAGER });
}

async function ensureCrd(group: string, version: string, kind: string, plural: string): Promise<void> {
  try {
    await getObject(admin, { apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', name: `${plural}.${group}` });
  } catch (e) {
    if (!isK8sError(e, 'NOT_FOUND')) throw e;
    await installCrd(admin, { group, version, kind, plural, scope: 'Namespaced' });
  }
}

/** Applies a render: namespaces and ServiceAccounts for real, then every object with dryRun=All. */
async function dryRunApply(objs: Obj[], namespace: string): Promise<void> {
  await ensureNamespace(namespace, { 'pod-security.kubernetes.io/enforce': 'restricted', 'pod-security.kubernetes.io/enforce-version': 'latest' });
  for (const ns of new Set(objs.map((o) => o.metadata.namespace).filter((n): n is string => n !== undefined))) await ensureNamespace(ns);
  for (const sa of objs.filter((o) => o.kind === 'ServiceAccount')) await serverSideApply(admin, { ...sa, metadata: { ...sa.metadata, namespace } }, { fieldManager: FIELD_MANAGER });
  for (const o of objs) {
    const namespaced = !['ClusterRole', 'ClusterRoleBinding', 'CustomResourceDefinition'].includes(o.kind!);
    const obj = namespaced && !o.metadata.namespace ? { ...o, metadata: { ...o.metadata, namespace } } : o;
    const out = await serverSideApply<Obj>(admin, obj, { fieldManager: FIELD_MANAGER, dryRun: true }).catch((e: unknown) => {
      throw new Error(`${o.kind} ${o.metadata.name}: ${String(e)}`);
    });
    expect(out.metadata.name).toBe(o.metadata.name);
  }
  // Pod Security "restricted" is enforced on Pods, not on Deployments: dry-run create the pod template as a Pod.
  for (const d of objs.filter((o) => o.kind === 'Deployment') as Any[]) {
    const pod = { apiVersion: 'v1', kind: 'Pod', metadata: { name: `${d.metadata.name}-dry`, namespace, labels: d.spec.template.metadata.labels }, spec: d.spec.template.spec };
    await createObject(admin, pod, { dryRun: true, fieldManager: FIELD_MANAGER });
  }
}

/**
 * Applies the render's ServiceAccount and RBAC objects for real and returns "may I?" as that ServiceAccount
 * (a token from TokenRequest; the server's RBAC authorizer answers a SelfSubjectAccessReview).
 */
async function askAs(objs: Obj[], release: string, namespace: string) {
  await ensureNamespace(namespace);
  for (const o of objs.filter((x) => ['ServiceAccount', 'ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding'].includes(x.kind!))) {
    if (o.metadata.namespace) await ensureNamespace(o.metadata.namespace);
    await serverSideApply(admin, o.kind === 'ServiceAccount' ? { ...o, metadata: { ...o.metadata, namespace } } : o, { fieldManager: FIELD_MANAGER });
  }
  const cp = controlPlane();
  const token = await mintToken(admin, namespace, find(objs, 'ServiceAccount').metadata.name);
  const kubeconfig = writeKubeconfig(path.join(cp.dir, `${release}.kubeconfig`), cp.server, cp.caFile, token, namespace);
  const sa = createKubeClient(loadKubeConfig({ kubeconfig }));
  return async (verb: string, resource: string, group: string, ns?: string, extra: { name?: string; subresource?: string } = {}): Promise<boolean> =>
    (await canI(sa, { verb, resource, group, ...(ns ? { namespace: ns } : {}), ...extra })).allowed;
}

/** The chart's CRD files (crds/*.yaml), parsed. */
function chartCrds(): Obj[] {
  const dir = path.join(CHART, 'crds');
  return readdirSync(dir)
    .filter((f) => /\.ya?ml$/.test(f))
    .flatMap((f) => parseAllDocuments(readFileSync(path.join(dir, f), 'utf8')).map((d) => d.toJS() as Obj));
}

beforeAll(() => {
  ({ helm, kustomize } = deployTools());
  admin = clientFor('admin');
}, 1_200_000);

describe('k8s/helm/cronflock', () => {
  it('lints (strict) with the default values and with every switch on', () => {
    for (const args of [[], ['-f', ALL_SWITCHES]]) {
      const out = run(helm, ['lint', '--strict', CHART, '--kube-version', KUBE_VERSION, ...args]);
      expect(out).toMatch(/1 chart\(s\) linted, 0 chart\(s\) failed/);
    }
  });

  it('renders with the default values and applies (server-side dry run) on the lane, pod template included', async () => {
    const objs = render('cronflock', 'helm-default');
    expect(objs.map((o) => o.kind).sort()).toEqual(
      ['ClusterRole', 'ClusterRoleBinding', 'ConfigMap', 'Deployment', 'NetworkPolicy', 'PodDisruptionBudget', 'Secret', 'Service', 'ServiceAccount'].sort(),
    );
    await dryRunApply([...chartCrds(), ...objs], 'helm-default');
  });

  it('renders with every switch on (ServiceMonitor, PrometheusRule, Schedules, every job kind) and applies on the lane', async () => {
    const objs = render('cronflock', 'helm-all', ['-f', ALL_SWITCHES]);
    const kinds = new Set(objs.map((o) => o.kind));
    for (const k of ['ServiceMonitor', 'PrometheusRule', 'Role', 'RoleBinding', 'NetworkPolicy', 'PodDisruptionBudget', 'Service']) expect(kinds, k).toContain(k);
    // Redis and the schedules from existing objects: the chart makes neither.
    expect(kinds.has('Secret')).toBe(false);
    expect(kinds.has('ConfigMap')).toBe(false);
    const c = find(objs, 'Deployment').spec.template.spec.containers[0];
    expect(c.env.find((e: Any) => e.name === 'REDIS_URL').valueFrom.secretKeyRef).toEqual({ name: 'my-redis', key: 'url' });
    expect(find(objs, 'Deployment').spec.template.spec.volumes[0].configMap.name).toBe('my-schedules');
    // The Schedule watch's values become `cronflock start` flags, before extraArgs.
    expect(c.args).toEqual(['start', '/etc/cronflock/schedules/', '--grace', '20s', '--watch-schedules', 'on', '--watch-namespaces', 'shop,batch-a', '--schedule-selector', 'cronflock.io/flock=a', '--lock', '4s']);
    await ensureCrd('monitoring.coreos.com', 'v1', 'ServiceMonitor', 'servicemonitors');
    await ensureCrd('monitoring.coreos.com', 'v1', 'PrometheusRule', 'prometheusrules');
    await dryRunApply([...chartCrds(), ...objs], 'helm-all');
    // The ServiceMonitor selects the metrics Service; the alerts name the Service's scrape job.
    const svc = find(objs, 'Service');
    const sm = find(objs, 'ServiceMonitor');
    expect(Object.entries(sm.spec.selector.matchLabels).every(([k, v]) => svc.metadata.labels[k] === v)).toBe(true);
    expect(JSON.stringify(find(objs, 'PrometheusRule').spec)).toContain(`job=\\"${svc.metadata.name}\\"`);
  });

  it('renders the same Deployment as the kustomize base with the default values (image and generated names aside)', () => {
    const base = parseAllDocuments(execFileSync(kustomize, ['build', path.join(ROOT, 'k8s/deploy/base')], { encoding: 'utf8' })).map((d) => d.toJS() as Obj);
    const chart = render('cronflock', 'cronflock');
    const comparable = (d: Any, generated: string[]): Any => {
      const spec = structuredClone(d.spec);
      delete spec.template.metadata; // labels (the same selector labels) and the chart's checksum annotation
      for (const c of spec.template.spec.containers) delete c.image;
      // kustomize's generated ConfigMap and Secret names carry a content hash: cronflock-schedules-<hash>.
      const strip = (n: string) => generated.reduce((x, g) => (x.startsWith(`${g}-`) ? g : x), n);
      for (const v of spec.template.spec.volumes) if (v.configMap) v.configMap.name = strip(v.configMap.name);
      for (const c of spec.template.spec.containers) for (const e of c.env ?? []) if (e.valueFrom?.secretKeyRef) e.valueFrom.secretKeyRef.name = strip(e.valueFrom.secretKeyRef.name);
      return spec;
    };
    const generated = ['cronflock-schedules', 'cronflock-redis'];
    const fromBase = comparable(find(base, 'Deployment', 'cronflock'), generated);
    const fromChart = comparable(find(chart, 'Deployment', 'cronflock'), generated);
    expect(fromChart).toEqual(fromBase);
    expect(find(chart, 'Deployment').spec.template.spec.containers[0].image).toBe(`cronflock:${JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')).version}`);
    // The selector labels too, and the base's schedule files (validated by deploy.test.ts) are the chart's default ones.
    expect(find(chart, 'Deployment').spec.selector).toEqual(find(base, 'Deployment').spec.selector);
    expect(find(chart, 'ConfigMap').data['schedules.yaml']).toBeDefined();
    expect(parseAllDocuments(find(chart, 'ConfigMap').data['schedules.yaml'])[0]!.toJS()).toEqual(parseAllDocuments(find(base, 'ConfigMap').data['schedules.yaml'])[0]!.toJS());
  });

  it('grants least privilege: nothing by default; with every switch, what each job kind needs, no wildcard; checked by the API server as the ServiceAccount', async () => {
    expect(find(render('cronflock', 'x'), 'ClusterRole').rules ?? []).toEqual([]);
    const release = uniqueName('rb');
    const ns = 'helm-rbac';
    const objs = render(release, ns, ['-f', ALL_SWITCHES]);
    const rules: Any[] = objs.filter((o) => o.kind === 'ClusterRole' || o.kind === 'Role').flatMap((o: Any) => o.rules ?? []);
    for (const rule of rules) {
      for (const k of ['apiGroups', 'resources', 'verbs', 'resourceNames', 'nonResourceURLs']) expect(rule[k] ?? [], k).not.toContain('*');
    }
    // kind: job: exactly the verbs the kind uses, only in the namespaces its values list.
    const jobRoles = objs.filter((o: Any) => o.kind === 'Role' && o.rules.some((r: Any) => r.resources.includes('jobs')));
    expect(jobRoles.map((r) => r.metadata.namespace).sort()).toEqual(['batch-a', 'batch-b']);
    for (const r of jobRoles as Any[]) expect(r.rules).toEqual([{ apiGroups: ['batch'], resources: ['jobs'], verbs: [...JOB_KIND_VERBS] }]);
    // backup: the default resources cover every kind of its presets (resolved through the lane's discovery).
    for (const set of expandResourceSets([{ preset: 'namespace-apps', namespaces: ['x'] } as Any, { preset: 'cluster-config' } as Any])) {
      for (const kind of set.kinds ?? []) {
        const info = await admin.discovery.resolve(set.apiVersion, kind);
        const covered = rules.some((r) => r.apiGroups.includes(info.group) && r.resources.includes(info.resource) && r.verbs.includes('list'));
        expect(covered, `backup preset kind ${kind} (${info.resource}.${info.group})`).toBe(true);
      }
    }
    // Apply the RBAC for real and ask the server (SelfSubjectAccessReview) as the chart's ServiceAccount.
    const may = await askAs(objs, release, ns);
    expect(await may('create', 'jobs', 'batch', 'batch-a')).toBe(true);
    expect(await may('watch', 'jobs', 'batch', 'batch-b')).toBe(true);
    expect(await may('list', 'schedules', 'cronflock.io')).toBe(true);
    expect(await may('patch', 'schedules', 'cronflock.io', 'default', { subresource: 'status' })).toBe(true);
    expect(await may('delete', 'schedules', 'cronflock.io', 'default')).toBe(false);
    expect(await may('create', 'events', 'events.k8s.io', 'default')).toBe(true);
    expect(await may('delete', 'pods', '', 'default')).toBe(false);
    expect(await may('escalate', 'clusterroles', 'rbac.authorization.k8s.io')).toBe(false);
    // kind: backup alone: list what it backs up, read only its key Secret and the kube-system namespace.
    const bk = uniqueName('rk');
    const mayBackup = await askAs(render(bk, ns, ['--set', 'rbac.backup.enabled=true', '--set-json', 'rbac.backup.keySecrets={"cronflock":["backup-key"]}']), bk, ns);
    expect(await mayBackup('list', 'secrets', '', 'default')).toBe(true);
    expect(await mayBackup('list', 'deployments', 'apps')).toBe(true);
    expect(await mayBackup('get', 'secrets', '', 'cronflock', { name: 'backup-key' })).toBe(true);
    expect(await mayBackup('get', 'secrets', '', 'cronflock', { name: 'other' })).toBe(false);
    expect(await mayBackup('get', 'namespaces', '', undefined, { name: 'kube-system' })).toBe(true);
    expect(await mayBackup('get', 'namespaces', '', undefined, { name: 'default' })).toBe(false);
    expect(await mayBackup('create', 'configmaps', '', 'default')).toBe(false);
    // kind: job alone, for one namespace: Jobs there and nowhere else, and nothing more.
    const only = uniqueName('rj');
    const jobOnly = render(only, ns, ['--set', 'rbac.job.enabled=true', '--set', 'rbac.job.namespaces[0]=batch-a']);
    expect(find(jobOnly, 'ClusterRole').rules ?? []).toEqual([]);
    const mayJob = await askAs(jobOnly, only, ns);
    for (const verb of JOB_KIND_VERBS) expect(await mayJob(verb, 'jobs', 'batch', 'batch-a'), verb).toBe(true);
    expect(await mayJob('create', 'jobs', 'batch', 'default')).toBe(false);
    expect(await mayJob('get', 'pods', '', 'batch-a')).toBe(false);
  });

  it('refuses bad values through values.schema.json, with the path of each problem', () => {
    const r = spawnSync(helm, ['template', 'x', CHART, '--kube-version', KUBE_VERSION, '--set', 'replicaCount=0', '--set', 'rbac.extraRules[0].verbs[0]=*', '--set', 'grace=soon', '--set', 'typo=1'], { encoding: 'utf8' });
    expect(r.status).not.toBe(0);
    for (const where of ['/replicaCount', '/rbac/extraRules/0/verbs/0', '/grace', "additional properties 'typo'"]) expect(r.stderr, where).toContain(where);
  });

  it('carries the CRDs of k8s/crds/ unchanged in crds/', () => {
    const dir = path.join(ROOT, 'k8s/crds');
    const want = readdirSync(dir).filter((f) => /\.ya?ml$/.test(f)).sort();
    expect(readdirSync(path.join(CHART, 'crds')).filter((f) => /\.ya?ml$/.test(f)).sort()).toEqual(want);
    for (const f of want) expect(readFileSync(path.join(CHART, 'crds', f), 'utf8'), `crds/${f}: cp k8s/crds/*.yaml k8s/helm/cronflock/crds/`).toBe(readFileSync(path.join(dir, f), 'utf8'));
  });
});
