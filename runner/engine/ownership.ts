/**
 * Which replica offers a schedule's occurrences first: rendezvous (highest-random-weight) hashing of the
 * schedule name over the live replicas that run the same definitions.
 *
 * This divides planning work only. Occurrences are still recorded by the idempotent `plan` script and claimed by
 * the claim script, so two replicas that both think they own a schedule cost a duplicate offer, and a schedule
 * that nobody owns for a moment is covered by the take-over rule of the planner (a replica that gains a schedule
 * offers its recent due times again). Rendezvous hashing moves only the departed replica's schedules when one
 * leaves, and only the newcomer's share when one joins (Thaler & Ravishankar, 1998).
 *
 * Replicas that disagree on the definitions (a rollout in progress) do not divide: every replica then offers
 * every schedule it may plan, as if alone, until their digests agree again.
 */
import { createHash } from 'node:crypto';
import type { CompiledSchedule } from '../config/load.js';

/** One live member as the heartbeat script returns it. */
export interface Member {
  replica: string;
  digest: string;
}

/**
 * Digest of a set of definitions, kept up to date one schedule at a time: the XOR of every schedule's
 * sha256(`name=definitionHash`) (first 128 bits). A set has one digest whatever the order it was built in, and
 * adding or removing a schedule costs one hash, not a pass over all of them (stored schedules change one at a
 * time, up to thousands a second). Each name counts once (the planner holds one definition per name).
 */
export class DefinitionsDigest {
  private readonly words = new Uint32Array(4);

  /** Adds a schedule's definition, or removes it again (XOR is its own inverse). */
  toggle(name: string, definitionHash: string): void {
    const d = createHash('sha256').update(`${name}=${definitionHash}`).digest();
    for (let i = 0; i < 4; i++) this.words[i]! ^= d.readUInt32BE(4 * i);
  }

  /** The digest now: 32 hex digits. */
  value(): string {
    return [...this.words].map((w) => w.toString(16).padStart(8, '0')).join('');
  }

  /** A digest of `schedules`. */
  static of(schedules: readonly Pick<CompiledSchedule, 'name' | 'definitionHash'>[]): DefinitionsDigest {
    const d = new DefinitionsDigest();
    for (const s of schedules) d.toggle(s.name, s.definitionHash);
    return d;
  }
}

/**
 * Digest of a replica's definitions ({@link DefinitionsDigest}: 32 hex digits). Equal digests mean the replicas
 * would plan the same occurrences.
 */
export function definitionsDigest(schedules: readonly Pick<CompiledSchedule, 'name' | 'definitionHash'>[]): string {
  return DefinitionsDigest.of(schedules).value();
}

/** 32-bit FNV-1a of a string (UTF-16 code units): fast, stable across processes and platforms. */
function fnv1a(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  // Final avalanche (murmur3 fmix32), so that names differing in one character spread over all replicas.
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** One replica's view of the membership at one tick. Immutable. */
export class OwnershipView {
  /** Replica ids sharing the planning (sorted); empty when planning is not divided. */
  readonly sharing: readonly string[];

  /**
   * @param members the live members (from the heartbeat), this replica included.
   * @param self this replica's id.
   * @param digest this replica's {@link definitionsDigest}.
   */
  constructor(
    members: readonly Member[],
    readonly self: string,
    digest: string,
  ) {
    const agree = members.length > 0 && members.every((m) => m.digest === digest) && members.some((m) => m.replica === self);
    this.sharing = agree ? members.map((m) => m.replica).sort() : [];
  }

  /** True when planning is divided among several replicas. */
  get divided(): boolean {
    return this.sharing.length > 1;
  }

  /** True when this replica offers `schedule`'s occurrences (always, when planning is not divided). */
  owns(schedule: string): boolean {
    if (!this.divided) return true;
    let best = '';
    let bestWeight = -1;
    for (const r of this.sharing) {
      const w = fnv1a(`${schedule}\u0000${r}`);
      if (w > bestWeight || (w === bestWeight && r < best)) {
        best = r;
        bestWeight = w;
      }
    }
    return best === this.self;
  }

  /** True when both views divide among the same replicas (or neither divides). */
  sameAs(other: OwnershipView): boolean {
    return this.sharing.length === other.sharing.length && this.sharing.every((r, i) => r === other.sharing[i]);
  }
}

/**
 * The live replicas of the latest membership view (the planner's heartbeat), for whoever needs to know whether a
 * replica is alive: a published definition counts while its publisher is live (definitions.ts). Before the
 * first view, every replica counts as live.
 */
export class LiveReplicas {
  private names: ReadonlySet<string> | undefined;

  /** Whether `replica` was a live member at the latest view (true before the first view). */
  has(replica: string): boolean {
    return this.names?.has(replica) ?? true;
  }

  /** The live replicas of the latest view (empty before the first one). */
  members(): string[] {
    return [...(this.names ?? [])];
  }

  /**
   * Takes the members of a new view.
   * @returns whether the set of live replicas changed (true for the first view).
   */
  update(members: readonly string[]): boolean {
    const before = this.names;
    const changed = before === undefined || members.length !== before.size || members.some((m) => !before.has(m));
    this.names = new Set(members);
    return changed;
  }
}
