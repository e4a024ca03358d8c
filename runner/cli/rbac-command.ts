/**
 * `cronflock rbac <path>`: prints the minimal ClusterRole and/or Roles the Kubernetes schedules of a schedule
 * file or directory need: cleanup (the verbs, resources and namespaces its preflight asks about,
 * jobs/cleanup/rbac.ts), backup (jobs/backup/rbac.ts) and restore (jobs/restore/rbac.ts; its kinds come from
 * the backup schedule it restores from, which must be among the files). With `--kubeconfig` (or `--discover`,
 * default loading) resource names and scopes come from the cluster's discovery; without, from the kinds by
 * Kubernetes' pluralisation rule.
 */
import type { Command } from 'commander';
import type { BackupParams } from '../../jobs/backup/schema.js';
import type { CleanupParams } from '../../jobs/cleanup/schema.js';
import type { RestoreParams } from '../../jobs/restore/schema.js';
import { loadSchedules } from '../config/load.js';

/** Adds `rbac` to the program. */
export function addRbacCommand(program: Command): void {
  program
    .command('rbac')
    .description('print the minimal ClusterRole/Roles for the cleanup, backup and restore schedules of a schedule file or directory')
    .argument('<path>', 'schedule file or directory')
    .option('--name <name>', 'name of the ClusterRole and Roles', 'cronflock')
    .option('--kubeconfig <file>', "resolve kinds through this cluster's discovery")
    .option('--context <name>', 'kubeconfig context (with --kubeconfig or --discover)')
    .option('--discover', 'resolve kinds through discovery with the default kubeconfig loading')
    .action(async (path: string, o: { name: string; kubeconfig?: string; context?: string; discover?: boolean }) => {
      // Imported here: every cronflock command loads this file, only this one needs the Kubernetes client.
      const { rbacNeeds } = await import('../../jobs/cleanup/rbac.js');
      const { backupRbacNeeds, RbacError } = await import('../../jobs/backup/rbac.js');
      const { expandResourceSets } = await import('../../jobs/backup/presets.js');
      const { backupScheduleOf, restoreRbacNeeds } = await import('../../jobs/restore/rbac.js');
      const { mergeNeeds, rbacYaml, simplifyNeeds } = await import('../../k8s/rbac.js');
      const { createKubeClient, loadKubeConfig } = await import('../../k8s/index.js');
      const res = await loadSchedules(path);
      for (const e of res.errors) process.stderr.write(`${e.format()}\n`);
      if (res.errors.length > 0 || res.files.length === 0) {
        process.exitCode = 1;
        return;
      }
      const of = <P>(kind: string) => res.schedules.filter((s) => s.job.kind === kind).map((s) => ({ schedule: s.name, params: s.job as unknown as P }));
      const cleanups = of<CleanupParams>('cleanup');
      const backups = of<BackupParams>('backup');
      const restores = of<RestoreParams>('restore');
      if (cleanups.length + backups.length + restores.length === 0) {
        process.stderr.write('no cleanup, backup or restore schedules: nothing needs Kubernetes permissions\n');
        return;
      }
      const restoreJobs = restores.map((r) => {
        const from = backupScheduleOf(r.params.backup);
        const b = backups.find((x) => x.schedule === from);
        if (!b) {
          throw new RbacError(
            `schedule ${r.schedule} restores ${r.params.backup}: its kinds are what backup schedule ${from ?? '(unknown)'} selects, and ${path} has no backup schedule of that name (give a directory with both)`,
          );
        }
        return { ...r, selection: expandResourceSets(b.params.resourceSets) };
      });
      let client: ReturnType<typeof createKubeClient> | undefined;
      if (o.kubeconfig || o.discover) client = createKubeClient(loadKubeConfig({ ...(o.kubeconfig ? { kubeconfig: o.kubeconfig } : {}), ...(o.context ? { context: o.context } : {}) }));
      const resolution = { ...(client ? { discovery: client } : {}), warn: (m: string) => void process.stderr.write(`note: ${m}\n`) };
      let needs = await rbacNeeds(
        cleanups.map((c) => c.params),
        client ? (v, k) => client.discovery.resolve(v, k) : undefined,
      );
      needs = mergeNeeds(needs, await backupRbacNeeds(backups, resolution));
      needs = mergeNeeds(needs, await restoreRbacNeeds(restoreJobs, resolution));
      process.stdout.write(rbacYaml(simplifyNeeds(needs), o.name));
    });
}
