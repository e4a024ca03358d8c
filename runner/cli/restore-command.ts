/**
 * `cronflock restore <backup> [--dry-run]`: restore a backup into the cluster of the kubeconfig, as `kind:
 * restore` does (jobs/restore/), from the command line.
 *
 * Where the archive is and its keys, mirroring the backup job's `storage:` and `encryption:` blocks:
 * - `--from <schedule file> --schedule <name>`: the storage and encryption of that backup schedule, as written;
 * - or `--dir <directory>`, or `--s3 s3://bucket/prefix` (`--s3-endpoint`, `--s3-region`, `--s3-path-style`;
 *   credentials from the AWS SDK's chain: AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, profile, IRSA), and keys with
 *   `--key-file`, `--key-env`, `--key-secret ns/name/key` (repeatable: the archive names the key id it needs);
 * - or a path to the archive as `<backup>`.
 * `<backup>` is an archive name, `latest:<schedule>`, or a path. `--dry-run` prints the plan and writes nothing
 * (no Redis needed). A real restore takes the flock's per-cluster lock in Redis (`--redis`/`REDIS_URL`, the
 * same `--namespace` as the replicas), so it never runs beside a scheduled restore of the same cluster, and it
 * resumes from the checkpoints of an interrupted `cronflock restore` of the same backup. `--limit name=value`
 * raises an archive limit (jobs/backup/limits.ts); `--allow-unauthenticated-prune` allows prune from a plain
 * archive (jobs/restore/run.ts).
 */
import { Command, Option } from 'commander';
import { durationArg, positiveNumberArg } from './arg-parsers.js';
import { hostname } from 'node:os';
import type { KeySource } from '../../jobs/backup/encryption.js';
import { archiveLimits, archiveLimitsSchema, DEFAULT_LIMITS, type ArchiveLimits } from '../../jobs/backup/limits.js';
import type { StorageParams } from '../../jobs/backup/storage.js';
import type { RestoreReport } from '../../jobs/restore/index.js';
import { loadSchedules } from '../config/load.js';
import { pino } from 'pino';
import { connectCommands, redactRedisUrl } from '../redis/connect.js';
import { RedisJobCoordination } from '../redis/job-locks.js';
import { Keyspace } from '../redis/keys.js';
import { addRedisTlsOptions, CliError, resolveRedis, type RedisTlsFlags } from './redis-target.js';

interface Flags extends RedisTlsFlags {
  dryRun?: boolean;
  prune?: boolean;
  allowUnauthenticatedPrune?: boolean;
  limit: string[];
  from?: string;
  schedule?: string;
  dir?: string;
  s3?: string;
  s3Endpoint?: string;
  s3Region?: string;
  s3PathStyle?: boolean;
  keyFile: string[];
  keyEnv: string[];
  keySecret: string[];
  kubeconfig?: string;
  context?: string;
  redis?: string;
  namespace: string;
  lockTtl: number;
  wait: number;
  concurrency: number;
  qps: number;
  json?: boolean;
}

const collect = (v: string, prev: string[]): string[] => [...prev, v];

