/**
 * The timeline of a schedule's occurrences as SVG, drawn on the server: for each occurrence its jitter window as a
 * band `[due, due + jitter)`, its fire time as a tick, its first start as a mark coloured by its state, and every
 * re-claim as a second mark (a diamond) with its replica and fencing token in the tooltip. Pure.
 */
import { html, raw } from 'hono/html';
import type { HtmlEscapedString } from 'hono/utils/html';
import type { OccurrenceView } from '../history/model.js';
import { clock, dur, utc } from './format.js';

/** Colour class per state (app.css). */
export const stateClass = (s: string): string => `st-${s}`;

const W = 1000;
const H = 90;
const PAD = 24;

/**
 * @param items occurrences (any order).
 * @param fromMs / toMs the span drawn.
 * @param jitterMs the schedule's jitter window.
 */
export function timelineSvg(items: readonly OccurrenceView[], fromMs: number, toMs: number, jitterMs: number, nowMs: number): HtmlEscapedString | Promise<HtmlEscapedString> {
  const span = Math.max(1, toMs - fromMs);
  const x = (t: number): number => PAD + ((t - fromMs) / span) * (W - 2 * PAD);
  const ticks: string[] = [];
  for (let i = 0; i <= 6; i++) {
    const t = fromMs + (span * i) / 6;
    ticks.push(`<line class="grid" x1="${x(t)}" x2="${x(t)}" y1="10" y2="${H - 20}"/><text class="axis" x="${x(t)}" y="${H - 6}" text-anchor="middle">${span > 2 * 86400000 ? utc(t).slice(5, 16) : span > 600_000 ? utc(t).slice(11, 16) : utc(t).slice(11, 19)}</text>`);
  }
  const marks: string[] = [];
  for (const o of items) {
    if (o.dueMs + jitterMs < fromMs || o.dueMs > toMs) continue;
    const key = esc(o.key);
    const bandW = Math.max(1, x(o.dueMs + Math.max(jitterMs, 1)) - x(o.dueMs));
    marks.push(`<rect class="band" x="${x(o.dueMs).toFixed(1)}" y="20" width="${bandW.toFixed(1)}" height="36"><title>jitter window of ${key}: ${clock(o.dueMs)} – ${clock(o.dueMs + jitterMs)}</title></rect>`);
    marks.push(`<line class="fire" x1="${x(o.fireMs).toFixed(1)}" x2="${x(o.fireMs).toFixed(1)}" y1="16" y2="60"><title>fire time ${clock(o.fireMs)}</title></line>`);
    const first = o.attempts[0];
    const startMs = o.startMs ?? first?.startMs;
    const tip = `${key}: ${o.state}${o.reason ? ` (${esc(o.reason)})` : ''}`;
    const link = `/occurrences/${encodeURIComponent(o.key)}`;
    if (startMs !== undefined) {
      marks.push(`<a href="${link}"><circle class="start ${stateClass(o.state)}" cx="${x(startMs).toFixed(1)}" cy="38" r="5"><title>${tip}; started ${clock(startMs)}, ${dur(startMs - o.fireMs)} after the fire time${first ? `, by ${esc(first.replica)} (token ${first.fencingToken})` : ''}</title></circle></a>`);
    } else {
      marks.push(`<a href="${link}"><rect class="start ${stateClass(o.state)}" x="${(x(o.fireMs) - 4).toFixed(1)}" y="34" width="8" height="8"><title>${tip}; never started</title></rect></a>`);
    }
    for (const a of o.attempts.slice(1)) {
      const cx = x(a.startMs);
      marks.push(`<a href="${link}"><path class="reclaim ${stateClass(o.state)}" d="M${cx.toFixed(1)} 44 l6 6 l-6 6 l-6 -6 z"><title>re-claim of ${key} (${a.why}) by ${esc(a.replica)}, fencing token ${a.fencingToken}, at ${clock(a.startMs)}</title></path></a>`);
    }
  }
  const now = nowMs >= fromMs && nowMs <= toMs ? `<line class="now" x1="${x(nowMs)}" x2="${x(nowMs)}" y1="10" y2="${H - 20}"><title>now</title></line>` : '';
  return html`<svg class="timeline" viewBox="0 0 ${W} ${H}" role="img" aria-label="timeline of occurrences">${raw(ticks.join(''))}${raw(marks.join(''))}${raw(now)}</svg>`;
}

/** Escapes text for SVG/HTML. */
export function esc(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}
