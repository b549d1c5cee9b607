import type { SimulateOptions } from "./simulate.ts";

/** The largest world of a drawn rank group when `world` (`--world`) is left out. */
export const DRAWN_WORLD = 4;

/**
 * When a simulation draws rank groups beside its graph, in words, for the errors that refuse
 * a contradiction of it.
 */
export const RANK_GROUPS_RULE = `rank groups are drawn beside the drawn graph (up to ${DRAWN_WORLD} ranks) and not beside a graph of your own; world: N draws them beside either, of up to N ranks, and ranks: false leaves them out`;

/**
 * Whether the simulation `options` ask for launches of rank groups beside its graph:
 * `ranks` when given; else when `world` sizes drawn ones, `launches` gives them, or the graph
 * is drawn too. A graph of your own runs alone by default: the groups' trace lines are not of
 * your graph, and a seed of a small graph took about twice as long beside them.
 *
 * @example
 * ```ts
 * drawsRankGroups({ seed: 1 }); // true
 * drawsRankGroups({ seed: 1, graph, handlers }); // false
 * drawsRankGroups({ seed: 1, graph, handlers, world: 8 }); // true
 * ```
 */
export function drawsRankGroups(
  options: Pick<SimulateOptions, "graph" | "ranks" | "world" | "launches">,
): boolean {
  return (
    options.ranks ??
    (options.world !== undefined || options.launches !== undefined || options.graph === undefined)
  );
}
