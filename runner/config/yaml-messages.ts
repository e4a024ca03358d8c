/**
 * The yaml library's syntax errors in our words: what is wrong in a schedule file and how to fix it, chosen by
 * the library's error `code` (`DUPLICATE_KEY`, `MULTIPLE_DOCS`, `BAD_INDENT`, `MISSING_CHAR`, `TAB_AS_INDENT`,
 * `BLOCK_AS_IMPLICIT_KEY`, `BAD_SCALAR_START`, `UNEXPECTED_TOKEN` …), and the place a person has to look at: where the mistaken line's text starts,
 * not the column 1 of its indentation. A code not listed keeps the library's words (prefixed `YAML:`).
 */
import { isMap, isScalar, visit, type Document, type YAMLError } from 'yaml';
import { PARSER_TOO_DEEP_REASON, TOO_DEEP_HINT } from './depth.js';

/** A 1-based line and column. */
export interface LineCol {
  line: number;
  col: number;
}

/** An error of the YAML text: where it is (`line:col`), what is wrong and how to fix it. */
export interface YamlMessage extends LineCol {
  reason: string;
  hint?: string;
}

/**
 * Our message for one of the yaml library's errors.
 * @param doc the document as parsed (errors and all), to find the first of two equal keys.
 * @param lines the file's lines; `at` turns an offset into a 1-based line and column.
 */
export function yamlMessage(err: YAMLError, doc: Document | undefined, lines: readonly string[], at: (offset: number) => LineCol): YamlMessage {
  const pos = at(err.pos[0]);
  const lineText = lines[pos.line - 1] ?? '';
  const textCol = lineText.length - lineText.trimStart().length + 1; // where the line's text starts
  switch (err.code) {
    case 'MULTIPLE_DOCS':
      return {
        ...pos,
        reason: 'a second YAML document starts here (a --- line): a schedule file holds one document',
        hint: 'remove the --- line, or put what follows in a file of its own in the same directory',
      };
    case 'DUPLICATE_KEY': {
      const dup = duplicateKey(doc, err.pos[0], at);
      return {
        ...pos,
        reason: dup ? `key "${dup.key}" appears twice in this map (first at line ${dup.first.line}:${dup.first.col})` : 'this key appears twice in the same map',
        hint: 'keep one of them: each key may appear once in a map (the later one would silently win)',
      };
    }
    case 'BAD_INDENT': {
      const above = keyAbove(lines, pos.line);
      return {
        line: pos.line,
        col: textCol,
        reason: `this line starts at column ${textCol}, not in the column of the keys of the map it follows`,
        hint:
          (above ? `line ${above.line} has its key at column ${above.col}; ` : '') +
          'indent keys of one map to the same column (with spaces), or start a new list item with "- "',
      };
    }
    case 'MISSING_CHAR':
      if (/without - indicator/.test(err.message)) {
        const above = keyAbove(lines, pos.line);
        return {
          line: pos.line,
          col: textCol,
          reason: 'this line is in a list but is neither a new item (- …) nor indented like the keys of the item above',
          hint:
            `start a new item with "- ", or indent it to the column of the keys above` +
            (above ? ` (column ${above.col}, as on line ${above.line})` : ''),
        };
      }
      return { ...pos, reason: `YAML: ${err.message}` };
    case 'TAB_AS_INDENT':
      return { ...pos, reason: 'a tab indents this line; YAML indentation must be spaces', hint: 'replace the tab with spaces (set your editor to insert spaces for Tab in YAML files)' };
    case 'BLOCK_AS_IMPLICIT_KEY':
    case 'MULTILINE_IMPLICIT_KEY': {
      const next = lines.slice(pos.line).findIndex((l) => l.trim() !== '' && !l.trimStart().startsWith('#'));
      const nextLine = next < 0 ? undefined : pos.line + 1 + next;
      return {
        ...pos,
        reason: nextLine ? `line ${nextLine} is indented deeper than the key on this line, so YAML reads it as part of this value` : 'this value spans lines where YAML expects one',
        hint: 'indent keys of one map to the same column; quote a value that contains ": "',
      };
    }
    case 'BAD_SCALAR_START': {
      // `@daily`, a backquote, `%`: characters YAML keeps for itself cannot start an unquoted value.
      const ch = /character (\S)/.exec(err.message)?.[1];
      if (!ch) return { ...pos, reason: `YAML: ${err.message}` };
      return {
        ...pos,
        reason: `a value cannot start with ${ch} unless it is in quotes (YAML reserves ${ch})`,
        hint: `write the value in quotes, e.g. "${ch}${ch === '@' ? 'daily' : '…'}"`,
      };
    }
    case 'UNEXPECTED_TOKEN':
      if (/at node end/.test(err.message)) {
        return {
          ...pos,
          reason: 'more text follows a value that has ended (after its closing quote, or a map key where a list goes on)',
          hint: 'put all of a quoted value inside its quotes; a list item ("- …") and a map key cannot share one indentation level',
        };
      }
      return { ...pos, reason: `YAML: ${err.message}` };
    case 'RESOURCE_EXHAUSTION':
      // The library's composer is recursive: a document some thousand levels deep runs it out of stack, before
      // the loader's own nesting limit (runner/config/depth.ts) can place the problem at its node.
      if (/maximum call stack size exceeded/i.test(err.message)) return { ...pos, reason: PARSER_TOO_DEEP_REASON, hint: TOO_DEEP_HINT };
      return { ...pos, reason: `YAML: ${err.message}` };
    default:
      return { ...pos, reason: `YAML: ${err.message}` };
  }
}

/** The key of a DUPLICATE_KEY error at `offset` and where its first occurrence in the same map is. */
function duplicateKey(doc: Document | undefined, offset: number, at: (offset: number) => LineCol): { key: string; first: LineCol } | undefined {
  if (!doc) return undefined;
  let found: { key: string; first: LineCol } | undefined;
  visit(doc, {
    Map(_, map) {
      if (!isMap(map)) return undefined;
      const seen = new Map<unknown, number>();
      for (const pair of map.items) {
        const k = pair.key;
        if (!isScalar(k) || !k.range) continue;
        const firstAt = seen.get(k.value);
        if (firstAt !== undefined && k.range[0] === offset) {
          found = { key: String(k.value), first: at(firstAt) };
          return visit.BREAK;
        }
        if (firstAt === undefined) seen.set(k.value, k.range[0]);
      }
      return undefined;
    },
  });
  return found;
}

/** Where the key of the nearest line above `line` starts (after a `- `), ignoring blank and comment lines. */
function keyAbove(lines: readonly string[], line: number): LineCol | undefined {
  for (let i = line - 2; i >= 0; i--) {
    const l = lines[i]!;
    if (l.trim() === '' || l.trimStart().startsWith('#')) continue;
    const m = /^(\s*)(-\s+)?/.exec(l)!;
    return { line: i + 1, col: m[0].length + 1 };
  }
  return undefined;
}
