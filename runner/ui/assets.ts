/**
 * The dashboard's assets, all served by cronflock (the page works without a network; the CSP allows only
 * 'self'): htmx (live tables and search) and uPlot (the lateness plot) from their npm packages, pinned in
 * package.json, and our own stylesheet and script below. Read once, on first use.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

/** name → [content type, file in a package]. */
const VENDORED: Record<string, [string, string]> = {
  'htmx.min.js': ['text/javascript; charset=utf-8', 'htmx.org/dist/htmx.min.js'],
  'uPlot.iife.min.js': ['text/javascript; charset=utf-8', 'uplot/dist/uPlot.iife.min.js'],
  'uPlot.min.css': ['text/css; charset=utf-8', 'uplot/dist/uPlot.min.css'],
};

const cache = new Map<string, { type: string; body: string }>();

/** An asset by name, or undefined. */
export function asset(name: string): { type: string; body: string } | undefined {
  const hit = cache.get(name);
  if (hit) return hit;
  let a: { type: string; body: string } | undefined;
  if (name === 'app.css') a = { type: 'text/css; charset=utf-8', body: APP_CSS };
  else if (name === 'app.js') a = { type: 'text/javascript; charset=utf-8', body: APP_JS };
  else if (VENDORED[name]) a = { type: VENDORED[name][0], body: readFileSync(require.resolve(VENDORED[name][1]), 'utf8') };
  if (a) cache.set(name, a);
  return a;
}

const APP_CSS = `
:root { --fg:#1d2330; --muted:#667085; --line:#e4e7ec; --bg:#f8f9fb; --ok:#2e9d57; --fail:#d92d20; --miss:#dc6803; --skip:#98a2b3; --run:#1570ef; --retry:#7a5af8; --sched:#b2ccff; }
* { box-sizing: border-box; }
body { margin:0; font:14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color:var(--fg); background:var(--bg); }
header { display:flex; gap:1.5rem; align-items:center; padding:.6rem 1.2rem; background:#101828; color:#fff; }
header a { color:#d0d5dd; text-decoration:none; } header a.here, header a:hover { color:#fff; }
header .brand { font-weight:700; color:#fff; margin-right:1rem; }
header .auth { margin-left:auto; font-size:12px; color:#98a2b3; }
header button { font-size:12px; }
main { padding:1rem 1.2rem; max-width:1400px; }
h1 { font-size:20px; margin:.2rem 0 .8rem; } h2 { font-size:16px; margin:1.4rem 0 .5rem; }
table { border-collapse:collapse; width:100%; background:#fff; border:1px solid var(--line); }
th, td { text-align:left; padding:.35rem .6rem; border-bottom:1px solid var(--line); vertical-align:top; }
th { font-size:12px; color:var(--muted); font-weight:600; background:#f2f4f7; }
th a { color:inherit; }
td.num { text-align:right; font-variant-numeric: tabular-nums; }
tr.overdue td { background:#fef3f2; } tr.suspended td { color:var(--muted); }
.pill { display:inline-block; padding:0 .45rem; border-radius:9px; font-size:12px; color:#fff; background:var(--skip); }
.pill.st-succeeded { background:var(--ok); } .pill.st-failed { background:var(--fail); } .pill.st-missed { background:var(--miss); }
.pill.st-running { background:var(--run); } .pill.st-retrying { background:var(--retry); } .pill.st-scheduled { background:var(--sched); color:#1d2330; }
.pill.overdue { background:var(--fail); } .pill.suspended { background:#475467; }
.muted { color:var(--muted); } .small { font-size:12px; } code { font-size:12px; }
.toolbar { display:flex; gap:.8rem; align-items:center; margin-bottom:.7rem; flex-wrap:wrap; }
.toolbar input[type=search] { padding:.3rem .5rem; width:18rem; }
.cards { display:grid; grid-template-columns:repeat(auto-fill, minmax(220px, 1fr)); gap:.6rem; margin-bottom:1rem; }
.card { background:#fff; border:1px solid var(--line); padding:.5rem .7rem; }
.card .k { font-size:12px; color:var(--muted); } .card .v { font-size:15px; }
svg.timeline { width:100%; height:auto; background:#fff; border:1px solid var(--line); }
svg .grid { stroke:#eaecf0; } svg .axis { font-size:10px; fill:#667085; }
svg .band { fill:#d1e0ff; opacity:.6; } svg .fire { stroke:#344054; stroke-width:1; } svg .now { stroke:#d92d20; stroke-dasharray:3 3; }
svg .start { stroke:#fff; stroke-width:1; }
svg .st-succeeded { fill:var(--ok); } svg .st-failed { fill:var(--fail); } svg .st-missed { fill:var(--miss); } svg .st-skipped { fill:var(--skip); }
svg .st-running { fill:var(--run); } svg .st-retrying { fill:var(--retry); } svg .st-scheduled { fill:var(--sched); }
svg .reclaim { stroke:#101828; stroke-width:1.5; }
.legend span { margin-right:1rem; font-size:12px; }
.actions { background:#fff; border:1px solid var(--line); padding:.6rem .8rem; display:flex; flex-wrap:wrap; gap:1rem; align-items:flex-end; }
.actions form { display:flex; gap:.4rem; align-items:flex-end; }
.actions[data-allowed="no"] form button { opacity:.45; cursor:not-allowed; }
.notice { padding:.5rem .8rem; background:#fffaeb; border:1px solid #fedf89; margin:.6rem 0; }
#status { min-height:1.4em; margin:.4rem 0; } #status.error { color:var(--fail); } #status.ok { color:var(--ok); }
pre.log { background:#101828; color:#e4e7ec; padding:.6rem; overflow:auto; font-size:12px; margin:0; }
pre.log .lvl-warn { color:#fec84b; } pre.log .lvl-error, pre.log .lvl-fatal { color:#fda29b; }
.plot { background:#fff; border:1px solid var(--line); padding:.4rem; }
dialog { border:1px solid var(--line); padding:1rem; } dialog input { width:24rem; }
.pager { margin:.6rem 0; }
`;

