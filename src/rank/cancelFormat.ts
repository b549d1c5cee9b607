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
 * Whether `cancel` covers the request `id`.
 *
 * @example
 * ```ts
 * for (const id of inFlight) if (cancelCovers(cancel, id)) abortRequest(id);
 * ```
 */
export function cancelCovers(cancel: Pick<Cancel, "scope" | "ids">, id: string): boolean {
  return cancel.scope === "all" || cancel.ids.includes(id);
}
