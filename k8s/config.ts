/**
 * Finding the cluster: kubeconfig loading with kubectl's precedence, in-cluster service-account config, an
 * explicit context, and a clear error where client-node would silently talk to `http://localhost:8080`.
 *
 * Where the rules come from: kubectl's loading rules (k8s.io/client-go/tools/clientcmd/loader.go): an explicit
 * `--kubeconfig` path wins; else the `KUBECONFIG` list (path-delimiter separated, missing files skipped, the
 * first file to set a value wins, including `current-context`); else `~/.kube/config`. In-cluster config
 * (client-go rest.InClusterConfig) uses `KUBERNETES_SERVICE_HOST`/`KUBERNETES_SERVICE_PORT` and the files in
 * `/var/run/secrets/kubernetes.io/serviceaccount/` (`token`, re-read as it rotates; `ca.crt`; `namespace`).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { KubeConfig, type Cluster, type Context, type User } from '@kubernetes/client-node';
import { K8sError } from './errors.js';

/** Where the service-account files of a pod are mounted (client-go rest.InClusterConfig). */
export const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

/** Options of {@link loadKubeConfig}. */
export interface LoadKubeConfigOptions {
  /** Explicit kubeconfig path (like `kubectl --kubeconfig`); wins over `KUBECONFIG`; must exist. */
  kubeconfig?: string;
  /** Context to use instead of the kubeconfig's `current-context` (like `kubectl --context`). */
  context?: string;
  /**
   * `auto` (default): explicit path, else `KUBECONFIG`, else `~/.kube/config`, else in-cluster.
   * `kubeconfig`: never in-cluster. `in-cluster`: only the pod's service account.
   */
  mode?: 'auto' | 'kubeconfig' | 'in-cluster';
  /** Environment to read `KUBECONFIG`, `HOME` and `KUBERNETES_SERVICE_HOST`/`_PORT` from; default `process.env`. */
  env?: Record<string, string | undefined>;
  /** Directory of the service-account files; default {@link SERVICE_ACCOUNT_DIR}. */
  serviceAccountDir?: string;
}

/** What {@link loadKubeConfig} found. */
export interface LoadedKubeConfig {
  /** A client-node KubeConfig with its current context set and checked. */
  kubeConfig: KubeConfig;
  /** Which rule found it. */
  source: 'explicit' | 'KUBECONFIG' | 'home' | 'in-cluster';
  /** The kubeconfig files read (empty for in-cluster). */
  files: string[];
  /** Name of the context in use. */
  context: string;
  /** API server URL of that context's cluster, e.g. `https://127.0.0.1:6443`. */
  server: string;
  /** Name of that context's user. */
  user: string;
  /** The context's namespace, or the pod's namespace in-cluster, else `default`. */
  namespace: string;
}

/**
 * Loads a kubeconfig the way kubectl does (see the module docs) and checks it names a usable context.
 *
 * Errors ({@link K8sError}): `KUBECONFIG_NOT_FOUND` when nothing applies (instead of client-node's silent
 * `http://localhost:8080`), `KUBECONFIG_INVALID` for unreadable/unparseable files or a context whose cluster or
 * user is missing, `CONTEXT_NOT_FOUND` for an unknown `context`, `IN_CLUSTER_UNAVAILABLE` when in-cluster was
 * required but the pod's files or variables are missing.
 */