/** Storage and keys from the flags (see the module docs). Exported for tests. */
export async function storageAndKeys(o: Flags): Promise<{ storage?: StorageParams; keys: KeySource[] }> {
  const direct = [o.dir && '--dir', o.s3 && '--s3'].filter(Boolean);
  if (o.from || o.schedule) {
    if (!o.from || !o.schedule) throw new CliError('--from <schedule file> and --schedule <name> go together: the backup schedule whose storage and keys to use');
    if (direct.length > 0 || o.keyFile.length + o.keyEnv.length + o.keySecret.length > 0) throw new CliError(`--from takes storage and keys from the schedule: drop ${[...direct, 'the --key-* flags'].join(', ')}`);
    const res = await loadSchedules(o.from);
    if (res.errors.length > 0) throw new CliError(`${o.from} is refused:\n${res.errors.map((e) => e.format()).join('\n')}`);
    const s = res.schedules.find((x) => x.name === o.schedule);
    if (!s) throw new CliError(`--schedule: no schedule named ${o.schedule} in ${o.from} (schedules: ${res.schedules.map((x) => x.name).join(', ')})`);
    const job = s.job as { kind: string; storage?: StorageParams; encryption?: { key: KeySource; previousKeys?: KeySource[] } };
    if (!job.storage) throw new CliError(`--schedule: ${o.schedule} is a ${job.kind} job; name a backup (or restore) schedule, which has storage:`);
    const { keySources } = await import('../../jobs/restore/index.js');
    return { storage: job.storage, keys: keySources(job.encryption ? { encryption: job.encryption } : {}) };
  }
  if (direct.length > 1) throw new CliError('give one of --dir and --s3');
  const keys: KeySource[] = [
    ...o.keyFile.map((file) => ({ file })),
    ...o.keyEnv.map((env) => ({ env })),
    ...o.keySecret.map((s) => {
      const [namespace, name, key, ...rest] = s.split('/');
      if (!namespace || !name || !key || rest.length > 0) throw new CliError(`--key-secret ${s}: must be <namespace>/<name>/<key>`);
      return { secret: { namespace, name, key } };
    }),
  ];
  if (o.dir) return { storage: { type: 'local', directory: o.dir }, keys };
  if (o.s3) {
    const m = /^s3:\/\/([^/]+)\/?(.*)$/.exec(o.s3);
    if (!m) throw new CliError(`--s3 ${o.s3}: must be s3://<bucket>[/<prefix>]`);
    return {
      storage: {
        type: 's3',
        bucket: m[1]!,
        ...(m[2] ? { prefix: m[2].endsWith('/') ? m[2] : `${m[2]}/` } : {}),
        ...(o.s3Endpoint ? { endpoint: o.s3Endpoint } : {}),
        ...(o.s3Region ? { region: o.s3Region } : {}),
        ...(o.s3PathStyle ? { forcePathStyle: true } : {}),
      },
      keys,
    };
  }
  return { keys };
}

/**
 * The archive limits from `--limit name=value` flags (limits.ts; sizes like `8Mi`, `2Gi`), over the defaults.
 * Errors: {@link CliError} naming the flag, with the names and an example. Exported for tests.
 */
export function limitsFromFlags(flags: readonly string[]): ArchiveLimits {
  const given: Record<string, unknown> = {};
  for (const f of flags) {
    const m = /^([A-Za-z]+)=(.+)$/.exec(f);
    if (!m) throw new CliError(`--limit ${f}: must be <name>=<value>, e.g. --limit maxTotalSize=4Gi (names: ${Object.keys(DEFAULT_LIMITS).join(', ')})`);
    const [, name, value] = m as unknown as [string, string, string];
    given[name] = /^\d+(\.\d+)?$/.test(value) ? Number(value) : value;
  }
  const r = archiveLimitsSchema.safeParse(given);
  if (!r.success) {
    const i = r.error.issues[0]!;
    const name = i.code === 'unrecognized_keys' ? i.keys.join(', ') : String(i.path[0] ?? '');
    throw new CliError(`--limit ${name}: ${i.code === 'unrecognized_keys' ? `unknown limit (names: ${Object.keys(DEFAULT_LIMITS).join(', ')})` : i.message}`);
  }
  return archiveLimits(r.data);
}

