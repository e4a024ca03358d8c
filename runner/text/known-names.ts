/**
 * What a command or an answer says about a schedule name nobody knows: the names probably meant and the known
 * ones — without printing thousands of names for a flock that has thousands of schedules.
 */
import { editDistance } from './edit-distance.js';

/** Most known names listed in full; past this only their count is said (a flock may have thousands). */
export const MAX_NAMES_SHOWN = 10;
/** Most close matches offered ("did you mean"). */
export const MAX_CLOSE = 5;

/**
 * The known names within edit distance 2 of `name` (case-insensitive, as the schedule files' keys use), closest
 * first then in name order, at most {@link MAX_CLOSE}. Cost: one capped distance per known name.
 */
export function closeNames(name: string, known: readonly string[]): string[] {
  const lower = name.toLowerCase();
  return known
    .map((k) => ({ k, d: editDistance(k.toLowerCase(), lower, 3) }))
    .filter((x) => x.d <= 2)
    .sort((a, b) => a.d - b.d || (a.k < b.k ? -1 : 1))
    .slice(0, MAX_CLOSE)
    .map((x) => x.k);
}

/**
 * The tail of an unknown-schedule message: `did you mean "a" or "b"? ` (when some are close), then the known
 * schedules — all of them (sorted as given) up to {@link MAX_NAMES_SHOWN}, else their count and where to see them.
 * E.g. `did you mean "slow"? known schedules: nightly, slow`, `2,000 known schedules (cronflock status lists
 * them; cronflock list the stored ones)`. Used by `runs --schedule`, `trigger`/`suspend`/`resume`/`backfill`
 * (engine/control.ts) and the API's answers of those.
 */
export function knownNamesText(name: string, known: readonly string[]): string {
  const near = closeNames(name, known);
  const hint = near.length > 0 ? `did you mean ${near.map((n) => `"${n}"`).join(' or ')}? ` : '';
  const names =
    known.length <= MAX_NAMES_SHOWN
      ? `known schedules: ${known.join(', ')}`
      : `${known.length.toLocaleString('en-US')} known schedules (cronflock status lists them; cronflock list the stored ones)`;
  return `${hint}${names}`;
}
