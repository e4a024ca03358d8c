/**
 * Who owns a schedule name (issue 19, point 4: a name is owned by one source: a schedule file, a Schedule
 * resource, or the store).
 *
 * A file's or Schedule's name is owned while a replica publishes it (`{ns}:defs`, source not `store`) and that
 * replica is a live member, **or was last seen (its latest heartbeat, `{ns}:replicas:seen`) less than
 * {@link NAME_HOLD_MS} ago**. Liveness alone is not enough: membership lapses after 2 s, so a replica paused past
 * that (SIGSTOP, a long GC or VM pause, a network partition) or being restarted (a rollout, a crash loop) would
 * lose its names to the first `apply` in that gap, and then either run both definitions or lose the name at its
 * next start. The store refuses such a name (store-upsert.lua); `cronflock apply` checks its whole input against
 * the same rule (lua/owned-names.lua), and a replica that meets a stored schedule of a name a file or Schedule
 * owns refuses the stored one (runner/sources/sources.ts): the older owner keeps the name.
 *
 * A name leaves its file by being removed from the file (the replicas' reload withdraws it from `{ns}:defs`), or
 * when every replica that published it has been gone for NAME_HOLD_MS.
 */
import type { RedisClient } from '../redis/connect.js';
import type { Keyspace } from '../redis/keys.js';
import { Scripts } from '../redis/script-loader.js';

/**
 * How long after its publisher was last seen a file's or Schedule's name stays owned (ms): 10 minutes. Much
 * longer than a pause (GC and VM pauses, SIGSTOP, a partition: seconds to a minute) and than the gap of a
 * restart (a rolling update; Kubernetes' crash-loop back-off tops out at 5 minutes), short enough that a file
 * whose replicas are gone for good frees its names within the time an operator would wait anyway.
 */
export const NAME_HOLD_MS = 10 * 60_000;

/** Names checked per owned-names call. */
const CHUNK = 1_000;

/** The owner of a name, other than the store. */
export interface NameOwner {
  /** Where it is defined, as published: `file:line`, or `Schedule <namespace>/<name>`. */
  source: string;
  /** The replica that published it. */
  replica: string;
  /** How long ago that replica was last seen (ms); null: it is a live member now. */
  lastSeenAgoMs: number | null;
}

/** `file:line (run by replica r1)`, with how long ago it was seen when it is not live: for messages. */
export function ownerText(o: NameOwner): string {
  const seen = o.lastSeenAgoMs === null ? '' : `, last seen ${Math.round(o.lastSeenAgoMs / 1000)} s ago; its names stay owned for ${NAME_HOLD_MS / 60_000} min after it was last seen`;
  return `${o.source} (run by replica ${o.replica}${seen})`;
}

/**
 * Which of `names` a schedule file or Schedule resource owns now (see the module docs), on the Redis clock.
 * One script call per 1,000 names. Throws Redis errors.
 */
export async function ownedElsewhere(redis: RedisClient, keys: Keyspace, names: readonly string[], holdMs = NAME_HOLD_MS): Promise<Map<string, NameOwner>> {
  const out = new Map<string, NameOwner>();
  for (let i = 0; i < names.length; i += CHUNK) {
    const r = (await Scripts.on(redis).run('owned-names', [keys.definitions, keys.replicas, keys.replicasSeen], [holdMs, ...names.slice(i, i + CHUNK)])) as (string | number)[];
    for (let j = 0; j + 3 < r.length; j += 4) {
      const ago = Number(r[j + 3]);
      out.set(String(r[j]), { source: String(r[j + 1]), replica: String(r[j + 2]), lastSeenAgoMs: ago < 0 ? null : ago });
    }
  }
  return out;
}