/** The plan and what was done, as a table: one line per kind. */
export function formatReport(r: RestoreReport): string {
  const lines: string[] = [];
  const kinds = Object.keys(r.plan.byKind).sort();
  const w = Math.max(12, ...kinds.map((k) => k.length));
  lines.push(`${r.dryRun ? 'plan (dry run, nothing written)' : 'restore'} of ${r.backup} into cluster ${r.clusterId}${r.fencingToken ? ` (lock token ${r.fencingToken})` : ''}`);
  lines.push(`${'KIND'.padEnd(w)}  CREATE  UPDATE  UNCHANGED  DELETE${r.done ? '   DONE (create/update/unchanged/delete)' : ''}`);
  for (const k of kinds) {
    const p = r.plan.byKind[k]!;
    const d = r.done?.[k];
    lines.push(
      `${k.padEnd(w)}  ${String(p.create).padStart(6)}  ${String(p.update).padStart(6)}  ${String(p.unchanged).padStart(9)}  ${String(p.delete).padStart(6)}${d ? `   ${d.create}/${d.update}/${d.unchanged}/${d.delete}` : ''}`,
    );
  }
  if (r.plan.unvalidated > 0) lines.push(`${r.plan.unvalidated} object(s) counted create without a dry run: their CRD or namespace is created by this restore`);
  if (r.plan.prune.length > 0) lines.push(`prune: ${r.plan.prune.map((p) => `${p.kind} ${p.namespace ? `${p.namespace}/` : ''}${p.name}`).join(', ')}`);
  if (r.plan.protected.length > 0) lines.push(`protected (never pruned): ${r.plan.protected.join(', ')}`);
  const refs = r.ownerReferences;
  if (!r.dryRun) lines.push(`owner references: ${refs.rewritten} rewritten to new uids, ${refs.live} to live owners, ${refs.dropped} dropped (owner in neither the backup nor the cluster)${refs.droppedExamples.length ? `: ${refs.droppedExamples.join('; ')}` : ''}`);
  if (r.resumed > 0) lines.push(`resumed: ${r.resumed} step(s) were already done by an interrupted restore`);
  if (r.pruneChanged > 0) lines.push(`${r.pruneChanged} prune delete(s) skipped: the object changed since the plan`);
  if (r.prunePending > 0) lines.push(`${r.prunePending} pruned object(s) wait for their finalizers`);
  lines.push(`took ${r.durationMs} ms`);
  return lines.join('\n');
}

