/**
 * The dashboard's pages, rendered on the server as HTML (hono/html escapes every value) from the same readers the
 * API uses: the schedules table (search, sort, overdue and failing first, live through htmx), a schedule (its
 * timeline, lateness plot, occurrences, actions), an occurrence (attempts, fencing tokens, result, log lines),
 * the flock, and the audit log.
 */
import { html, raw } from 'hono/html';
import type { HtmlEscapedString } from 'hono/utils/html';
import type { AuditEntry } from '../history/audit.js';
import type { LogLine, OccurrenceView } from '../history/model.js';
import type { FlockView } from '../api/flock.js';
import type { ScheduleSummary } from '../api/schemas.js';
import { clock, dur, percentile, rel, utc } from './format.js';
import { stateClass, timelineSvg } from './timeline.js';

type Html = HtmlEscapedString | Promise<HtmlEscapedString>;

/** The page shell: navigation, token dialog, assets. */
export function layout(title: string, here: string, body: Html, o: { plot?: boolean } = {}): Html {
  const nav = (href: string, label: string) => html`<a href="${href}" class="${here === href ? 'here' : ''}">${label}</a>`;
  return html`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="htmx-config" content='{"includeIndicatorStyles":false,"allowEval":false,"allowScriptTags":false}'>
<title>${title} · cronflock</title>
<link rel="stylesheet" href="/assets/app.css">${o.plot ? html`<link rel="stylesheet" href="/assets/uPlot.min.css">` : ''}
</head><body>
<header><span class="brand">cronflock</span>${nav('/', 'Schedules')}${nav('/flock', 'Flock')}${nav('/audit', 'Audit log')}<a href="/api/v1/openapi.json">API</a>
<span class="auth"><span id="who">read-only</span> <button id="token-open" type="button">Token</button></span></header>
<dialog id="token-dialog"><form id="token-form" method="dialog"><p>Bearer token for actions (kept in this tab only):</p>
<input id="token-input" type="password" autocomplete="off"> <button type="submit">Save</button></form></dialog>
<main>${body}</main>
<script src="/assets/htmx.min.js"></script>${o.plot ? html`<script src="/assets/uPlot.iife.min.js"></script>` : ''}<script src="/assets/app.js"></script>
</body></html>`;
}

const pill = (state: string, text?: string): Html => html`<span class="pill ${stateClass(state)}">${text ?? state}</span>`;
const occLink = (key: string, text?: string): Html => html`<a href="/occurrences/${encodeURIComponent(key)}">${text ?? key}</a>`;

/** Query of the schedules table. */
export interface TableQuery {
  q: string;
  sort: 'name' | 'attention' | 'next' | 'last';
  overdue: boolean;
  failing: boolean;
  suspended: boolean;
  cursor?: string;
}

function tableQueryString(t: TableQuery, over: Partial<TableQuery> = {}): string {
  const v = { ...t, ...over };
  const p = new URLSearchParams();
  if (v.q) p.set('q', v.q);
  p.set('sort', v.sort);
  if (v.overdue) p.set('overdue', 'true');
  if (v.failing) p.set('failing', 'true');
  if (v.suspended) p.set('suspended', 'true');
  if (v.cursor) p.set('cursor', v.cursor);
  return p.toString();
}

