import { assign, cancel, emit, raise, setup } from "xstate";
import { rankList } from "../rank/rankList.ts";

/** Why a group failed; the runtime turns it into a `RankGroupError` with the same code. */
export interface GroupFailure {
  code:
    | "REAP_FAILED"
    | "DEPLOYMENT_BLOCKED"
    | "LAUNCH_FAILED"
    | "BARRIER_TIMEOUT"
    | "RANK_FAILED"
    | "RANK_LOST"
    | "LEASE_LOST";
  message: string;
  /** The rank at fault, for RANK_FAILED and RANK_LOST. */
  rank?: number;
  /** How that rank ended, for RANK_FAILED. */
  exit?: { code: number | null; signal: string | null };
  /** `false` when another launch would fail the same way (a rank's program is not there). */
  retryable?: false;
  /**
   * For LAUNCH_FAILED, when a rank's program could not be run: the code a shell exits with
   * for it, 127 (not there) or 126 (not executable).
   */
  shellCode?: 126 | 127;
}

/** Events of a group: what the runtime did or observed, and its own barrier timer. */
export type GroupEvent =
  | { type: "REAPED" }
  | { type: "REAP_FAILED"; failure: GroupFailure }
  | { type: "LAUNCHED" }
  /** `retryable: false` when another launch would fail the same way; `shellCode` as GroupFailure's. */
  | { type: "LAUNCH_FAILED"; message: string; retryable?: false; shellCode?: 126 | 127 }
  /**
   * The name was refused while launching: an ssh host's state dir holds it for another
   * launcher (its mirrored lease), which only a site opened during the launch can find.
   */
  | { type: "LAUNCH_BLOCKED"; message: string }
  | { type: "RANK_READY"; rank: number }
  | { type: "RANK_EXITED"; rank: number; code: number | null; signal: string | null }
  | { type: "RANK_LOST"; rank: number; reason: string }
  | { type: "LEASE_LOST"; message: string }
  /** Stop the group: a user's stop(), a cancelled job, Ctrl-C; again after teardownFailed to retry. */
  | { type: "STOP"; reason: string }
  | { type: "TEARDOWN_DONE" }
  | { type: "TEARDOWN_FAILED"; message: string }
  /** Raised by the machine itself: the load timeout passed before every rank was ready. */
  | { type: "BARRIER_TIMEOUT" };

/** How the group ended: every rank exited 0, it was stopped, or it failed. */
export type GroupOutcome =
  | { status: "succeeded" }
  | { status: "stopped"; reason: string }
  | { status: "failed"; failure: GroupFailure };

/** What the group asks the runtime to do, and what it reports. */
export type GroupEmitted =
  | { type: "group.launch" }
  | ({ type: "group.ready" } & BarrierPassed)
  | { type: "group.teardown" }
  | { type: "group.teardownFailed"; message: string }
  | { type: "group.finished"; outcome: GroupOutcome };

/** How the barrier was passed: each rank either wrote its ready marker or exited 0 first. */
export interface BarrierPassed {
  /** Ranks that wrote their ready marker, ascending. */
  readyRanks: number[];
  /** Ranks that exited 0 before writing one (a program that never serves), ascending. */
  exitedRanks: number[];
}

export interface GroupInput {
  deployment: string;
  worldSize: number;
  /** Time from launch for every rank to be ready (the barrier), default 30 min (DESIGN §8). */
  loadTimeoutMs?: number;
}

export interface GroupContext {
  deployment: string;
  worldSize: number;
  loadTimeoutMs: number;
  /** Ranks that wrote their ready marker. */
  ready: number[];
  /** How each rank that has exited ended, by rank. */
  exits: Record<number, { code: number | null; signal: string | null }>;
  /** The first failure; later ones (ranks killed by the teardown it caused) do not replace it. */
  failure: GroupFailure | undefined;
  /** Why the group was stopped, when a STOP came before any failure. */
  stopReason: string | undefined;
  /** The last teardown's failure, while in `teardownFailed`. */
  teardownError: string | undefined;
}

/** DESIGN §8: every rank must be ready within 30 minutes of the launch. */
export const DEFAULT_LOAD_TIMEOUT_MS = 30 * 60_000;

function describeExit(exit: { code: number | null; signal: string | null }): string {
  return exit.signal === null ? `exited with code ${exit.code}` : `was killed by ${exit.signal}`;
}

/** A rank that exited 0 has passed the barrier: it cannot become ready any more. */
export function passedBarrier(context: GroupContext, rank: number): boolean {
  const exit = context.exits[rank];
  return context.ready.includes(rank) || (exit?.code === 0 && exit.signal === null);
}

