import { assign, cancel, emit, enqueueActions, setup } from "xstate";
import { MARKER_STALE_MS, type MarkerPhase } from "../rank/markerFormat.ts";

/** What the launcher read from a rank's marker. */
export interface RankMarkerSeen {
  pid: number;
  phase: MarkerPhase;
  /** The rank's own clock when it last rewrote the marker. */
  heartbeatAt: number;
  /** Requests in flight, per the rank itself. */
  active: number;
  /** The last cancel epoch the rank applied (0 if none). */
  epoch: number;
}

/** Events of one rank: what the runtime observed about its process and its marker. */
export type RankEvent =
  | { type: "SPAWNED"; pid: number; pgid: number }
  | { type: "SPAWN_FAILED"; reason: string }
  | { type: "MARKER"; marker: RankMarkerSeen }
  | { type: "EXITED"; code: number | null; signal: string | null }
  | { type: "STOP" }
  /** Raised by the machine itself: no fresh heartbeat for `markerStaleMs`. */
  | { type: "MARKER_STALE" };

/** What a rank reports to its group. */
export type RankEmitted =
  | { type: "rank.ready"; rank: number }
  | { type: "rank.exited"; rank: number; code: number | null; signal: string | null }
  | { type: "rank.lost"; rank: number; reason: string };

export interface RankInput {
  rank: number;
  /** No fresh heartbeat in the marker for this long means the rank is lost (default 45 s). */
  markerStaleMs?: number;
}

export interface RankContext {
  rank: number;
  markerStaleMs: number;
  pid: number | undefined;
  pgid: number | undefined;
  phase: MarkerPhase | undefined;
  /** Newest heartbeat seen; a marker re-read with the same heartbeat is not news. */
  heartbeatAt: number | undefined;
  active: number;
  epoch: number;
  code: number | null;
  signal: string | null;
  reason: string | undefined;
}

/** What `loading` and `ready` both hear: the process's exit, a stop, a stale heartbeat. */
const whileAlive = {
  EXITED: [
    { guard: "exitedCleanly", target: "exited", actions: ["recordExit", "emitExited"] },
    { target: "failed", actions: ["recordExit", "emitExited"] },
  ],
  STOP: "stopping",
  MARKER_STALE: { target: "lost", actions: ["recordStale", "emitLost"] },
} as const;

/**
 * One process of a rank group (DESIGN §4):
 * `spawning → loading → ready → (exited | failed | lost)`, and `stopping` from any live
 * state. Readiness comes from the rank-ready marker the process writes (a marker of another
 * pid, left by an earlier launch, is ignored); liveness from the marker's heartbeat and from
 * the process's exit, which the runtime reports when it reaps the child (a zombie counts as
 * dead). A heartbeat that stops advancing for `markerStaleMs` (delayed event `markerStale`)
 * makes the rank `lost`: it may still be in the process table, hung, and its group is torn
 * down. The machine does no I/O; the group hears `rank.ready`, `rank.exited`, `rank.lost`.
 *
 * @example
 * ```ts
 * const group = createActor(groupMachine, { input: { deployment: "dep-1", worldSize: 1 }, clock }).start();
 * const rank = createActor(rankMachine, { input: { rank: 0 }, clock });
 * rank.on("rank.ready", () => group.send({ type: "RANK_READY", rank: 0 }));
 * rank.start();
 * rank.send({ type: "SPAWNED", pid: 4242, pgid: 4242 });
 * const heartbeatAt = clock.now();
 * rank.send({ type: "MARKER", marker: { pid: 4242, phase: "ready", heartbeatAt, active: 0, epoch: 0 } });
 * rank.stop(); // when done: a started actor's timers (the marker's staleness) keep the process alive
 * group.stop();
 * ```
 */
export const rankMachine = setup({
  types: {
    context: {} as RankContext,
    events: {} as RankEvent,
    input: {} as RankInput,
    emitted: {} as RankEmitted,
  },
  delays: {
    markerStale: ({ context }) => context.markerStaleMs,
  },
  guards: {
    ownMarker: ({ context, event }) => event.type === "MARKER" && event.marker.pid === context.pid,
    ownReadyMarker: ({ context, event }) =>
      event.type === "MARKER" && event.marker.pid === context.pid && event.marker.phase === "ready",
    exitedCleanly: ({ event }) =>
      event.type === "EXITED" && event.code === 0 && event.signal === null,
  },
  actions: {
    recordSpawn: assign(({ event }) =>
      event.type === "SPAWNED" ? { pid: event.pid, pgid: event.pgid } : {},
    ),
    /**
     * Takes the marker's fields; a heartbeat newer than the last one seen re-arms the stale
     * timer (a marker re-read with the same heartbeat is not a sign of life).
     */
    takeMarker: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== "MARKER") return;
      const { phase, heartbeatAt, active, epoch } = event.marker;
      const fresh = context.heartbeatAt === undefined || heartbeatAt > context.heartbeatAt;
      enqueue.assign({
        phase,
        active,
        epoch,
        heartbeatAt: fresh ? heartbeatAt : context.heartbeatAt,
      });
      if (!fresh) return;
      enqueue.cancel("markerStale");
      enqueue.raise({ type: "MARKER_STALE" }, { id: "markerStale", delay: "markerStale" });
    }),
    recordStale: assign(({ context }) => ({
      reason: `its marker's heartbeat has not advanced for ${context.markerStaleMs} ms`,
    })),
    emitLost: emit(({ context }) => ({
      type: "rank.lost" as const,
      rank: context.rank,
      reason: context.reason ?? "",
    })),
    recordExit: assign(({ event }) =>
      event.type === "EXITED" ? { code: event.code, signal: event.signal } : {},
    ),
    emitExited: emit(({ context }) => ({
      type: "rank.exited" as const,
      rank: context.rank,
      code: context.code,
      signal: context.signal,
    })),
  },
}).createMachine({
  id: "rank",
  context: ({ input }) => ({
    rank: input.rank,
    markerStaleMs: input.markerStaleMs ?? MARKER_STALE_MS,
    pid: undefined,
    pgid: undefined,
    phase: undefined,
    heartbeatAt: undefined,
    active: 0,
    epoch: 0,
    code: null,
    signal: null,
    reason: undefined,
  }),
  initial: "spawning",
  states: {
    spawning: {
      on: {
        SPAWNED: { target: "loading", actions: "recordSpawn" },
        SPAWN_FAILED: {
          target: "failed",
          actions: assign(({ event }) => ({ reason: event.reason })),
        },
        STOP: "stopping",
      },
    },
    // The stale timer runs on from `loading` into `ready`: a ready marker whose heartbeat is
    // not newer than the last one seen is no sign of life. `stopping` cancels it; the final
    // states end the actor, and its timers with it.
    loading: {
      on: {
        ...whileAlive,
        MARKER: [
          { guard: "ownReadyMarker", target: "ready", actions: "takeMarker" },
          { guard: "ownMarker", actions: "takeMarker" },
        ],
      },
    },
    ready: {
      entry: emit(({ context }) => ({ type: "rank.ready" as const, rank: context.rank })),
      on: {
        ...whileAlive,
        MARKER: { guard: "ownMarker", actions: "takeMarker" },
      },
    },
    stopping: {
      entry: cancel("markerStale"),
      on: {
        EXITED: { target: "exited", actions: ["recordExit", "emitExited"] },
      },
    },
    exited: { type: "final" },
    failed: { type: "final" },
    lost: { type: "final" },
  },
});
