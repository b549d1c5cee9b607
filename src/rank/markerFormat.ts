import type { StateFileFormat } from "./stateFile.ts";

/** A rank's phases, in order: it loads, is ready to serve, drains, exits. */
export const MARKER_PHASES = ["loading", "ready", "draining", "exiting"] as const;
/** The phase a rank's marker says it is in: `loading`, `ready`, `draining` or `exiting`. */
export type MarkerPhase = (typeof MARKER_PHASES)[number];

/**
 * `S/<dep>/rank-<R>.marker.json`, written by the rank itself: its phase (readiness), its
 * heartbeat, its own count of requests in flight and the last cancel epoch it is up to date
 * with.
 */
export interface Marker {
  deployment: string;
  rank: number;
  pid: number;
  phase: MarkerPhase;
  /** Milliseconds since the epoch. */
  startedAt: number;
  /** When the rank last wrote the marker (every write stamps it). */
  heartbeatAt: number;
  /** Requests in flight, as the rank counts them. */
  active: number;
  /** The last cancel epoch the rank applied, or the watermark it started with; 0 if none. */
  epoch: number;
}

/**
 * The marker's format, `baton.marker/1`.
 *
 * @example
 * ```ts
 * const marker = await readStateFile(files, MARKER_FORMAT, paths.marker(0));
 * const ready = marker?.phase === "ready";
 * ```
 */
export const MARKER_FORMAT: StateFileFormat<Marker> = {
  id: "baton.marker/1",
  decode: (fields) => ({
    deployment: fields.deployment(),
    rank: fields.integer("rank", 0),
    pid: fields.integer("pid", 1),
    phase: fields.oneOf("phase", MARKER_PHASES),
    startedAt: fields.integer("startedAt", 0),
    heartbeatAt: fields.integer("heartbeatAt", 0),
    active: fields.integer("active", 0),
    epoch: fields.integer("epoch", 0),
  }),
};

/** DESIGN §8: a marker whose heartbeat is older than this is stale. */
export const MARKER_STALE_MS = 45_000;
/** DESIGN §8: how often a rank rewrites its marker when nothing else changes. */
export const MARKER_HEARTBEAT_MS = 10_000;
