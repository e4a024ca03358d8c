/**
 * Unclosed quotes and flow collections. The yaml library reports a quoted string or a `[`/`{` that is never
 * closed where it gave up reading it (often the end of the file, or a later line it could not make sense of);
 * the mistake is where it opens. The library's CST (its tokens, with their source text and offsets) still shows
 * every such token from its opening character, so the opening is found there, not guessed from the message.
 */
import { CST, Parser } from 'yaml';
import { isStackOverflow } from './depth.js';

/** A quoted string or flow collection that is never closed. `offset` is that of its opening character (0-based). */
export interface UnclosedOpening {
  offset: number;
  /** The opening character: `"`, `'`, `[` or `{`. */
  opens: '"' | "'" | '[' | '{';
}

// A complete quoted scalar: double quotes with backslash escapes; single quotes with '' as the escaped quote.
const CLOSED_DOUBLE = /^"(?:[^"\\]|\\[\s\S])*"$/;
const CLOSED_SINGLE = /^'(?:[^']|'')*'$/;

/** Every quoted string and flow collection of `text` that is never closed, in file order. */
export function unclosedOpenings(text: string): UnclosedOpening[] {
  const out: UnclosedOpening[] = [];
  const check = (t: CST.Token | undefined): void => {
    if (!t) return;
    if (t.type === 'double-quoted-scalar' && !CLOSED_DOUBLE.test(t.source)) out.push({ offset: t.offset, opens: '"' });
    else if (t.type === 'single-quoted-scalar' && !CLOSED_SINGLE.test(t.source)) out.push({ offset: t.offset, opens: "'" });
    else if (t.type === 'flow-collection' && !t.end.some((e) => e.type === 'flow-map-end' || e.type === 'flow-seq-end')) {
      out.push({ offset: t.offset, opens: t.start.source === '[' ? '[' : '{' });
    }
  };
  try {
    for (const token of new Parser().parse(text)) {
      if (token.type !== 'document') continue;
      check(token.value); // the document's own value: the visitor walks only the items below it
      CST.visit(token, ({ key, value }) => {
        check(key ?? undefined);
        check(value);
      });
    }
  } catch (err) {
    // CST.visit is recursive: a document nested some thousand levels deep runs it out of stack. What was found so
    // far stands; the nesting itself is reported by the yaml library's own error (yaml-messages.ts).
    if (!isStackOverflow(err)) throw err;
  }
  return out.sort((a, b) => a.offset - b.offset);
}

/** What is wrong and how to fix it, for an {@link UnclosedOpening}. */
export function unclosedMessage(u: UnclosedOpening): { reason: string; hint: string } {
  if (u.opens === '"' || u.opens === "'") {
    return {
      reason: 'this quoted string is never closed',
      hint: `end it with ${u.opens} on the line it starts, e.g. cron: ${u.opens}0 * * * *${u.opens}`,
    };
  }
  const close = u.opens === '[' ? ']' : '}';
  return {
    reason: `this ${u.opens === '[' ? 'list' : 'map'} (${u.opens}) is never closed`,
    hint: `end it with ${close}, e.g. ${u.opens === '[' ? 'args: [a, b]' : 'job: {kind: http, url: "https://…"}'}; a ${u.opens} … ${close} written across lines must indent its later lines more than its key`,
  };
}