/** The schedules page (the table comes from {@link schedulesTable}, refreshed every 5 s). */
export function schedulesPage(t: TableQuery, table: Html): Html {
  return layout(
    'Schedules',
    '/',
    html`<h1>Schedules</h1>
<form class="toolbar" hx-get="/ui/schedules-table" hx-target="#table" hx-trigger="input changed delay:300ms from:input[type=search], change" hx-push-url="false" action="/" method="get">
<input type="search" name="q" value="${t.q}" placeholder="search by name" aria-label="search schedules">
<label><input type="checkbox" name="overdue" value="true" ${t.overdue ? raw('checked') : ''}> overdue</label>
<label><input type="checkbox" name="failing" value="true" ${t.failing ? raw('checked') : ''}> failing</label>
<label><input type="checkbox" name="suspended" value="true" ${t.suspended ? raw('checked') : ''}> suspended</label>
<label>sort <select name="sort">${(['attention', 'name', 'next', 'last'] as const).map((s) => html`<option value="${s}" ${t.sort === s ? raw('selected') : ''}>${{ attention: 'overdue and failing first', name: 'name', next: 'next fire time', last: 'latest result' }[s]}</option>`)}</select></label>
<input type="hidden" name="cursor" value="${t.cursor ?? ''}">
<noscript><button type="submit">Apply</button></noscript>
</form>
<div id="table" hx-get="/ui/schedules-table" hx-include=".toolbar" hx-trigger="every 5s" hx-swap="innerHTML">${table}</div>`,
  );
}

/** The schedules table (a fragment). */
export function schedulesTable(t: TableQuery, page: { items: ScheduleSummary[]; next: string | null; total: number }, nowMs: number): Html {
  const rows = page.items.map((s) => {
    const overdue = s.overdueSeconds > 0;
    return html`<tr class="${overdue ? 'overdue' : ''} ${s.suspended ? 'suspended' : ''}" data-schedule="${s.name}">
<td><a href="/schedules/${encodeURIComponent(s.name)}"><b>${s.name}</b></a><div class="small muted">${s.source}</div></td>
<td>${s.cronText}<div class="small muted"><code>${s.cron}</code> ${s.timeZone}${s.jitterMs ? html` · jitter ${dur(s.jitterMs)}` : ''}</div></td>
<td title="${utc(s.nextFireMs)} UTC">${s.suspended ? html`<span class="pill suspended">suspended</span>` : rel(s.nextFireMs, nowMs)}<div class="small muted">${utc(s.nextFireMs)}</div></td>
<td>${s.last ? html`${occLink(s.last.key, '')}${pill(s.last.state)} <span class="small muted">${rel(s.last.endMs ?? s.last.dueMs, nowMs)}</span>${s.last.reason ? html`<div class="small muted">${s.last.reason}</div>` : ''}` : html`<span class="muted">none yet</span>`}</td>
<td>${overdue ? html`<span class="pill overdue">overdue ${dur(s.overdueSeconds * 1000)}</span>` : html`<span class="muted">no</span>`}</td>
<td>${s.suspended ? html`<span class="pill suspended">suspended</span><div class="small">${s.suspension?.note ?? ''}</div><div class="small muted">by ${s.suspension?.by ?? ''}</div>` : ''}</td>
<td class="num small"><span title="succeeded">${s.counts24h.succeeded}</span> / <span title="failed">${s.counts24h.failed}</span> / <span title="missed">${s.counts24h.missed}</span> / <span title="skipped">${s.counts24h.skipped}</span></td>
<td class="small">${s.jobKind}<div class="muted">${s.job}</div></td></tr>`;
  });
  return html`<div class="small muted">${page.total} schedule(s)${t.q || t.overdue || t.failing || t.suspended ? ' match' : ''} · updated ${utc(nowMs)} UTC</div>
<table><thead><tr><th>schedule</th><th>cron</th><th>next fire</th><th>latest result</th><th>overdue</th><th>suspended</th><th>24 h ok / failed / missed / skipped</th><th>job</th></tr></thead>
<tbody>${rows}</tbody></table>
<div class="pager">${t.cursor ? html`<a href="/?${tableQueryString(t, { cursor: undefined })}">first page</a> · ` : ''}${page.next ? html`<a href="/?${tableQueryString(t, { cursor: page.next })}">next page →</a>` : ''}</div>`;
}

