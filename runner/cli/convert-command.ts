/**
 * `cronflock convert [paths...]`: Kubernetes CronJob manifests (files, directories of `*.yaml`/`*.yml`/
 * `*.json`, or stdin with `-` or no path; several documents and `List`s) printed as Schedule manifests (YAML
 * documents on stdout, ready for `kubectl apply -f -`). What has no equivalent is said on stderr and as a
 * comment above the Schedule; each result is also checked with cronflock's loader.
 *
 * Exit codes: 0 every CronJob converted; 1 some CronJob could not be, or cronflock's loader refuses a result (see
 * stderr; the refused result is still printed, its reasons as comments, and the others are printed too);
 * 2 unreadable input, a YAML error (`file:line:col`), or no CronJob at all.
 */
import { readFile, readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { Command } from 'commander';
import { Document, isScalar, LineCounter, parseAllDocuments } from 'yaml';
import { convertCronJobs, type SourceDocument } from '../kubernetes/convert.js';
import { loadScheduleObject } from '../kubernetes/validate.js';
import type { ScheduleObject } from '../kubernetes/resource.js';
import { CliError } from './redis-target.js';

const MANIFEST = /^[^.].*\.(ya?ml|json)$/;

/** Adds `convert` to the program. */
export function addConvertCommand(program: Command): void {
  program
    .command('convert')
    .description('print Kubernetes CronJobs (files, directories or stdin) as cronflock Schedules, saying what has no equivalent')
    .argument('[paths...]', 'CronJob manifests: files or directories; - or none for stdin')
    .action(async (paths: string[]) => {
      const docs: SourceDocument[] = [];
      for (const p of paths.length > 0 ? paths : ['-']) docs.push(...(await readDocuments(p)));
      const res = convertCronJobs(docs);
      const cronJobs = res.schedules.length + new Set(res.notes.filter((n) => n.level === 'error').map((n) => `${n.source}|${n.subject}`)).size;
      if (cronJobs === 0) {
        for (const n of res.notes) process.stderr.write(`${n.source}: ${n.message}\n`);
        throw new CliError(`no CronJob found in ${paths.length > 0 ? paths.join(', ') : 'stdin'}`);
      }
      const out: string[] = [];
      let refusedByLoader = 0;
      for (const c of res.schedules) {
        const notes = [...c.warnings];
        // What cronflock's loader would say about the result (the CRD checks less than the loader).
        const loaded = await loadScheduleObject({
          ...(c.schedule as unknown as ScheduleObject),
          metadata: { namespace: 'default', uid: 'converted', ...(c.schedule.metadata as { name: string }) },
        });
        if (loaded.errors.length > 0) refusedByLoader++;
        for (const e of loaded.errors) {
          notes.push(`cronflock's loader refuses it: ${e}`);
          process.stderr.write(`${c.source}: ${c.subject}: cronflock's loader refuses the result: ${e}\n`);
        }
        const comments = [`# from ${c.subject} (${c.source})`, ...notes.map((n) => `# note: ${n}`)];
        out.push(`${comments.join('\n')}\n${manifestYaml(c.schedule)}`);
      }
      process.stdout.write(out.join('---\n'));
      for (const n of res.notes) process.stderr.write(`${n.source}: ${n.subject ? `${n.subject}: ` : ''}${n.level}: ${n.message}\n`);
      process.exitCode = refusedByLoader > 0 || res.notes.some((n) => n.level === 'error') ? 1 : 0;
    });
}

/** A Schedule as YAML, its cron expression in double quotes (as the README asks: `*` and `@` start YAML syntax). */
function manifestYaml(schedule: object): string {
  const doc = new Document(schedule);
  const cron = doc.getIn(['spec', 'cron'], true);
  if (isScalar(cron)) cron.type = 'QUOTE_DOUBLE';
  return doc.toString({ lineWidth: 0 });
}

/** The YAML documents of a file, of each manifest of a directory (not recursive, sorted), or of stdin (`-`). */
async function readDocuments(path: string): Promise<SourceDocument[]> {
  if (path === '-') return parse(await readStdin(), '<stdin>');
  let files: string[];
  try {
    const st = await stat(path);
    files = st.isDirectory() ? (await readdir(path)).filter((n) => MANIFEST.test(n)).sort().map((n) => join(path, n)) : [path];
  } catch (err) {
    throw new CliError(`${path}: ${(err as NodeJS.ErrnoException).code === 'ENOENT' ? 'does not exist' : (err as Error).message}`);
  }
  const docs: SourceDocument[] = [];
  for (const f of files) docs.push(...parse(await readFile(f, 'utf8'), f));
  return docs;
}

function parse(text: string, name: string): SourceDocument[] {
  const lines = new LineCounter();
  const docs = parseAllDocuments(text, { lineCounter: lines, prettyErrors: false });
  if (!Array.isArray(docs)) return []; // an empty stream
  const out: SourceDocument[] = [];
  docs.forEach((doc, i) => {
    const err = doc.errors[0];
    if (err) {
      const { line, col } = lines.linePos(err.pos[0]);
      throw new CliError(`${name}:${line}:${col}: YAML: ${err.message}`);
    }
    out.push({ source: docs.length > 1 ? `${name}#${i + 1}` : name, object: doc.toJS({ maxAliasCount: 100 }) });
  });
  return out;
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}
