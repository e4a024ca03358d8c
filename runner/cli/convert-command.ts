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
import { ConfigError } from '../config/errors.js';
import { isStackOverflow, PARSER_TOO_DEEP_REASON, TOO_DEEP_HINT } from '../config/depth.js';
import { yamlErrors } from '../config/yaml-position.js';

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

/**
 * The documents of one input's text. Its YAML errors are said as the schedule loader says them
 * (runner/config/yaml-position.ts `yamlErrors`: `file:line:col: reason`, a hint, an unclosed quote or bracket where
 * it opens), every one on stderr, and the input is refused whole (nothing is converted).
 * @throws CliError (exit 2) when the text is not valid YAML.
 */
function parse(text: string, name: string): SourceDocument[] {
  const lines = new LineCounter();
  const at = (offset: number): { line: number; col: number } => lines.linePos(offset);
  let docs: ReturnType<typeof parseAllDocuments>;
  try {
    docs = parseAllDocuments(text, { lineCounter: lines, prettyErrors: false });
  } catch (err) {
    // The yaml library's composer is recursive: a document nested some thousand levels deep overflows it.
    if (!isStackOverflow(err)) throw err;
    return refuse(name, [new ConfigError({ code: 'YAML_SYNTAX', file: name, line: 1, col: 1, field: '', reason: PARSER_TOO_DEEP_REASON, hint: TOO_DEEP_HINT })]);
  }
  if (!Array.isArray(docs)) return []; // an empty stream
  const errors: ConfigError[] = [];
  for (const doc of docs) {
    for (const e of yamlErrors(doc.errors, name, text, at, doc)) {
      // An unclosed quote is found in the whole text: each document would say it again.
      if (!errors.some((x) => x.line === e.line && x.reason === e.reason)) errors.push(e);
    }
  }
  if (errors.length > 0) return refuse(name, errors.sort((a, b) => a.line - b.line || a.col - b.col));
  const out: SourceDocument[] = [];
  docs.forEach((doc, i) => {
    let object: unknown;
    try {
      object = doc.toJS({ maxAliasCount: 100 });
    } catch (err) {
      // Aliases that expand past the bound (a "billion laughs"), or nest past the stack.
      const reason = isStackOverflow(err) ? PARSER_TOO_DEEP_REASON : (err as Error).message;
      const pos = at(doc.range?.[0] ?? 0);
      return refuse(name, [new ConfigError({ code: 'YAML_SYNTAX', file: name, ...pos, field: '', reason, ...(isStackOverflow(err) ? { hint: TOO_DEEP_HINT } : {}) })]);
    }
    out.push({ source: docs.length > 1 ? `${name}#${i + 1}` : name, object });
  });
  return out;
}

/** Says every error of a refused input on stderr (as `cronflock validate` does) and refuses it. @throws CliError */
function refuse(name: string, errors: readonly ConfigError[]): never {
  for (const e of errors) process.stderr.write(`${e.format()}\n`);
  throw new CliError(`${name}: refused: not valid YAML (see above); nothing was converted`);
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}
