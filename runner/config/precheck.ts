/**
 * The pre-check of one schedule file, as a loader child process runs it (runner/config/load-pool.ts): read, YAML parse,
 * the positions every schedule needs, one zod pass and the definition hashes. The parse and validation garbage
 * stays in the worker's heap, which is thrown away after the load; only the validated definitions (plain data,
 * without the compiled cron) cross back by structured clone. Anything but a clean file (read or YAML errors,
 * schema problems, calendars or blackouts, deprecated input) is answered `clean: false`, and the loader checks
 * that file in-process as before, so that every error and warning comes from one code path (runner/config/load.ts).
 */
import { hash } from 'node:crypto';
import { LineCounter, isScalar, parseDocument, type Document } from 'yaml';
import { cleanupNotifyAlias } from '../notify/config.js';
import { canonicalJson } from '../text/canonical-json.js';
import { readBounded } from './read-bounded.js';
import { MAX_SCHEDULE_FILE_BYTES } from './files.js';
import { scheduleFileSchema, type ValidatedSchedule } from './schema.js';
import { Locator, protoKeyErrors, type Path } from './yaml-position.js';
import { FILE_DEPTH, firstTooDeep, yamlChildren } from './depth.js';
import { maxAliasCountOf } from './yaml-aliases.js';
import { nonJsonValues } from './json-values.js';

/** The options every parse of a schedule file uses (the same as runner/config/load.ts). */
// logLevel 'error': the yaml library's warnings (e.g. on a collection used as a key) are not printed to stderr:
// the loader reports what is wrong itself (yaml-position.ts).
export const YAML_OPTIONS = { prettyErrors: false, uniqueKeys: true, merge: true, logLevel: 'error' } as const;

/**
 * The compiled crons this loader process validated, kept for its life (it is killed after the load): the cron cache
 * (runner/schedule/cron.ts) holds them weakly, and without a holder every collection dropped them, so that a
 * load of 1,000,000 schedules over a few thousand expressions compiled (parsed, walked for a matching day) most of
 * them again per schedule. Bounded: past the bound the cache works as before.
 */
const keptCompiled = new Set<unknown>();
const MAX_KEPT_COMPILED = 200_000;
function keepCompiled(due: unknown): void {
  if (keptCompiled.size < MAX_KEPT_COMPILED) keptCompiled.add(due);
}

/** A validated schedule without its compiled cron: plain data that survives a structured clone. */
export type ScheduleDefinition = Omit<ValidatedSchedule, 'due'>;

/** One schedule of a clean file: its definition, the 1-based position of its list entry and its definition hash. */
export interface PrecheckedSchedule {
  definition: ScheduleDefinition;
  line: number;
  col: number;
  /** sha256 (hex) of the canonical JSON of `definition` (see `CompiledSchedule.definitionHash`). */
  definitionHash: string;
  /** 1-based position of the schedule's `name` value. */
  nameLine: number;
  nameCol: number;
}

/** What the pre-check says of one file: clean (its schedules), or check it in-process. */
export type Precheck = { clean: true; schedules: PrecheckedSchedule[] } | { clean: false };

/**
 * Pre-checks one schedule file (see the module doc). Never throws for bad input: anything unusual is `clean: false`.
 * @param file the file as named to the loader.
 */
export async function precheckFile(file: string): Promise<Precheck> {
  let text: string;
  try {
    const read = await readBounded(file, MAX_SCHEDULE_FILE_BYTES);
    if (read.tooLarge) return { clean: false };
    text = read.text;
  } catch {
    return { clean: false };
  }
  const lineCounter = new LineCounter();
  let doc: Document | undefined = parseDocument(text, { ...YAML_OPTIONS, lineCounter });
  if (doc.errors.length > 0 || doc.contents === null || (isScalar(doc.contents) && doc.contents.value === null)) return { clean: false };
  const at = (offset: number): { line: number; col: number } => lineCounter.linePos(offset);
  // Nested past the one limit (depth.ts): refused in-process, before the recursive walks below.
  if (firstTooDeep<unknown>(doc.contents, FILE_DEPTH, yamlChildren) !== undefined) return { clean: false };
  if (protoKeyErrors(doc, file, at).length > 0) return { clean: false };
  let data: unknown;
  try {
    data = doc.toJS({ maxAliasCount: maxAliasCountOf(doc) });
  } catch {
    return { clean: false };
  }
  const raw = data as { schedules?: unknown; calendars?: unknown } | null;
  if (raw === null || typeof raw !== 'object' || raw.calendars !== undefined || !Array.isArray(raw.schedules)) return { clean: false };
  const items: unknown[] = raw.schedules;
  let located: Locator | undefined = new Locator(doc, at);
  const positions: { line: number; col: number; nameLine: number; nameCol: number }[] = [];
  for (const [i, item] of items.entries()) {
    const it = item as { calendar?: unknown; blackouts?: unknown; job?: unknown } | null;
    // Calendars (resolved across files) and deprecated input take the in-process path.
    // So does a value JSON cannot carry (refused there with its position: load.ts checkData).
    if (it === null || typeof it !== 'object' || it.calendar !== undefined || it.blackouts !== undefined || cleanupNotifyAlias(it.job) || nonJsonValues(it).length > 0) {
      return { clean: false };
    }
    const entry = located.position(['schedules', i], false);
    const path: Path = ['schedules', i, 'name'];
    const name = located.position(path, false);
    positions.push({ ...entry, nameLine: name.line, nameCol: name.col });
  }
  // The positioned document goes before validation (it is ~25 times the file's size).
  doc = undefined;
  located = undefined;
  const parsed = scheduleFileSchema.safeParse(data);
  if (!parsed.success) return { clean: false };
  const schedules = parsed.data.schedules.map((s, i): PrecheckedSchedule => {
    const { due, ...definition } = s;
    keepCompiled(due);
    const definitionHash = hash('sha256', canonicalJson(definition), 'hex');
    const p = positions[i]!;
    return { definition, line: p.line, col: p.col, nameLine: p.nameLine, nameCol: p.nameCol, definitionHash };
  });
  return { clean: true, schedules };
}
