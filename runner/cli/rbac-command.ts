/**
 * `cronflock rbac <path>`: prints the minimal ClusterRole and/or Roles the cleanup schedules of a schedule file
 * or directory need: the verbs, resources and namespaces the run's preflight asks about. With `--kubeconfig`
 * (or `--discover`, default loading) resource names and scopes come from the cluster's discovery; without,
 * from the kinds by Kubernetes' pluralisation rule.
 */
import type { Command } from 'commander';
import type { CleanupParams } from '../../jobs/cleanup/schema.js';
import { loadSchedules } from '../config/load.js';

/** Adds `rbac` to the program. */
export function addRbacCommand(program: Command): void {
  program
    .command('rbac')
    .description('print the minimal ClusterRole/Role for the cleanup schedules of a schedule file or directory')
    .argument('<path>', 'schedule file or directory')
    .option('--name <name>', 'name of the role', 'cronflock-cleanup')
    .option('--kubeconfig <file>', 'resolve kinds through this cluster\'s discovery')
    .option('--context <name>', 'kubeconfig context (with --kubeconfig or --discover)')
    .option('--discover', 'resolve kinds through discovery with the default kubeconfig loading')
    .action(async (path: string, o: { name: string; kubeconfig?: string; context?: string; discover?: boolean }) => {
      // Imported here: every cronflock command loads this file, only this one needs the Kubernetes client.
      const { rbacNeeds, rbacYaml } = await import('../../jobs/cleanup/rbac.js');
      const { createKubeClient, loadKubeConfig } = await import('../../k8s/index.js');
      const res = await loadSchedules(path);
      for (const e of res.errors) process.stderr.write(`${e.format()}\n`);
      if (res.errors.length > 0 || res.files.length === 0) {
        process.exitCode = 1;
        return;
      }
      const jobs = res.schedules.filter((s) => s.job.kind === 'cleanup').map((s) => s.job as unknown as CleanupParams);
      if (jobs.length === 0) {
        process.stderr.write('no cleanup schedules: nothing needs Kubernetes permissions\n');
        return;
      }
      let resolve: ((apiVersion: string, kind: string) => Promise<{ resource: string; namespaced: boolean }>) | undefined;
      if (o.kubeconfig || o.discover) {
        const client = createKubeClient(loadKubeConfig({ ...(o.kubeconfig ? { kubeconfig: o.kubeconfig } : {}), ...(o.context ? { context: o.context } : {}) }));
        resolve = (apiVersion, kind) => client.discovery.resolve(apiVersion, kind);
      }
      process.stdout.write(rbacYaml(await rbacNeeds(jobs, resolve), o.name));
    });
}