/** The context change that records `failure`, unless a failure or a stop came first. */
function firstFailure(context: GroupContext, failure: GroupFailure): Partial<GroupContext> {
  return context.failure === undefined && context.stopReason === undefined ? { failure } : {};
}

/** What the group hears while ranks may be running (`launching`, `barrier`, `running`). */
const whileRanksRun = {
  RANK_EXITED: [
    { guard: "failedExit", target: "#group.stopping", actions: ["recordExit", "failRank"] },
    { actions: "recordExit" },
  ],
  RANK_LOST: { target: "#group.stopping", actions: "loseRank" },
  LEASE_LOST: {
    target: "#group.stopping",
    actions: {
      type: "fail",
      params: ({ event }: { event: { message: string } }) => ({
        code: "LEASE_LOST" as const,
        message: event.message,
      }),
    },
  },
  STOP: { target: "#group.stopping", actions: "recordStop" },
} as const;

/**
 * The supervisor of one rank group (DESIGN §4):
 * `reaping → launching → barrier → running → stopping → (stopped | teardownFailed)`.
 * It decides; the runtime acts on what it emits: `group.launch` (after the reaper cleared
 * the way), `group.ready` (the barrier passed: which ranks are ready, which exited 0 first), `group.teardown` (stop
 * every rank, verified) and `group.finished` with the outcome.
 *
 * - A failed reap refuses the launch: the group ends `stopped` with that failure and nothing
 *   was started.
 * - `barrier` waits for every rank's ready marker within `loadTimeoutMs` (delayed event
 *   `barrierTimeout`). A rank that exits 0 before it was ready counts as past the barrier.
 *   A rank's first exit counts; a later report for the same rank is ignored.
 * - A rank that exits with another code or a signal, or whose heartbeat goes stale, fails the
 *   group: the others are torn down, and the outcome names that first rank and how it ended.
 * - A lease the launcher could not renew (its watchdog gave it up, `LEASE_LOST`) fails the
 *   group too: its ranks would soon take the launcher for dead and stop on their own.
 *   When every rank has exited 0 the group is torn down too (their process groups may hold
 *   children) and succeeds.
 * - A failed launch tears down and then reports the launch failure, never the teardown's.
 *   A name refused while launching (`LAUNCH_BLOCKED`: another launcher holds it in an ssh
 *   host's state dir) is torn down the same way and fails as `DEPLOYMENT_BLOCKED`, as a name
 *   refused before the launch does: what was claimed meanwhile must be given back.
 * - A teardown that could not be verified ends in `teardownFailed`, which keeps everything;
 *   STOP there retries the teardown from the start.
 *
 * @example
 * ```ts
 * const group = createActor(groupMachine, { input: { deployment: "dep-1", worldSize: 2 }, clock });
 * group.on("group.launch", () => spawnRanks());
 * group.on("group.teardown", () => tearDownRanks());
 * group.start();
 * group.send({ type: "REAPED" });
 * ```
 */