/** The schedule page. */
export function schedulePage(
  s: ScheduleSummary & { upcoming: { dueMs: number; fireMs: number; windowEndMs: number }[]; running: string[]; startingDeadlineMs: number | null; timeoutMs: number | null },
  occ: { items: OccurrenceView[]; truncated: boolean; fromMs: number; toMs: number },
  range: '1h' | '24h' | '7d',
  nowMs: number,
): Html {
  const started = occ.items.filter((o) => o.latenessMs !== undefined && o.startMs !== undefined);
  const late = started.map((o) => o.latenessMs!);
  const p50 = percentile(late, 50);
  const p99 = percentile(late, 99);
  const plot = [...started].sort((a, b) => a.startMs! - b.startMs!);
  const data = JSON.stringify({ x: plot.map((o) => o.startMs! / 1000), y: plot.map((o) => o.latenessMs!), p50: p50 ?? 0, p99: p99 ?? 0 });
  const card = (k: string, v: Html | string) => html`<div class="card"><div class="k">${k}</div><div class="v">${v}</div></div>`;
  const name = encodeURIComponent(s.name);
  return layout(
    s.name,
    '',
    html`<h1>${s.name} ${s.suspended ? html`<span class="pill suspended">suspended</span>` : ''} ${s.overdueSeconds > 0 ? html`<span class="pill overdue">overdue ${dur(s.overdueSeconds * 1000)}</span>` : ''}</h1>
${s.suspended ? html`<div class="notice">Suspended since ${utc(s.suspension?.sinceMs)} UTC by ${s.suspension?.by}${s.suspension?.note ? html`: <b>${s.suspension.note}</b>` : ''}</div>` : ''}
<div class="cards">
${card('cron', html`${s.cronText}<div class="small muted"><code>${s.cron}</code> in ${s.timeZone}</div>`)}
${card('jitter window', s.jitterMs ? dur(s.jitterMs) : 'none')}
${card('next fire', html`${rel(s.nextFireMs, nowMs)}<div class="small muted">${utc(s.nextFireMs)} UTC</div>`)}
${card('latest result', s.last ? html`${pill(s.last.state)} ${occLink(s.last.key, rel(s.last.endMs ?? s.last.dueMs, nowMs))}` : 'none yet')}
${card('last success', s.lastSuccessMs ? rel(s.lastSuccessMs, nowMs) : 'none on record')}
${card('policy', html`${s.concurrencyPolicy}${s.timeoutMs ? html` · timeout ${dur(s.timeoutMs)}` : ''}${s.startingDeadlineMs !== null ? html` · starting deadline ${dur(s.startingDeadlineMs)}` : ''}`)}
${card('job', html`${s.jobKind}<div class="small muted">${s.job}</div>`)}
${card('defined in', html`<span class="small">${s.source}</span><div class="small muted">published by ${s.publishedBy}</div>`)}
${card('last 24 h', `${s.counts24h.succeeded} ok · ${s.counts24h.failed} failed · ${s.counts24h.missed} missed · ${s.counts24h.skipped} skipped`)}
${card('running now', s.running.length ? html`${s.running.map((k) => html`<div>${occLink(k)}</div>`)}` : 'nothing')}
</div>
<div class="actions" data-allowed="no">
<form data-action="/api/v1/schedules/${name}/trigger"><button type="submit">Run now</button></form>
<form data-action="/api/v1/schedules/${name}/suspend"><label>reason <input name="reason" placeholder="why (optional)"></label><button type="submit">Suspend</button></form>
<form data-action="/api/v1/schedules/${name}/resume"><label>reason <input name="reason" placeholder="why (optional)"></label><button type="submit">Resume</button></form>
<form data-action="/api/v1/schedules/${name}/backfill"><label>from <input name="from" placeholder="2026-01-01T00:00:00Z" size="20"></label><label>to <input name="to" placeholder="2026-01-02T00:00:00Z" size="20"></label><label><input type="checkbox" name="dryRun" checked> dry run</label><label>reason <input name="reason" size="12"></label><button type="submit">Backfill</button></form>
<span id="actions-why" class="small muted"></span>
</div>
<div id="status" role="status"></div>
<h2>Timeline <span class="small"><a href="/schedules/${name}?range=1h">1 h</a> · <a href="/schedules/${name}?range=24h">24 h</a> · <a href="/schedules/${name}?range=7d">7 d</a></span> <span class="small muted">(${range}; ${occ.items.length} occurrence(s)${occ.truncated ? ', the newest only' : ''})</span></h2>
<div class="legend"><span>▭ jitter window</span><span>│ fire time</span><span>● start, by final state</span><span>◆ re-claim</span></div>
${timelineSvg(occ.items, occ.fromMs, occ.toMs, s.jitterMs, nowMs)}
<h2>Lateness (start − fire time) <span class="small muted">p50 ${p50 === null ? '—' : dur(p50)} · p99 ${p99 === null ? '—' : dur(p99)} over ${late.length} start(s)</span></h2>
<div id="lateness" class="plot"></div>
<script type="application/json" id="lateness-data">${raw(data.replace(/</g, '\\u003c'))}</script>
<h2>Upcoming</h2>
<table><thead><tr><th>due (UTC)</th><th>fire</th><th>jitter window ends</th></tr></thead><tbody>
${s.upcoming.map((u) => html`<tr><td>${utc(u.dueMs)}</td><td>${clock(u.fireMs)} (${rel(u.fireMs, nowMs)})</td><td>${clock(u.windowEndMs)}</td></tr>`)}
</tbody></table>
<h2>Occurrences</h2>
${occurrencesTable(occ.items.slice(0, 200))}`,
    { plot: true },
  );
}

