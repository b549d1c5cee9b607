import { rankList } from "../rank/rankList.ts";

/** A rank whose marker names another process than the one the launcher started for it. */
export interface MarkerOfOtherPid {
  rank: number;
  /** The process the launcher started (on the rank's host). */
  started: number;
  /** The pid in the rank's marker. */
  inMarker: number;
}

/**
 * What a failed barrier's message adds when ranks did write markers, but from another
 * process than the one baton started: the launcher counts a marker only with that pid, so a
 * wrapper that runs the program as a child (a shell script, `sh -c 'python3 x.py; …'`,
 * `conda run`) waits the whole load timeout and is told it wrote no ready marker. Empty when
 * there are none.
 *
 * @example
 * ```ts
 * markersOfOtherPids([{ rank: 0, started: 4242, inMarker: 4243 }]);
 * // " Rank 0 did write a marker, but it names pid 4243, not 4242, the process baton started for it: …"
 * ```
 */
export function markersOfOtherPids(markers: readonly MarkerOfOtherPid[]): string {
  const first = markers[0];
  if (first === undefined) return "";
  const ranks = rankList(markers.map(({ rank }) => rank));
  const which =
    markers.length === 1
      ? `Rank ${first.rank} did write a marker, but it names pid ${first.inMarker}, not ${first.started}, the process baton started for it`
      : `${ranks[0]?.toUpperCase()}${ranks.slice(1)} did write markers, but each names another pid than the process baton started for it (rank ${first.rank}'s names pid ${first.inMarker}, not ${first.started})`;
  return ` ${which}: a marker counts only when its pid is that process's own, so a wrapper (a shell script, sh -c, conda run) must exec the program (\`exec python3 train.py\`), not run it as a child.`;
}
