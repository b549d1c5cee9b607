import type { StateFileFormat } from "./stateFile.ts";

/** `S/<dep>/rank-<R>.ack.json`, written by a rank after it applied a cancel epoch. */
export interface Ack {
  deployment: string;
  rank: number;
  /** The epoch applied. */
  epoch: number;
  /** Requests still in flight right after applying it. */
  active: number;
  /** Milliseconds since the epoch. */
  at: number;
}

/**
 * The ack's format, `baton.ack/1`.
 *
 * @example
 * ```ts
 * const ack = await readStateFile(files, ACK_FORMAT, paths.ack(1));
 * const applied = (ack?.epoch ?? 0) >= epoch;
 * ```
 */
export const ACK_FORMAT: StateFileFormat<Ack> = {
  id: "baton.ack/1",
  decode: (fields) => ({
    deployment: fields.deployment(),
    rank: fields.integer("rank", 0),
    epoch: fields.integer("epoch", 1),
    active: fields.integer("active", 0),
    at: fields.integer("at", 0),
  }),
};
