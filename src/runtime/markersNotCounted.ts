import { rankList } from "../rank/rankList.ts";

/**
 * A rank whose marker the launcher read but did not count: it names another process than
 * the one the launcher started for it (`started`, `inMarker`, pids on the rank's host), or
 * it is not a marker of this rank (`malformed`: what is wrong with it, file and field).
 */
export type MarkerNotCounted =
  | { rank: number; started: number; inMarker: number }
  | { rank: number; malformed: string };

/**
 * What a failed barrier's message adds when ranks did write markers that the launcher did not
 * count, which it otherwise tells only as "did not write a ready marker", after the whole load
 * timeout: a marker from another process than the one baton started (a wrapper that runs the
 * program as a child: a shell script, `sh -c 'python3 x.py; …'`, `conda run`), or one that is
 * not a valid marker of the rank (a field missing or of the wrong type, another deployment's
 * id). Empty when there are none. Sorted by rank, one sentence each for the two kinds.
 *
 * @example
 * ```ts
 * markersNotCounted([{ rank: 0, started: 4242, inMarker: 4243 }]);
 * // " Rank 0 did write a marker, but it names pid 4243, not 4242, the process baton started for it: …"
 * ```
 */
export function markersNotCounted(markers: readonly MarkerNotCounted[]): string {
  const sorted = [...markers].sort((a, b) => a.rank - b.rank);
  const otherPids = sorted.filter((marker) => "inMarker" in marker);
  const malformed = sorted.filter((marker) => "malformed" in marker);
  return `${otherPidsSentence(otherPids)}${malformedSentence(malformed)}`;
}

function otherPidsSentence(
  markers: readonly { rank: number; started: number; inMarker: number }[],
): string {
  const first = markers[0];
  if (first === undefined) return "";
  const ranks = rankList(markers.map(({ rank }) => rank));
  const which =
    markers.length === 1
      ? `Rank ${first.rank} did write a marker, but it names pid ${first.inMarker}, not ${first.started}, the process baton started for it`
      : `${ranks[0]?.toUpperCase()}${ranks.slice(1)} did write markers, but each names another pid than the process baton started for it (rank ${first.rank}'s names pid ${first.inMarker}, not ${first.started})`;
  return ` ${which}: a marker counts only when its pid is that process's own, so a wrapper (a shell script, sh -c, conda run) must exec the program (\`exec python3 train.py\`), not run it as a child.`;
}

function malformedSentence(markers: readonly { rank: number; malformed: string }[]): string {
  const first = markers[0];
  if (first === undefined) return "";
  const ranks = rankList(markers.map(({ rank }) => rank));
  const which =
    markers.length === 1
      ? `Rank ${first.rank}'s marker was not counted`
      : `The markers of ${ranks} were not counted (rank ${first.rank}'s shown)`;
  return ` ${which}: ${first.malformed}.`;
}
