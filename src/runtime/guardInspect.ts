import type { InspectionEvent, Observer } from "xstate";
import { ConfigError } from "../errors.ts";
import { preview } from "../graph/label.ts";

/** What `createActor` takes as `inspect`: an observer, or its `next` alone. */
export type InspectOption = Observer<InspectionEvent> | ((event: InspectionEvent) => void);

/**
 * A user's inspection observer that cannot break the actors it watches. XState calls it in
 * the middle of an actor's step, so one that threw stopped that step half done: a coordinator
 * never finished its run, and the run never settled. What it throws is reported as XState
 * reports a throwing listener, thrown again on a later tick (an uncaught exception, unless the
 * process handles those), and the actors carry on.
 *
 * @example
 * ```ts
 * createActor(coordinatorMachine, { input, inspect: guardInspect(options.inspect) });
 * ```
 */
export function guardInspect(inspect: InspectOption): (event: InspectionEvent) => void {
  return (event) => {
    try {
      if (typeof inspect === "function") inspect(event);
      else inspect.next?.(event);
    } catch (error) {
      setTimeout(() => {
        throw error;
      });
    }
  };
}

/**
 * Refuses, with a `ConfigError` naming `where`, an `inspect` that is neither a function nor an
 * observer object: it was ignored without a word, and nothing was inspected.
 *
 * @example
 * ```ts
 * checkInspectOption("createEngine", 5);
 * // ConfigError: createEngine: inspect must be an XState inspection observer, a function of each inspection event or { next }, not 5
 * ```
 */
export function checkInspectOption(where: string, inspect: unknown): void {
  if (
    inspect !== undefined &&
    typeof inspect !== "function" &&
    (typeof inspect !== "object" || inspect === null)
  ) {
    throw new ConfigError(
      `${where}: inspect must be an XState inspection observer, a function of each inspection event or { next }, not ${preview(inspect)}`,
    );
  }
}
