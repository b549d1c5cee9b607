import { assign, cancel, emit, raise, setup } from "xstate";
import { ConfigError } from "../errors.ts";
import type { PlantedBug } from "./plantedBugs.ts";

/** DESIGN §8: failed probes in a row before the watchdog aborts. */
export const WATCHDOG_TOLERANCE = 2;
/** DESIGN §8: how long after aborting a recovery still counts. */
export const WATCHDOG_GRACE_MS = 5_000;

/** What the watchdog hears: probe results from the runtime, `STOP`, and its own grace timer. */
export type WatchdogEvent =
  | { type: "PROBE_OK" }
  | { type: "PROBE_FAILED"; reason?: string }
  | { type: "STOP" }
  | { type: "GRACE_OVER" };

/**
 * What the watchdog asks of the runtime: `abort` (stop the work that depends on the watched
 * peer, once per abort stage) and `lost` (give up on it, at most once, never after `STOP`);
 * `suspect` and `recovered` are for logs.
 */
export type WatchdogEmitted =
  | { type: "suspect"; strikes: number; reason: string }
  | { type: "abort"; strikes: number; reason: string }
  | { type: "recovered"; strikes: number }
  | { type: "lost"; strikes: number; reason: string };

/** What `watchdogMachine` is started with: how many failed probes it tolerates, and for how long. */
export interface WatchdogInput {
  /** Failed probes in a row that trigger the abort stage (default 2). */
  tolerance?: number;
  /** How long the re-probe window after an abort lasts (default 5000 ms). */
  graceMs?: number;
  /** Known bugs switched on (tests and `baton sim --plant` only). */
  plantedBugs?: readonly PlantedBug[];
}

export interface WatchdogContext {
  tolerance: number;
  graceMs: number;
  /** Failed probes since the last good one. */
  strikes: number;
  /** The last failure's reason. */
  reason: string;
  /** The planted bug `watchdog-never-aborts` is on. */
  neverAborts: boolean;
}

/**
 * The graduated watchdog (DESIGN §4): `healthy → suspect → aborting → reprobing → (healthy |
 * lost)`, and `stopped` from any live state. A failed probe is a strike; below `tolerance`
 * strikes the watched peer is only `suspect` and a good probe makes it `healthy` again. At
 * `tolerance` it emits `abort` and re-probes for `graceMs`: a good probe inside the window
 * returns to `healthy`, the window's end emits `lost` (once; `lost` is final). `STOP` ends it
 * in `stopped` and cancels the window's timer (`grace`), so a stop during the grace never
 * emits `lost`. The machine does no I/O: the runtime probes, sends the results, and carries
 * out what it emits.
 *
 * @example
 * ```ts
 * const watchdog = createActor(watchdogMachine, { input: { tolerance: 2, graceMs: 5_000 }, clock });
 * watchdog.on("abort", () => group.abortAll());
 * watchdog.on("lost", ({ reason }) => void group.stop(reason));
 * watchdog.start();
 * watchdog.send(await probe() ? { type: "PROBE_OK" } : { type: "PROBE_FAILED", reason: "no answer" });
 * ```
 */
export const watchdogMachine = setup({
  types: {
    context: {} as WatchdogContext,
    events: {} as WatchdogEvent,
    input: {} as WatchdogInput,
    emitted: {} as WatchdogEmitted,
  },
  delays: {
    grace: ({ context }) => context.graceMs,
  },
  guards: {
    toleranceReached: ({ context }) =>
      !context.neverAborts && context.strikes + 1 >= context.tolerance,
  },
  actions: {
    strike: assign(({ context, event }) => ({
      strikes: context.strikes + 1,
      reason: (event.type === "PROBE_FAILED" && event.reason) || "a probe failed",
    })),
    emitSuspect: emit(({ context }) => ({
      type: "suspect" as const,
      strikes: context.strikes,
      reason: context.reason,
    })),
    emitRecovered: emit(({ context }) => ({
      type: "recovered" as const,
      strikes: context.strikes,
    })),
    clearStrikes: assign({ strikes: 0, reason: "" }),
  },
}).createMachine({
  id: "watchdog",
  context: ({ input }) => {
    const tolerance = input.tolerance ?? WATCHDOG_TOLERANCE;
    const graceMs = input.graceMs ?? WATCHDOG_GRACE_MS;
    if (!Number.isInteger(tolerance) || tolerance < 1) {
      throw new ConfigError(`watchdog tolerance must be an integer ≥ 1, not ${tolerance}`);
    }
    if (!Number.isFinite(graceMs) || graceMs < 0) {
      throw new ConfigError(`watchdog grace must be a number of milliseconds ≥ 0, not ${graceMs}`);
    }
    const neverAborts = input.plantedBugs?.includes("watchdog-never-aborts") ?? false;
    return { tolerance, graceMs, strikes: 0, reason: "", neverAborts };
  },
  initial: "healthy",
  on: {
    STOP: ".stopped",
  },
  states: {
    healthy: {
      on: {
        PROBE_FAILED: [
          { guard: "toleranceReached", target: "aborting", actions: "strike" },
          { target: "suspect", actions: ["strike", "emitSuspect"] },
        ],
      },
    },
    suspect: {
      on: {
        PROBE_OK: { target: "healthy", actions: ["emitRecovered", "clearStrikes"] },
        PROBE_FAILED: [
          { guard: "toleranceReached", target: "aborting", actions: "strike" },
          { actions: ["strike", "emitSuspect"] },
        ],
      },
    },
    aborting: {
      entry: emit(({ context }) => ({
        type: "abort" as const,
        strikes: context.strikes,
        reason: context.reason,
      })),
      always: "reprobing",
    },
    reprobing: {
      entry: raise({ type: "GRACE_OVER" }, { id: "grace", delay: "grace" }),
      exit: cancel("grace"),
      on: {
        PROBE_OK: { target: "healthy", actions: ["emitRecovered", "clearStrikes"] },
        PROBE_FAILED: { actions: "strike" },
        GRACE_OVER: "lost",
      },
    },
    lost: {
      type: "final",
      entry: emit(({ context }) => ({
        type: "lost" as const,
        strikes: context.strikes,
        reason: `${context.reason}; no recovery within ${context.graceMs} ms of aborting`,
      })),
    },
    stopped: { type: "final" },
  },
});