export const groupMachine = setup({
  types: {
    context: {} as GroupContext,
    events: {} as GroupEvent,
    input: {} as GroupInput,
    emitted: {} as GroupEmitted,
  },
  delays: {
    loadTimeout: ({ context }) => context.loadTimeoutMs,
  },
  guards: {
    /** A rank's first exit with a code other than 0 or a signal (a process exits once). */
    failedExit: ({ context, event }) =>
      event.type === "RANK_EXITED" &&
      context.exits[event.rank] === undefined &&
      (event.code !== 0 || event.signal !== null),
    barrierPassed: ({ context }) => {
      for (let rank = 0; rank < context.worldSize; rank++) {
        if (!passedBarrier(context, rank)) return false;
      }
      return true;
    },
    allExitedCleanly: ({ context }) => {
      for (let rank = 0; rank < context.worldSize; rank++) {
        const exit = context.exits[rank];
        if (exit?.code !== 0 || exit.signal !== null) return false;
      }
      return true;
    },
  },
  actions: {
    /** Keeps a rank's first exit: a later report for the same rank is a stale duplicate. */
    recordExit: assign(({ context, event }) =>
      event.type === "RANK_EXITED" && context.exits[event.rank] === undefined
        ? { exits: { ...context.exits, [event.rank]: { code: event.code, signal: event.signal } } }
        : {},
    ),
    recordReady: assign(({ context, event }) =>
      event.type === "RANK_READY" && !context.ready.includes(event.rank)
        ? { ready: [...context.ready, event.rank] }
        : {},
    ),
    /** Sets the failure unless one (or a stop) came first. */
    fail: assign(({ context }, failure: GroupFailure) => firstFailure(context, failure)),
    failRank: assign(({ context, event }) => {
      if (event.type !== "RANK_EXITED") return {};
      const exit = { code: event.code, signal: event.signal };
      return firstFailure(context, {
        code: "RANK_FAILED",
        rank: event.rank,
        exit,
        message: `rank ${event.rank} ${describeExit(exit)}`,
      });
    }),
    loseRank: assign(({ context, event }) =>
      event.type === "RANK_LOST"
        ? firstFailure(context, {
            code: "RANK_LOST",
            rank: event.rank,
            message: `rank ${event.rank} is lost: ${event.reason}`,
          })
        : {},
    ),
    recordStop: assign(({ context, event }) =>
      event.type === "STOP" && context.failure === undefined && context.stopReason === undefined
        ? { stopReason: event.reason }
        : {},
    ),
    emitFinished: emit(({ context }) => ({
      type: "group.finished" as const,
      outcome: outcomeOf(context),
    })),
  },
}).createMachine({
  id: "group",
  context: ({ input }) => ({
    deployment: input.deployment,
    worldSize: input.worldSize,
    loadTimeoutMs: input.loadTimeoutMs ?? DEFAULT_LOAD_TIMEOUT_MS,
    ready: [],
    exits: {},
    failure: undefined,
    stopReason: undefined,
    teardownError: undefined,
  }),
  initial: "reaping",
  states: {
    reaping: {
      on: {
        REAPED: "launching",
        REAP_FAILED: {
          target: "stopped",
          actions: { type: "fail", params: ({ event }) => event.failure },
        },
        STOP: { target: "stopped", actions: "recordStop" },
      },
    },
    launching: {
      entry: emit({ type: "group.launch" as const }),
      on: {
        ...whileRanksRun,
        LAUNCHED: "barrier",
        LAUNCH_FAILED: {
          target: "stopping",
          actions: {
            type: "fail",
            params: ({ event }) => ({
              code: "LAUNCH_FAILED",
              message: event.message,
              ...(event.retryable === false && { retryable: false as const }),
              ...(event.shellCode !== undefined && { shellCode: event.shellCode }),
            }),
          },
        },
        LAUNCH_BLOCKED: {
          target: "stopping",
          actions: {
            type: "fail",
            params: ({ event }) => ({ code: "DEPLOYMENT_BLOCKED", message: event.message }),
          },
        },
        RANK_READY: { actions: "recordReady" },
      },
    },
    barrier: {
      entry: raise({ type: "BARRIER_TIMEOUT" }, { id: "barrierTimeout", delay: "loadTimeout" }),
      exit: cancel("barrierTimeout"),
      always: { guard: "barrierPassed", target: "running" },
      on: {
        ...whileRanksRun,
        RANK_READY: { actions: "recordReady" },
        BARRIER_TIMEOUT: {
          target: "stopping",
          actions: {
            type: "fail",
            params: ({ context }) => {
              const waiting: number[] = [];
              for (let rank = 0; rank < context.worldSize; rank++) {
                if (!passedBarrier(context, rank)) waiting.push(rank);
              }
              return {
                code: "BARRIER_TIMEOUT",
                message: `${rankList(waiting)} did not write a ready marker within the load timeout (${context.loadTimeoutMs} ms)`,
              };
            },
          },
        },
      },
    },
    running: {
      entry: emit(({ context }) => {
        const readyRanks = [...context.ready].sort((a, b) => a - b);
        const exitedRanks: number[] = [];
        for (let rank = 0; rank < context.worldSize; rank++) {
          if (!context.ready.includes(rank)) exitedRanks.push(rank);
        }
        return { type: "group.ready" as const, readyRanks, exitedRanks };
      }),
      always: { guard: "allExitedCleanly", target: "stopping" },
      on: whileRanksRun,
    },
    stopping: {
      entry: [assign({ teardownError: undefined }), emit({ type: "group.teardown" as const })],
      on: {
        RANK_EXITED: { actions: "recordExit" },
        TEARDOWN_DONE: "stopped",
        TEARDOWN_FAILED: {
          target: "teardownFailed",
          actions: [
            assign(({ event }) => ({ teardownError: event.message })),
            emit(({ event }) => ({
              type: "group.teardownFailed" as const,
              message: event.message,
            })),
          ],
        },
      },
    },
    teardownFailed: {
      on: {
        RANK_EXITED: { actions: "recordExit" },
        STOP: "stopping",
      },
    },
    stopped: {
      type: "final",
      entry: "emitFinished",
    },
  },
});

/**
 * The outcome a finished group reports: its failure, else its stop, else success. Known once
 * the group is `stopping` (the runtime records it when its teardown is verified).
 */
export function outcomeOf(context: GroupContext): GroupOutcome {
  if (context.failure !== undefined) return { status: "failed", failure: context.failure };
  if (context.stopReason !== undefined) return { status: "stopped", reason: context.stopReason };
  return { status: "succeeded" };
}