/**
 * Our script: the token dialog (kept in this tab's sessionStorage), enabling the action forms when the token is an
 * operator's, sending actions as JSON with the bearer token, htmx requests with the token too, and the lateness
 * plot (uPlot) from the JSON data block of the schedule page.
 */
const APP_JS = `
(function () {
  'use strict';
  var TOKEN = 'cronflock-token';
  function token() { return sessionStorage.getItem(TOKEN) || ''; }
  function headers(extra) { var h = extra || {}; if (token()) h['Authorization'] = 'Bearer ' + token(); return h; }
  function $(sel) { return document.querySelector(sel); }
  function status(msg, ok) { var s = $('#status'); if (!s) return; s.textContent = msg; s.className = ok ? 'ok' : 'error'; }

  document.addEventListener('htmx:configRequest', function (e) { if (token()) e.detail.headers['Authorization'] = 'Bearer ' + token(); });

  function whoami() {
    return fetch('/api/v1/whoami', { headers: headers() }).then(function (r) { return r.json().then(function (b) { return { status: r.status, body: b }; }); });
  }
  function refreshRole() {
    whoami().then(function (w) {
      var who = $('#who');
      var b = w.body || {};
      if (who) who.textContent = w.status === 401 ? 'token not accepted' : (b.role === 'anonymous' ? 'read-only' : b.name + ' (' + b.role + ')');
      var panel = $('.actions');
      if (panel) {
        var allowed = b.actions === 'token' && b.role === 'operator';
        panel.setAttribute('data-allowed', allowed ? 'yes' : 'no');
        var why = $('#actions-why');
        if (why) why.textContent = b.actions === 'off' ? 'Actions are off: this dashboard was started without --api-token-file.' : allowed ? '' : 'Actions need an operator token: set one with "Token".';
      }
    });
  }

  var dlg = $('#token-dialog');
  var open = $('#token-open');
  if (open && dlg) {
    open.addEventListener('click', function () { dlg.showModal(); });
    $('#token-form').addEventListener('submit', function (e) {
      e.preventDefault();
      var v = $('#token-input').value.trim();
      if (v) sessionStorage.setItem(TOKEN, v); else sessionStorage.removeItem(TOKEN);
      dlg.close();
      refreshRole();
    });
  }

  document.querySelectorAll('form[data-action]').forEach(function (f) {
    f.addEventListener('submit', function (e) {
      e.preventDefault();
      var panel = $('.actions');
      if (panel && panel.getAttribute('data-allowed') !== 'yes') { status(($('#actions-why') || {}).textContent || 'not allowed', false); return; }
      var body = {};
      new FormData(f).forEach(function (v, k) { if (v !== '') body[k] = v; });
      f.querySelectorAll('input[type=checkbox]').forEach(function (c) { body[c.name] = c.checked; });
      fetch(f.getAttribute('data-action'), { method: 'POST', headers: headers({ 'Content-Type': 'application/json' }), body: JSON.stringify(body) })
        .then(function (r) { return r.json().then(function (b) { return { ok: r.ok, body: b }; }); })
        .then(function (r) {
          if (r.ok) { status(r.body.message, true); setTimeout(function () { location.reload(); }, 1200); }
          else status(r.body.error ? r.body.error.message : 'refused', false);
        })
        .catch(function (err) { status(String(err), false); });
    });
  });

  // A new search, filter or sort starts at the first page.
  document.querySelectorAll('.toolbar input:not([type=hidden]), .toolbar select').forEach(function (el) {
    ['input', 'change'].forEach(function (ev) {
      el.addEventListener(ev, function () { var c = $('.toolbar input[name=cursor]'); if (c) c.value = ''; });
    });
  });

  var data = $('#lateness-data');
  var plot = $('#lateness');
  if (data && plot && window.uPlot) {
    var d = JSON.parse(data.textContent);
    if (d.x.length > 0) {
      new window.uPlot({
        width: plot.clientWidth || 900, height: 220,
        scales: { x: { time: true } },
        series: [{}, { label: 'lateness (ms)', stroke: '#1570ef', points: { show: true, size: 4 }, width: 0 },
                 { label: 'p50', stroke: '#2e9d57', dash: [4, 4], points: { show: false } },
                 { label: 'p99', stroke: '#d92d20', dash: [4, 4], points: { show: false } }],
        axes: [{}, { label: 'start − fire (ms)' }],
      }, [d.x, d.y, d.x.map(function () { return d.p50; }), d.x.map(function () { return d.p99; })], plot);
    }
  }
  refreshRole();
})();
`;
