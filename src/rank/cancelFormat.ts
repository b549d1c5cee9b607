import { argumentError } from "../argumentError.ts";
import type { StateFileFormat } from "./stateFile.ts";

/** What a cancel covers: every request in flight, or the requests named in `ids`. */
export type CancelScope = "all" | "requests";

/**
 * `S/<dep>/cancel.json`, written by the launcher. Each write carries a strictly larger
 * `epoch`; a rank applies each epoch once, at a step boundary, and acks it.
 */
export interface Cancel {
  deployment: string;
  epoch: number;
  scope: CancelScope;
  /** The request ids to cancel (`scope: "requests"`); empty for `"all"`. */
  ids: string[];
  reason: string;
}

/**
 * The cancel file's format, `baton.cancel/1`. A `requests` cancel names at least one id.
 *
 * @example
 * ```ts
 * const cancel = parseStateFile(CANCEL_FORMAT, text, paths.cancel);
 * ```
 */
export const CANCEL_FORMAT: StateFileFormat<Cancel> = {
  id: "baton.cancel/1",
  decode(fields) {
    const cancel = {
      deployment: fields.deployment(),
      epoch: fields.integer("epoch", 1),
      scope: fields.oneOf("scope", ["all", "requests"] as const),
      ids: fields.strings("ids"),
      reason: fields.string("reason"),
    };
    if (cancel.scope === "requests" && cancel.ids.length === 0) {
      throw fields.invalid('a "requests" cancel must name at least one id in "ids"');
    }
    return cancel;
  },
};

/**
 * Whether `cancel` covers the request `id`. A cancel that is none (no `scope` of `"all"` or
 * `"requests"`, `ids` that are no list) and an id that is no string are a `ConfigError`: the
 * one read as no cancel at all, `ids` as text matched any part of it, a number as an id
 * matched none.
 *
 * @example
 * ```ts
 * for (const id of inFlight) if (cancelCovers(cancel, id)) abortRequest(id);
 * ```
 */
export function cancelCovers(cancel: Pick<Cancel, "scope" | "ids">, id: string): boolean {
  if (typeof cancel !== "object" || cancel === null || !Array.isArray(cancel.ids)) {
    throw argumentError(
      "cancelCovers",
      "cancel",
      "a cancel as rank.step hands it, { scope, ids } with ids a list",
      cancel,
    );
  }
  if (cancel.scope !== "all" && cancel.scope !== "requests") {
    throw argumentError("cancelCovers", "cancel.scope", '"all" or "requests"', cancel.scope);
  }
  if (typeof id !== "string") {
    throw argumentError("cancelCovers", "id", "a request's id, a string", id);
  }
  return cancel.scope === "all" || cancel.ids.includes(id);
}