function occurrencesTable(items: OccurrenceView[]): Html {
  return html`<table class="occurrences"><thead><tr><th>occurrence</th><th>state</th><th>fire</th><th>start</th><th>late</th><th>took</th><th>attempts (replica · token)</th><th>reason</th></tr></thead><tbody>
${items.map(
  (o) => html`<tr data-occurrence="${o.key}"><td>${occLink(o.key)}<div class="small muted">${o.origin}</div></td><td>${pill(o.state)}</td><td>${clock(o.fireMs)}</td><td>${clock(o.startMs)}</td>
<td class="num">${o.latenessMs !== undefined ? dur(o.latenessMs) : '—'}</td><td class="num">${o.endMs !== undefined && o.startMs !== undefined ? dur(o.endMs - o.startMs) : '—'}</td>
<td class="small">${o.attempts.map((a) => html`<div>${a.attempt}. ${a.replica} · token ${a.fencingToken}${a.why !== 'first' ? ` (${a.why})` : ''}</div>`)}</td><td class="small">${o.reason ?? ''}${o.error ? html`<div class="muted">${o.error}</div>` : ''}</td></tr>`,
)}</tbody></table>`;
}

/** A result as tables: objects as key/value rows; arrays of objects (report objects) as a table with a column per key. */
export function resultTable(v: unknown, depth = 0): Html {
  if (v === null || v === undefined) return html`<span class="muted">—</span>`;
  if (Array.isArray(v)) {
    if (v.length === 0) return html`<span class="muted">(none)</span>`;
    if (v.every((x) => x !== null && typeof x === 'object' && !Array.isArray(x))) {
      const cols = [...new Set(v.flatMap((x) => Object.keys(x as object)))];
      return html`<table><thead><tr>${cols.map((c) => html`<th>${c}</th>`)}</tr></thead><tbody>${v.map((x) => html`<tr>${cols.map((c) => html`<td>${cell((x as Record<string, unknown>)[c], depth)}</td>`)}</tr>`)}</tbody></table>`;
    }
    return html`${v.map((x) => cell(x, depth)).map((c, i) => html`${i ? ', ' : ''}${c}`)}`;
  }
  if (typeof v === 'object') {
    return html`<table><tbody>${Object.entries(v as Record<string, unknown>).map(([k, x]) => html`<tr><th>${k}</th><td>${cell(x, depth)}</td></tr>`)}</tbody></table>`;
  }
  return html`${String(v)}`;
}
const cell = (x: unknown, depth: number): Html => (x !== null && typeof x === 'object' ? (depth < 3 ? resultTable(x, depth + 1) : html`<code>${JSON.stringify(x)}</code>`) : html`${x === undefined ? '' : String(x)}`);

