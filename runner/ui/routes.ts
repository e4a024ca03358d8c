/**
 * The dashboard's routes on the API's app: pages at `/`, `/schedules/:name`, `/occurrences/:key`, `/flock`,
 * `/audit`, the live table fragment at `/ui/schedules-table`, and the assets at `/assets/*`. Pages read through the
 * same functions as the API; reading needs a token only when the API's does (then the page is the API's 401).
 */
import type { Hono } from 'hono';
import type { ApiDeps } from '../api/server.js';
import { readAudit } from '../history/audit.js';
import { readLogs } from '../history/logs.js';
import { readOccurrence, readOccurrences } from '../history/read.js';
import { readFlock } from '../api/flock.js';
import { counts24h, listSchedules, summarize } from '../api/schedule-list.js';
import { parseOccurrenceKey } from '../schedule/occurrence.js';
import { upcomingOf } from '../api/schedule-index.js';
import { asset } from './assets.js';
import { auditPage, errorPage, flockPage, occurrencePage, schedulePage, schedulesPage, schedulesTable, type TableQuery } from './pages.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyHono = Hono<any>;

function tableQuery(q: Record<string, string>): TableQuery {
  const sort = (['name', 'attention', 'next', 'last'] as const).find((s) => s === q.sort) ?? 'attention';
  return { q: q.q ?? '', sort, overdue: q.overdue === 'true', failing: q.failing === 'true', suspended: q.suspended === 'true', cursor: q.cursor || undefined };
}

/** Adds the dashboard to `app`. */
export function mountUi(app: AnyHono, d: ApiDeps): void {
  app.get('/assets/:name', (c) => {
    const a = asset(c.req.param('name'));
    if (!a) return c.text('not found', 404);
    c.header('Content-Type', a.type);
    c.header('Cache-Control', 'public, max-age=3600');
    return c.body(a.body);
  });

  // Pages cannot send a bearer token: where reading needs one (reads: token), only the API answers.
  app.use('*', async (c, next) => {
    if (d.rules.readsNeedToken && !c.req.path.startsWith('/api/') && !c.req.path.startsWith('/assets/')) {
      return c.html(errorPage('Token needed', 'Reading needs a token here (reads: token in the token file): use the API with Authorization: Bearer <token>.'), 401);
    }
    await next();
  });

  const table = async (t: TableQuery) => {
    await d.index.ready();
    const page = await listSchedules(d.redis, d.keys, d.index, {
      limit: 100,
      sort: t.sort,
      cursor: t.cursor,
      q: t.q || undefined,
      overdue: t.overdue ? 'true' : undefined,
      suspended: t.suspended ? 'true' : undefined,
      state: t.failing ? 'failed' : undefined,
    });
    return schedulesTable(t, page, d.index.nowMs());
  };
  app.get('/', async (c) => {
    const t = tableQuery(c.req.query());
    return c.html(schedulesPage(t, await table(t)));
  });
  app.get('/ui/schedules-table', async (c) => c.html(await table(tableQuery(c.req.query()))));

  app.get('/schedules/:name', async (c) => {
    await d.index.ready();
    const row = d.index.get(c.req.param('name'));
    if (!row) return c.html(errorPage('Not found', `No published schedule named "${c.req.param('name')}".`), 404);
    const now = d.index.nowMs();
    const asked = c.req.query('range');
    const range = (['1h', '24h', '7d'] as const).find((r) => r === (asked ?? '24h'));
    if (!range) {
      const msg = `range "${asked}" is not one of 1h, 24h or 7d (the timelines this page shows), e.g. /schedules/${row.name}?range=7d; for another span use GET /api/v1/schedules/${row.name}/occurrences?from=…&to=…`;
      return c.html(errorPage('Bad range', msg), 400);
    }
    const toMs = Math.ceil(now) + row.def.jitterMs + (range === '1h' ? 5_000 : 60_000);
    const fromMs = toMs - { '1h': 3_600_000, '24h': 86_400_000, '7d': 7 * 86_400_000 }[range];
    const [[counts], occ, running] = await Promise.all([
      counts24h(d.redis, d.keys, [row.name], now),
      readOccurrences(d.redis, d.keys, row.name, fromMs, toMs, 2000),
      d.redis.zrange(d.keys.active(row.name), 0, -1),
    ]);
    const upcoming = upcomingOf(row, now, 5);
    const s = { ...summarize(d.index.current(row), counts!), upcoming, running, startingDeadlineMs: row.def.startingDeadlineMs, timeoutMs: row.def.timeoutMs ?? null };
    return c.html(schedulePage(s, { ...occ, fromMs, toMs }, range, now));
  });

  app.get('/occurrences/:key', async (c) => {
    const key = c.req.param('key');
    if (!parseOccurrenceKey(key)) return c.html(errorPage('Not an occurrence', `"${key}" is not an occurrence key.`), 400);
    const v = await readOccurrence(d.redis, d.keys, key);
    if (!v) return c.html(errorPage('Not found', `No record or history of ${key} (kept for --retention and --history).`), 404);
    await d.index.ready();
    const logs = await readLogs(d.redis, d.keys, key, Math.max(v.attempts.length, 1));
    return c.html(occurrencePage({ ...v, logs, jitterMs: d.index.get(v.schedule)?.def.jitterMs ?? null }, d.index.nowMs()));
  });

  app.get('/flock', async (c) => {
    await d.index.ready();
    return c.html(flockPage(await readFlock(d.redis, d.keys, d.index)));
  });

  app.get('/audit', async (c) => {
    const page = await readAudit(d.redis, d.keys, { limit: 100, before: c.req.query('cursor') || undefined });
    return c.html(auditPage(page.items, page.next));
  });
}
