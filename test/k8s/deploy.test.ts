/**
 * k8s/deploy/: the kustomize base and the example overlay, built with kustomize (built from the Go module proxy
 * by test/deploy/build-tools.sh), checked for what a flock needs, and server-side applied with dryRun=All
 * against the real kube-apiserver of this lane: every object must pass schema validation and admission. Each
 * build's Namespace and ServiceAccounts are applied for real first (a namespaced dry run needs its namespace; a
 * Pod needs its ServiceAccount), and each Deployment's pod template is dry-run created as a Pod in that
 * namespace, where Pod Security admission enforces the "restricted" standard the Namespace asks for.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parse, parseAllDocuments } from 'yaml';
import { beforeAll, describe, expect, it } from 'vitest';
import { createObject, K8sError, serverSideApply, type KubeClient, type KubeObject } from '../../k8s/index.js';
import { deployTools } from '../deploy/tools.js';
import { BIN, ROOT } from '../support/replica.js';
import { clientFor } from './harness.js';

type Obj = KubeObject & { metadata: { name: string; namespace?: string; labels?: Record<string, string> } };
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Any = any;

const FIELD_MANAGER = 'cronflock-deploy-test';
const BUILDS = { base: 'k8s/deploy/base', example: 'k8s/deploy/overlays/example' } as const;
const built: Record<string, Obj[]> = {};

const find = (objs: Obj[], kind: string, name?: string): Any => {
  const o = objs.find((x) => x.kind === kind && (name === undefined || x.metadata.name === name));
  if (!o) throw new Error(`no ${kind} ${name ?? ''} in the build`);
  return o;
};
const seconds = (d: string): number => {
  const m = /^(\d+)s$/.exec(d);
  if (!m) throw new Error(`duration ${d}`);
  return Number(m[1]);
};
const matches = (selector: Record<string, string>, labels: Record<string, string> = {}) =>
  Object.entries(selector).every(([k, v]) => labels[k] === v);

async function rejected(p: Promise<unknown>): Promise<K8sError> {
  try {
    await p;
  } catch (e) {
    if (e instanceof K8sError) return e;
    throw e;
  }
  throw new Error('expected the API server to refuse it');
}

describe('k8s/deploy', () => {
  let admin: KubeClient;
  beforeAll(() => {
    const { kustomize } = deployTools();
    for (const [name, dir] of Object.entries(BUILDS)) {
      const out = execFileSync(kustomize, ['build', path.join(ROOT, dir)], { encoding: 'utf8' });
      built[name] = parseAllDocuments(out).map((d) => d.toJS() as Obj);
    }
    admin = clientFor('admin');
  }, 1_200_000);

  for (const name of Object.keys(BUILDS)) {
    describe(name, () => {
      const objs = () => built[name]!;
      const ns = () => find(objs(), 'Namespace').metadata.name as string;

      it('has every object, all in its namespace, a Deployment of 3 with probes, spread, resources and a grace longer than --grace', () => {
        const kinds = new Set(objs().map((o) => o.kind));
        for (const k of ['Namespace', 'ServiceAccount', 'ClusterRole', 'ClusterRoleBinding', 'Deployment', 'PodDisruptionBudget', 'ConfigMap', 'Secret', 'Service', 'NetworkPolicy']) {
          expect(kinds, k).toContain(k);
        }
        for (const o of objs()) {
          if (['Namespace', 'ClusterRole', 'ClusterRoleBinding', 'CustomResourceDefinition'].includes(o.kind!)) continue;
          expect(o.metadata.namespace, `${o.kind} ${o.metadata.name}`).toBe(ns());
        }
        const d = find(objs(), 'Deployment', 'cronflock');
        expect(d.spec.replicas).toBe(3);
        const pod = d.spec.template.spec;
        const c = pod.containers[0];
        expect(c.readinessProbe.httpGet.path).toBe('/readyz');
        expect(c.livenessProbe.httpGet.path).toBe('/healthz');
        const grace = seconds(c.args[c.args.indexOf('--grace') + 1]);
        expect(pod.terminationGracePeriodSeconds).toBeGreaterThan(grace);
        expect(pod.topologySpreadConstraints.map((t: Any) => t.topologyKey)).toContain('kubernetes.io/hostname');
        expect(c.resources.requests).toMatchObject({ cpu: expect.any(String), memory: expect.any(String) });
        expect(c.resources.limits.memory).toEqual(expect.any(String));
        expect(pod.securityContext.runAsNonRoot).toBe(true);
        expect(c.securityContext.readOnlyRootFilesystem).toBe(true);
        // No leader election anywhere: no Lease permissions, no leader flags.
        expect(JSON.stringify(objs())).not.toMatch(/leases|leader-elect/i);
        // REDIS_URL from the generated Secret; the schedules from the generated ConfigMap (names with hashes).
        const secretRef = c.env.find((e: Any) => e.name === 'REDIS_URL').valueFrom.secretKeyRef;
        const secret = find(objs(), 'Secret', secretRef.name);
        expect(Buffer.from(secret.data.REDIS_URL, 'base64').toString()).toMatch(/^rediss?(\+\w+)?:\/\//);
        const cmName = pod.volumes.find((v: Any) => v.configMap).configMap.name;
        expect(find(objs(), 'ConfigMap', cmName).data).toBeDefined();
        const pdb = find(objs(), 'PodDisruptionBudget');
        expect(matches(pdb.spec.selector.matchLabels, d.spec.template.metadata.labels)).toBe(true);
        const svc = find(objs(), 'Service', 'cronflock-metrics');
        expect(matches(svc.spec.selector, d.spec.template.metadata.labels)).toBe(true);
        expect(svc.spec.ports[0]).toMatchObject({ name: 'metrics', port: 9464 });
      });

      it('generates the ConfigMap from schedule files that cronflock validates', () => {
        const cm = find(objs(), 'ConfigMap');
        const dir = mkdtempSync(path.join(tmpdir(), 'cronflock-cm-'));
        try {
          for (const [file, text] of Object.entries(cm.data as Record<string, string>)) writeFileSync(path.join(dir, file), text);
          const r = spawnSync(process.execPath, [BIN, 'validate', dir], { encoding: 'utf8' });
          expect(r.status, r.stdout + r.stderr).toBe(0);
        } finally {
          rmSync(dir, { recursive: true, force: true });
        }
      });

      it('grants least privilege: the rules `cronflock rbac` prints for its schedules, no wildcard, bound to its own ServiceAccount', () => {
        const role = find(objs(), 'ClusterRole', 'cronflock');
        // What `cronflock rbac` says the ConfigMap's schedules need (nothing, for schedules without cleanup jobs).
        const cm = find(objs(), 'ConfigMap');
        const dir = mkdtempSync(path.join(tmpdir(), 'cronflock-rbac-'));
        try {
          for (const [file, text] of Object.entries(cm.data as Record<string, string>)) writeFileSync(path.join(dir, file), text);
          const r = spawnSync(process.execPath, [BIN, 'rbac', dir], { encoding: 'utf8' });
          expect(r.status, r.stderr).toBe(0);
          const generated = parseAllDocuments(r.stdout).map((d) => d.toJS() as Any).filter((d) => d?.kind === 'ClusterRole');
          expect(role.rules ?? []).toEqual(generated[0]?.rules ?? []);
        } finally {
          rmSync(dir, { recursive: true, force: true });
        }
        for (const rule of role.rules ?? []) {
          for (const k of ['apiGroups', 'resources', 'verbs', 'resourceNames', 'nonResourceURLs']) expect(rule[k] ?? [], k).not.toContain('*');
        }
        const binding = find(objs(), 'ClusterRoleBinding', 'cronflock');
        expect(binding.roleRef.name).toBe(role.metadata.name);
        expect(binding.subjects).toEqual([{ kind: 'ServiceAccount', name: 'cronflock', namespace: ns() }]);
        expect(find(objs(), 'Deployment', 'cronflock').spec.template.spec.serviceAccountName).toBe('cronflock');
      });

      it('installs the Schedule CRD as generated, and lets the replicas watch Schedules, write their status and post Events', () => {
        const crd = find(objs(), 'CustomResourceDefinition', 'schedules.cronflock.io');
        const generated = parse(readFileSync(path.join(ROOT, 'k8s/crds/schedules.cronflock.io.yaml'), 'utf8')) as Any;
        expect(crd.spec).toEqual(generated.spec);
        const role = find(objs(), 'ClusterRole', 'cronflock-schedules');
        expect(role.rules).toEqual([
          { apiGroups: ['cronflock.io'], resources: ['schedules'], verbs: ['get', 'list', 'watch'] },
          { apiGroups: ['cronflock.io'], resources: ['schedules/status'], verbs: ['patch'] },
          { apiGroups: ['cronflock.io'], resources: ['schedules/finalizers'], verbs: ['update'] },
          { apiGroups: [''], resources: ['events'], verbs: ['create'] },
        ]);
        const binding = find(objs(), 'ClusterRoleBinding', 'cronflock-schedules');
        expect(binding.roleRef.name).toBe('cronflock-schedules');
        expect(binding.subjects).toEqual([{ kind: 'ServiceAccount', name: 'cronflock', namespace: ns() }]);
      });

      it('lets the replicas reach only DNS, Redis, the API server and their job targets, and only monitoring reach them', () => {
        const np = find(objs(), 'NetworkPolicy');
        const d = find(objs(), 'Deployment', 'cronflock');
        expect(matches(np.spec.podSelector.matchLabels, d.spec.template.metadata.labels)).toBe(true);
        expect(np.spec.policyTypes).toEqual(['Ingress', 'Egress']);
        for (const rule of np.spec.egress) {
          expect(rule.to?.length, 'an egress rule without `to` allows every destination').toBeGreaterThan(0);
          expect(rule.ports?.length, 'an egress rule without ports allows every port').toBeGreaterThan(0);
          for (const peer of rule.to) if (peer.ipBlock) expect(peer.ipBlock.cidr).toMatch(/\/32$/);
        }
        const ports = np.spec.egress.flatMap((r: Any) => r.ports.map((p: Any) => p.port)).sort((a: number, b: number) => a - b);
        const expected = [53, 53, 443, 6379, 6443];
        // Each http job target that is a Service of this build: a rule lets the replicas reach its pods' port.
        const cm = find(objs(), 'ConfigMap');
        for (const text of Object.values(cm.data as Record<string, string>)) {
          const doc = parse(text) as { schedules: { job: { kind: string; url?: string } }[] };
          for (const s of doc.schedules.filter((x) => x.job.kind === 'http')) {
            const u = new URL(s.job.url!);
            const svc = objs().find((o) => o.kind === 'Service' && o.metadata.name === u.hostname) as Any;
            if (!svc) continue; // a target outside this build: the overlay's business
            const port = svc.spec.ports.find((p: Any) => String(p.port) === u.port);
            const deploy = objs().find((o) => o.kind === 'Deployment' && matches(svc.spec.selector, (o as Any).spec.template.metadata.labels)) as Any;
            const containerPort = deploy.spec.template.spec.containers[0].ports.find((p: Any) => p.name === port.targetPort).containerPort;
            const allowed = np.spec.egress.some(
              (r: Any) =>
                r.to.some((peer: Any) => peer.podSelector && !peer.namespaceSelector && matches(peer.podSelector.matchLabels, deploy.spec.template.metadata.labels)) &&
                r.ports.some((p: Any) => p.port === containerPort),
            );
            expect(allowed, `${u.href}: not allowed by the NetworkPolicy`).toBe(true);
            if (!expected.includes(containerPort)) expected.push(containerPort);
          }
        }
        expect(ports).toEqual(expected.sort((a, b) => a - b));
        // The admin port only from the monitoring namespace, never from anywhere: a rule without `from` admits
        // every source.
        expect(np.spec.ingress).toEqual([
          { from: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } } }], ports: [{ protocol: 'TCP', port: 9464 }] },
        ]);
      });

      it('passes a server-side dry-run apply of every object, and Pod Security "restricted" for every pod template', async () => {
        const namespace = find(objs(), 'Namespace');
        await serverSideApply(admin, namespace, { fieldManager: FIELD_MANAGER });
        await serverSideApply(admin, { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'default', namespace: ns() } }, { fieldManager: FIELD_MANAGER });
        for (const sa of objs().filter((o) => o.kind === 'ServiceAccount')) await serverSideApply(admin, sa, { fieldManager: FIELD_MANAGER });
        for (const o of objs()) {
          const out = await serverSideApply<Obj>(admin, o, { fieldManager: FIELD_MANAGER, dryRun: true }).catch((e: unknown) => {
            throw new Error(`${o.kind} ${o.metadata.name}: ${String(e)}`);
          });
          expect(out.metadata.name).toBe(o.metadata.name);
        }
        for (const d of objs().filter((o) => o.kind === 'Deployment') as Any[]) {
          const pod = { apiVersion: 'v1', kind: 'Pod', metadata: { name: `${d.metadata.name}-dry`, namespace: ns(), labels: d.spec.template.metadata.labels }, spec: d.spec.template.spec };
          await createObject(admin, pod, { dryRun: true, fieldManager: FIELD_MANAGER }).catch((e: unknown) => {
            throw new Error(`pod of Deployment ${d.metadata.name}: ${String(e)}`);
          });
        }
      });

      it('is checked for real: the server refuses a broken object and a pod that breaks "restricted"', async () => {
        const d = structuredClone(find(objs(), 'Deployment', 'cronflock'));
        d.spec.replicas = -1;
        const bad = await rejected(serverSideApply(admin, d, { fieldManager: FIELD_MANAGER, dryRun: true }));
        expect(bad.code).toBe('INVALID');
        expect(bad.message).toMatch(/replicas/);
        const spec = structuredClone(find(objs(), 'Deployment', 'cronflock').spec.template.spec);
        // Without `capabilities: {drop: [ALL]}`: allowed by "baseline", refused by "restricted".
        spec.containers[0].securityContext = { allowPrivilegeEscalation: false, readOnlyRootFilesystem: true };
        const priv = await rejected(
          createObject(admin, { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'unrestricted-dry', namespace: ns() }, spec }, { dryRun: true }),
        );
        expect(priv.code).toBe('FORBIDDEN');
        expect(priv.message).toMatch(/restricted/);
      });
    });
  }
});