/** The occurrence page. */
export function occurrencePage(o: OccurrenceView & { logs: LogLine[]; jitterMs: number | null }, nowMs: number): Html {
  const jitter = o.jitterMs ?? 0;
  const lastStart = o.attempts.length ? o.attempts[o.attempts.length - 1]!.startMs : (o.startMs ?? o.fireMs);
  const from = o.dueMs - Math.max(1000, jitter * 0.1);
  const to = Math.max(o.endMs ?? nowMs, lastStart, o.dueMs + jitter) + Math.max(1000, jitter * 0.1);
  return layout(
    o.key,
    '',
    html`<h1>${o.key} ${pill(o.state)}</h1>
<p><a href="/schedules/${encodeURIComponent(o.schedule)}">← ${o.schedule}</a> · origin ${o.origin}${o.plannedBy ? ` (asked by ${o.plannedBy})` : ''} · from the ${o.from === 'record' ? 'run record' : 'history'}</p>
<div class="cards">
<div class="card"><div class="k">due</div><div class="v">${utc(o.dueMs)}</div></div>
<div class="card"><div class="k">jitter window</div><div class="v">${clock(o.dueMs)} – ${clock(o.dueMs + jitter)}</div></div>
<div class="card"><div class="k">fire</div><div class="v">${clock(o.fireMs)} <span class="small muted">(+${dur(o.fireMs - o.dueMs)} into the window)</span></div></div>
<div class="card"><div class="k">first start</div><div class="v">${clock(o.startMs)} ${o.latenessMs !== undefined ? html`<span class="small muted">(${dur(o.latenessMs)} after the fire time)</span>` : ''}</div></div>
<div class="card"><div class="k">end</div><div class="v">${clock(o.endMs)}${o.endMs !== undefined && o.startMs !== undefined ? html` <span class="small muted">(took ${dur(o.endMs - o.startMs)})</span>` : ''}</div></div>
<div class="card"><div class="k">state</div><div class="v">${pill(o.state)} ${o.reason ?? ''}</div></div>
${o.refused ? html`<div class="card"><div class="k">stale completions refused</div><div class="v">${o.refused}</div></div>` : ''}
</div>
${timelineSvg([o], from, to, jitter, nowMs)}
<h2>Attempts</h2>
${o.attempts.length === 0 ? html`<p class="muted">Never claimed${o.replica ? ` (closed by ${o.replica})` : ''}.</p>` : html`<table class="attempts"><thead><tr><th>#</th><th>claim</th><th>replica</th><th>fencing token</th><th>started</th><th>late</th></tr></thead><tbody>
${o.attempts.map((a) => html`<tr data-token="${a.fencingToken}"><td>${a.attempt}</td><td>${a.why === 'first' ? 'first claim' : a.why === 'stalled' ? 're-claim: the previous claimant stalled (killed, stopped)' : a.why === 'handover' ? 're-claim after a hand-over' : 'retry'}</td><td>${a.replica}</td><td><b>${a.fencingToken}</b></td><td>${clock(a.startMs)}</td><td class="num">${dur(a.latenessMs)}</td></tr>`)}
</tbody></table>`}
${o.error ? html`<h2>Error</h2><pre class="log">${o.error}</pre>` : ''}
<h2>Result</h2>
${o.result === undefined ? html`<p class="muted">No result recorded.</p>` : resultTable(o.result)}
<h2>Log lines <span class="small muted">(the last 200 lines / 64 KiB per attempt)</span></h2>
${o.logs.length === 0 ? html`<p class="muted">No log lines kept.</p>` : html`<pre class="log">${o.logs.map((l) => html`<span class="lvl-${l.level}">${clock(l.timeMs)} ${l.attempt ? `#${l.attempt}` : 'engine'} ${l.level.toUpperCase().padEnd(5)} ${l.msg}${Object.keys(l.fields).length ? ` ${JSON.stringify(l.fields)}` : ''}</span>\n`)}</pre>`}`,
  );
}

/** The flock page. */
export function flockPage(f: FlockView): Html {
  const r = f.redis;
  return layout(
    'Flock',
    '/flock',
    html`<h1>Flock</h1>
<p>${f.replicas.length} live replica(s) · ${f.schedules} schedule(s) · planning ${f.planning === 'divided' ? 'divided among the replicas (they agree on the definitions)' : f.planning === 'each-plans-all' ? 'not divided: the replicas run different definitions (a rollout?), each plans all it runs' : 'by nobody: no live replica'}</p>
<table><thead><tr><th>replica</th><th>version</th><th>host</th><th>started</th><th>clock skew</th><th>active runs</th><th>plans</th><th>definitions</th><th>membership</th></tr></thead><tbody>
${f.replicas.map((x) => html`<tr data-replica="${x.name}"><td><b>${x.name}</b></td><td>${x.version ?? '—'}</td><td>${x.host ?? '—'}</td><td>${rel(x.startedAtMs, f.nowMs)}</td>
<td class="num">${x.clockSkewMs === null ? '—' : `${x.clockSkewMs} ms`}</td><td class="num">${x.activeRuns ?? '—'}</td><td class="num">${x.plans}</td><td><code>${x.definitions}</code></td><td class="small">lapses ${rel(f.nowMs + x.membershipExpiresInMs, f.nowMs)}</td></tr>`)}
</tbody></table>
<h2>Redis</h2>
<div class="cards">
<div class="card"><div class="k">version · role</div><div class="v">${r.version} · ${r.role}</div></div>
<div class="card"><div class="k">memory</div><div class="v">${(r.usedMemoryBytes / 2 ** 20).toFixed(1)} MiB${r.maxMemoryBytes ? ` of ${(r.maxMemoryBytes / 2 ** 20).toFixed(0)} MiB` : ''}</div></div>
<div class="card"><div class="k">maxmemory-policy</div><div class="v">${r.maxMemoryPolicy}${r.maxMemoryPolicy !== 'noeviction' ? html` <span class="pill st-failed">must be noeviction</span>` : ''}</div></div>
<div class="card"><div class="k">clock (UTC)</div><div class="v">${utc(r.timeMs)}</div></div>
<div class="card"><div class="k">clients</div><div class="v">${r.connectedClients}</div></div>
<div class="card"><div class="k">up</div><div class="v">${dur(r.uptimeSeconds * 1000)}</div></div>
</div>`,
  );
}

/** The audit log page. */
export function auditPage(items: AuditEntry[], next: string | null): Html {
  return layout(
    'Audit log',
    '/audit',
    html`<h1>Audit log</h1>
<table><thead><tr><th>when (UTC)</th><th>who</th><th>via</th><th>action</th><th>schedule</th><th>why</th><th>what it did</th></tr></thead><tbody>
${items.map((e) => html`<tr><td>${utc(e.atMs)}</td><td>${e.who}</td><td>${e.via}</td><td>${e.action}</td><td><a href="/schedules/${encodeURIComponent(e.schedule)}">${e.schedule}</a></td><td>${e.reason}</td><td class="small">${e.outcome}</td></tr>`)}
</tbody></table>
${next ? html`<div class="pager"><a href="/audit?cursor=${encodeURIComponent(next)}">older →</a></div>` : ''}`,
  );
}

/** A page for an error (not found, bad parameter). */
export function errorPage(title: string, message: string): Html {
  return layout(title, '', html`<h1>${title}</h1><p>${message}</p><p><a href="/">← schedules</a></p>`);
}
