/**
 * Which definition of a schedule the flock runs, when replicas briefly hold different versions of the schedule
 * files (a rollout, a ConfigMap update reaching pods at different times, a reload on one replica first).
 *
 * Rule: **the definition loaded last wins.** Each replica publishes, for every schedule it runs, the content
 * hash of its definition and the Redis time it loaded it; a publication replaces an entry only if it is at
 * least as recent. A replica whose definition of a schedule is not the published one neither plans nor runs
 * that schedule's occurrences (it gives deliveries back for a replica that has the winner); when it reloads the
 * same file, it publishes again and takes part. Equal content means equal hashes: replicas that agree never
 * exclude each other. An old replica that is restarted later would publish its older file as the newest: keep
 * rollouts moving forward (Kubernetes does), and do not run different files against one namespace for long.
 */
import type { RedisClient } from '../redis/connect.js';
import type { Keyspace } from '../redis/keys.js';
import type { EngineSchedule } from './schedule.js';

/** What replicas publish about each schedule they run (HASH `{ns}:defs`). */
export interface PublishedDefinition {
  cron: string;
  timeZone: string;
  jitterMs: number;
  startingDeadlineMs: number | null;
  concurrencyPolicy: EngineSchedule['concurrencyPolicy'];
  onResume: 'skip' | 'latest';
  definitionHash: string;
  replica: string;
  /** Redis time (ms) the publishing replica loaded this definition. */
  loadedAtMs: number;
}

/**
 * KEYS[1] definitions (HASH), KEYS[2] version (counter); ARGV[1] replica, then pairs of name and JSON (without
 * loadedAtMs: the script stamps it with the Redis time), then '|' and the names this replica no longer runs.
 * Returns: 1 when something changed (and the version was bumped), else 0.
 */
const PUBLISH_LUA = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local changed = false
local i = 2
while ARGV[i] ~= '|' do
  local name, mine = ARGV[i], cjson.decode(ARGV[i + 1])
  local raw = redis.call('HGET', KEYS[1], name)
  local cur = raw and cjson.decode(raw)
  if cur and cur.definitionHash == mine.definitionHash then
    -- Same content: nothing to decide.
  else
    mine.loadedAtMs = now
    redis.call('HSET', KEYS[1], name, cjson.encode(mine))
    changed = true
  end
  i = i + 2
end
for j = i + 1, #ARGV do
  local raw = redis.call('HGET', KEYS[1], ARGV[j])
  if raw and cjson.decode(raw).replica == ARGV[1] then
    redis.call('HDEL', KEYS[1], ARGV[j])
    changed = true
  end
end
if changed then redis.call('INCR', KEYS[2]) return 1 end
return 0
`;

/** Schedules per publish script call. */
const PUBLISH_CHUNK = 1000;

/** The published definitions as this replica last read them, and the rule above. */
export class Definitions {
  private winners = new Map<string, string>();
  private version: string | null = null;

  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keyspace,
    private readonly replica: string,
  ) {}

  /**
   * Publishes this replica's definitions (they win: they are the latest loaded) and withdraws the names it no
   * longer runs (only where its own publication is the current one). Then refreshes the view.
   */
  async publish(schedules: readonly EngineSchedule[], removed: readonly string[] = []): Promise<void> {
    // Chunked: a call's arguments are spread into one function call (the stack limits it) and one script run
    // (which blocks Redis while it runs). Each chunk applies the same rule on its own, so chunks compose.
    let args: string[] = [this.replica];
    const flush = async (removedNames: readonly string[]): Promise<void> => {
      await this.redis.eval(PUBLISH_LUA, 2, this.keys.definitions, this.versionKey, ...args, '|', ...removedNames);
      args = [this.replica];
    };
    for (const s of schedules) {
      const def: Omit<PublishedDefinition, 'loadedAtMs'> = {
        cron: s.due.expression,
        timeZone: s.due.timeZone,
        jitterMs: s.jitterMs,
        startingDeadlineMs: s.startingDeadlineMs,
        concurrencyPolicy: s.concurrencyPolicy,
        onResume: s.onResume ?? 'latest',
        definitionHash: s.definitionHash ?? '',
        replica: this.replica,
      };
      args.push(s.name, JSON.stringify(def));
      if (args.length >= 2 * PUBLISH_CHUNK) await flush([]);
    }
    for (let i = 0; i < removed.length; i += PUBLISH_CHUNK) await flush(removed.slice(i, i + PUBLISH_CHUNK));
    if (args.length > 1 || removed.length === 0) await flush([]);
    await this.refresh(true);
  }

  private get versionKey(): string {
    return `${this.keys.definitions}:version`;
  }

  /** Re-reads the published definitions when their version changed (one GET otherwise). */
  async refresh(force = false): Promise<void> {
    const v = await this.redis.get(this.versionKey);
    if (!force && v === this.version) return;
    const all = await this.redis.hgetall(this.keys.definitions);
    this.winners = new Map(Object.entries(all).map(([k, raw]) => [k, (JSON.parse(raw) as PublishedDefinition).definitionHash]));
    this.version = v;
  }

  /** True when some replica publishes a definition of `name` (it may run it even if this one does not). */
  has(name: string): boolean {
    return this.winners.has(name);
  }

  /** True when this replica's definition of `s` is the published one (or nothing is published for it). */
  isCurrent(s: EngineSchedule): boolean {
    const w = this.winners.get(s.name);
    return w === undefined || s.definitionHash === undefined || w === s.definitionHash;
  }
}
