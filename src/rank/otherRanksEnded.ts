import { rankList } from "./rankList.ts";

/** Another rank of a group one rank failed: how it ended, and whether the teardown stopped it. */
export interface OtherRank {
  rank: number;
  /** How it exited, once its launcher learned it. */
  exit: { code: number | null; signal: string | null } | undefined;
  /** The teardown signalled it while it ran (or cannot tell: the teardown was not verified). */
  stopped: boolean;
}

/**
 * The sentence of a group's RANK_FAILED message about its other ranks: the ones baton
 * stopped, told apart from ones that exited on their own (failing at nearly the same moment
 * as the first, or done before it), with how they exited. Two ranks failing together made
 * "The other rank was stopped." of one that was never signalled.
 *
 * @example
 * ```ts
 * otherRanksEnded([{ rank: 1, exit: { code: 127, signal: null }, stopped: false }]);
 * // " Rank 1 exited on its own too (code 127); no other rank was left to stop."
 * ```
 */
export function otherRanksEnded(others: readonly OtherRank[]): string {
  const own = others.filter((other) => !other.stopped);
  const stopped = others.filter((other) => !own.includes(other)).map((other) => other.rank);
  if (own.length === 0) {
    return stopped.length === 1 ? " The other rank was stopped." : " The other ranks were stopped.";
  }
  const hows = [
    ...new Set(
      own.flatMap(({ exit }) =>
        exit === undefined
          ? []
          : [exit.signal !== null ? `killed by ${exit.signal}` : `code ${exit.code}`],
      ),
    ),
  ].join(", ");
  const ranks = rankList(own.map((other) => other.rank));
  const rest =
    stopped.length === 0
      ? "no other rank was left to stop"
      : `${rankList(stopped)} ${stopped.length === 1 ? "was" : "were"} stopped`;
  return ` ${ranks[0]?.toUpperCase()}${ranks.slice(1)} exited on ${own.length === 1 ? "its" : "their"} own too${hows === "" ? "" : ` (${hows})`}; ${rest}.`;
}