export function loadKubeConfig(options: LoadKubeConfigOptions = {}): LoadedKubeConfig {
  const env = options.env ?? process.env;
  const mode = options.mode ?? 'auto';
  const saDir = options.serviceAccountDir ?? SERVICE_ACCOUNT_DIR;
  const tried: string[] = [];

  if (mode !== 'in-cluster') {
    if (options.kubeconfig !== undefined) {
      if (!fs.existsSync(options.kubeconfig)) {
        throw new K8sError({
          code: 'KUBECONFIG_NOT_FOUND',
          message: `kubeconfig ${options.kubeconfig} does not exist`,
        });
      }
      return finish(readFiles([options.kubeconfig]), 'explicit', [options.kubeconfig], options.context);
    }
    const list = (env.KUBECONFIG ?? '').split(path.delimiter).filter((f) => f !== '');
    if (list.length > 0) {
      const present = list.filter((f) => fs.existsSync(f));
      if (present.length > 0) return finish(readFiles(present), 'KUBECONFIG', present, options.context);
      tried.push(`KUBECONFIG=${env.KUBECONFIG} (no such file)`);
    } else {
      tried.push('KUBECONFIG (unset)');
    }
    const home = env.HOME ?? os.homedir();
    const homeConfig = path.join(home, '.kube', 'config');
    if (fs.existsSync(homeConfig)) return finish(readFiles([homeConfig]), 'home', [homeConfig], options.context);
    tried.push(`${homeConfig} (no such file)`);
  }

  if (mode !== 'kubeconfig') {
    const inCluster = tryInCluster(env, saDir);
    if (inCluster.kc) {
      if (options.context !== undefined && options.context !== inCluster.kc.currentContext) {
        throw new K8sError({
          code: 'CONTEXT_NOT_FOUND',
          message: `context "${options.context}" does not exist in the in-cluster config (it has "${inCluster.kc.currentContext}")`,
        });
      }
      return finish(inCluster.kc, 'in-cluster', [], undefined);
    }
    if (mode === 'in-cluster') {
      throw new K8sError({ code: 'IN_CLUSTER_UNAVAILABLE', message: `not running in a pod: ${inCluster.why}` });
    }
    tried.push(`in-cluster (${inCluster.why})`);
  }

  throw new K8sError({
    code: 'KUBECONFIG_NOT_FOUND',
    message:
      `no Kubernetes configuration found; tried ${tried.join('; ')}. ` +
      'Set KUBECONFIG or pass a kubeconfig path (client-node would silently use http://localhost:8080 here).',
  });
}

/**
 * True when `kc` is what client-node's `loadFromDefault()` makes when it found nothing: one cluster `cluster`
 * at `http://localhost:8080`, one user `user`, context `loaded-context`. Such a config talks to whatever
 * listens on localhost:8080 without credentials.
 */
export function isLocalhostFallback(kc: KubeConfig): boolean {
  const clusters = kc.getClusters();
  const users = kc.getUsers();
  return (
    clusters.length === 1 &&
    clusters[0]?.name === 'cluster' &&
    clusters[0]?.server === 'http://localhost:8080' &&
    users.length === 1 &&
    users[0]?.name === 'user' &&
    kc.getCurrentContext() === 'loaded-context'
  );
}

/**
 * Checks a KubeConfig made elsewhere (e.g. by `loadFromDefault()`) before use: throws `KUBECONFIG_INVALID` when
 * it is client-node's localhost:8080 fallback ({@link isLocalhostFallback}) or its current context does not
 * resolve to a cluster with a server URL and a user. Returns the same KubeConfig.
 */
export function assertUsableKubeConfig(kc: KubeConfig): KubeConfig {
  if (isLocalhostFallback(kc)) {
    throw new K8sError({
      code: 'KUBECONFIG_INVALID',
      message:
        'this KubeConfig is client-node\'s silent fallback to http://localhost:8080 (loadFromDefault() found no ' +
        'kubeconfig and no service account); set KUBECONFIG or use loadKubeConfig()',
    });
  }
  checkContext(kc, kc.getCurrentContext(), 'the KubeConfig');
  return kc;
}