/** Adds `restore` to the program. */
export function addRestoreCommand(program: Command): void {
  const c = program
    .command('restore')
    .description('restore a backup into a cluster: verify the archive, plan (server-side dry run), apply in order under the per-cluster lock')
    .argument('<backup>', 'archive name in the storage, latest:<schedule>, or a path to a local archive')
    .option('--dry-run', 'print the plan and stop: nothing is written, no lock is taken, no Redis needed')
    .option('--prune', "also delete objects the backup's own selection selects now but the backup lacks (never protected ones)")
    .option('--allow-unauthenticated-prune', 'prune also from a plain (unencrypted, so unauthenticated) archive')
    .option('--limit <name=value>', 'raise (or lower) a limit of what the archive may hold, e.g. maxTotalSize=4Gi, maxObjectSize=32Mi (repeatable)', collect, [])
    .option('--from <schedule-file>', 'use the storage and encryption blocks of a backup schedule in this file (with --schedule)')
    .option('--schedule <name>', 'the backup schedule of --from')
    .option('--dir <directory>', 'archives are in this local directory')
    .option('--s3 <s3://bucket/prefix>', 'archives are in this S3 bucket and prefix')
    .option('--s3-endpoint <url>', 'S3-compatible server, e.g. http://minio:9000')
    .option('--s3-region <region>', 'S3 region (default us-east-1)')
    .option('--s3-path-style', 'path-style S3 URLs (MinIO, moto)')
    .option('--key-file <file>', 'key-encryption key from a file (repeatable)', collect, [])
    .option('--key-env <variable>', 'key-encryption key from an environment variable (repeatable)', collect, [])
    .option('--key-secret <ns/name/key>', 'key-encryption key from a key of a Secret in the target cluster (repeatable)', collect, [])
    .option('--kubeconfig <file>', 'target cluster (default: KUBECONFIG, ~/.kube/config, in-cluster)')
    .option('--context <name>', 'kubeconfig context')
    .option('--redis <url>', 'Redis of the flock, for the per-cluster lock (default: REDIS_URL)')
    .option('--namespace <ns>', 'key namespace of the flock', process.env.CRONFLOCK_NAMESPACE ?? 'cronflock')
    .addOption(new Option('--lock-ttl <duration>', 'lease of the restore lock, renewed every third').argParser(durationArg).default(15_000, '15s'))
    .addOption(new Option('--wait <duration>', 'wait this long for another restore of the cluster to finish').argParser(durationArg).default(0, '0s'))
    .addOption(new Option('--concurrency <n>', 'applies in flight').argParser(positiveNumberArg).default(5))
    .addOption(new Option('--qps <n>', 'Kubernetes requests per second').argParser(positiveNumberArg).default(20))
    .option('--json', 'print the report as JSON');
  addRedisTlsOptions(c);
  c.action(async (backup: string, o: Flags) => {
    // Imported here, not at the top: every cronflock command loads this file, few need the Kubernetes client.
    const { storageFor } = await import('../../jobs/backup/storage.js');
    const { openSource, restoreClient, runRestore } = await import('../../jobs/restore/index.js');
    // Logs go to stderr: stdout is the report.
    const log = pino({ level: process.env.CRONFLOCK_LOG_LEVEL ?? 'info', base: { replica: `cli@${hostname()}` }, timestamp: pino.stdTimeFunctions.isoTime }, pino.destination(2));
    const { storage: storageParams, keys } = await storageAndKeys(o);
    const limits = limitsFromFlags(o.limit);
    const client = restoreClient({ ...(o.kubeconfig ? { kubeconfig: o.kubeconfig } : {}), ...(o.context ? { context: o.context } : {}), qps: o.qps });
    const ac = new AbortController();
    process.once('SIGINT', () => ac.abort(new Error('interrupted')));
    process.once('SIGTERM', () => ac.abort(new Error('terminated')));
    const storage = storageParams ? await storageFor(storageParams, { client, signal: ac.signal }) : undefined;
    const opened = await openSource({ storage, backup, keys, limits, client, signal: ac.signal });
    let redis: ReturnType<typeof connectCommands> | undefined;
    let coordination: RedisJobCoordination | undefined;
    if (!o.dryRun) {
      const { url, tls } = await resolveRedis(o.redis, false, undefined, o);
      redis = connectCommands(url, 'cronflock:restore', tls);
      let lastError = 'no answer within 5 s';
      redis.on('error', (e: Error) => (lastError = e.message));
      const r = redis;
      const ready = await new Promise<boolean>((resolve) => {
        if (r.status === 'ready') return resolve(true);
        const t = setTimeout(() => resolve(false), 5000);
        r.once('ready', () => {
          clearTimeout(t);
          resolve(true);
        });
      });
      if (!ready) {
        redis.disconnect();
        throw new CliError(`Redis ${redactRedisUrl(url)}: ${lastError} (a restore takes the flock's per-cluster lock there; --dry-run needs no Redis)`);
      }
      coordination = new RedisJobCoordination(redis, new Keyspace(o.namespace), `cli@${hostname()}/${process.pid}`, log);
    }
    try {
      const report = await runRestore({
        client,
        source: opened.source,
        backupName: opened.name,
        dryRun: Boolean(o.dryRun),
        prune: Boolean(o.prune),
        allowUnauthenticatedPrune: Boolean(o.allowUnauthenticatedPrune),
        concurrency: o.concurrency,
        ...(coordination ? { lock: { coordination, ttlMs: o.lockTtl, waitMs: o.wait, scope: `cli:${opened.location}${opened.name}` } } : {}),
        signal: ac.signal,
        log,
      });
      process.stdout.write(o.json ? `${JSON.stringify(report, null, 2)}\n` : `${formatReport(report)}\n`);
    } finally {
      redis?.disconnect();
    }
  });
}