function readFiles(files: string[]): KubeConfig {
  // kubectl merge rule: the first file to set a name (cluster, user, context) or current-context wins.
  const clusters: Cluster[] = [];
  const users: User[] = [];
  const contexts: Context[] = [];
  let currentContext = '';
  for (const file of files) {
    const one = new KubeConfig();
    try {
      one.loadFromFile(file);
    } catch (e) {
      throw new K8sError({
        code: 'KUBECONFIG_INVALID',
        message: `kubeconfig ${file} cannot be read: ${e instanceof Error ? e.message : String(e)}`,
        cause: e,
      });
    }
    for (const c of one.getClusters() ?? []) if (!clusters.some((x) => x.name === c.name)) clusters.push(c);
    for (const u of one.getUsers() ?? []) if (!users.some((x) => x.name === u.name)) users.push(u);
    for (const c of one.getContexts() ?? []) if (!contexts.some((x) => x.name === c.name)) contexts.push(c);
    if (currentContext === '' && one.getCurrentContext()) currentContext = one.getCurrentContext();
  }
  const kc = new KubeConfig();
  kc.loadFromOptions({ clusters, users, contexts, currentContext });
  return kc;
}

function tryInCluster(
  env: Record<string, string | undefined>,
  saDir: string,
): { kc: KubeConfig; why?: undefined } | { kc?: undefined; why: string } {
  const host = env.KUBERNETES_SERVICE_HOST;
  const port = env.KUBERNETES_SERVICE_PORT;
  if (!host || !port) return { why: 'KUBERNETES_SERVICE_HOST/KUBERNETES_SERVICE_PORT unset' };
  const tokenFile = path.join(saDir, 'token');
  const caFile = path.join(saDir, 'ca.crt');
  if (!fs.existsSync(tokenFile)) return { why: `${tokenFile} missing` };
  if (!fs.existsSync(caFile)) return { why: `${caFile} missing` };
  const nsFile = path.join(saDir, 'namespace');
  const namespace = fs.existsSync(nsFile) ? fs.readFileSync(nsFile, 'utf8').trim() : undefined;
  const hostPart = host.includes(':') ? `[${host}]` : host; // IPv6 literal
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'inCluster', server: `https://${hostPart}:${port}`, caFile, skipTLSVerify: false }],
    // client-node's FileAuth re-reads the token file when its cached copy is older than 60 s (token rotation).
    users: [{ name: 'inClusterUser', authProvider: { name: 'tokenFile', config: { tokenFile } } }],
    contexts: [{ name: 'inClusterContext', cluster: 'inCluster', user: 'inClusterUser', ...(namespace ? { namespace } : {}) }],
    currentContext: 'inClusterContext',
  });
  return { kc };
}

function checkContext(kc: KubeConfig, name: string, where: string): { context: Context; cluster: Cluster; user: User } {
  if (!name) {
    throw new K8sError({
      code: 'KUBECONFIG_INVALID',
      message: `${where} has no current-context; pass a context (contexts: ${
        kc.getContexts().map((c) => c.name).join(', ') || 'none'
      })`,
    });
  }
  const context = kc.getContextObject(name);
  if (!context) {
    throw new K8sError({
      code: 'CONTEXT_NOT_FOUND',
      message: `context "${name}" does not exist in ${where} (contexts: ${kc.getContexts().map((c) => c.name).join(', ') || 'none'})`,
    });
  }
  const cluster = kc.getCluster(context.cluster);
  if (!cluster || !cluster.server) {
    throw new K8sError({
      code: 'KUBECONFIG_INVALID',
      message: `context "${name}" in ${where} names cluster "${context.cluster}", which is not defined or has no server`,
    });
  }
  const user = kc.getUser(context.user);
  if (!user) {
    throw new K8sError({
      code: 'KUBECONFIG_INVALID',
      message: `context "${name}" in ${where} names user "${context.user}", which is not defined`,
    });
  }
  return { context, cluster, user };
}

function finish(
  kc: KubeConfig,
  source: LoadedKubeConfig['source'],
  files: string[],
  context: string | undefined,
): LoadedKubeConfig {
  const where = files.length > 0 ? files.join(path.delimiter) : 'the in-cluster config';
  const name = context ?? kc.getCurrentContext();
  const { context: ctx, cluster, user } = checkContext(kc, name, where);
  kc.setCurrentContext(name);
  return {
    kubeConfig: kc,
    source,
    files,
    context: name,
    server: cluster.server,
    user: user.name,
    namespace: ctx.namespace ?? 'default',
  };
}
