import type { Logger } from "pino";
import { createActor, type InspectionEvent } from "xstate";
import { TeardownError } from "../errors.ts";
import {
  type TeardownEffect,
  type TeardownEvent,
  type TeardownInput,
  teardownMachine,
} from "../machines/teardown.ts";
import type { Clock } from "./ports.ts";
import type { TeardownReport } from "./tearDown.ts";

/** How one kind of site carries out the teardown machine's effects. */
export interface TeardownDriver {
  input: TeardownInput;
  clock: Clock;
  logger?: Logger;
  /** Sees the teardown machine's inspection events, as `createActor`'s `inspect` option does. */
  inspect?: (event: InspectionEvent) => void;
  /** The remote host the steps happened on (prefixes each step and is logged); none locally. */
  host?: string;
  /** Once aborted, the TERM waits end and KILL follows (`HURRY`), the teardown still verified. */
  hurry?: AbortSignal | undefined;
  /** The first step's text, after `start: `. */
  start: string;
  /**
   * Carries out one batch of effects, in order, answering through `send` and adding lines to
   * the report through `step`. Synchronous (local processes: the ownership check and the
   * signal it allows happen in the same tick) or asynchronous (a remote host: one round trip
   * per probe); asynchronous batches run one after another, in the order they were emitted.
   */
  perform(
    effects: readonly TeardownEffect[],
    send: (event: TeardownEvent) => void,
    step: (text: string) => void,
  ): undefined | Promise<void>;
}

/**
 * The machine's `CANDIDATES` answer from a site's marker reader: the pids it found (pid 1,
 * the init process, and anything that is not a pid are dropped), or none and the error's
 * message when the markers could not be read (the sweep then goes by the process table).
 * `heldByAnother`, when given, is asked first: who holds the deployment's name now if
 * another launcher took it over; then the markers, that launcher's, are not read, and the
 * answer's `heldBy` says who it is (the machine does no sweep).
 *
 * @example
 * ```ts
 * send(await sweepCandidatesEvent(() => markerPids(files, paths, deployment)));
 * ```
 */
export async function sweepCandidatesEvent(
  read: () => Promise<number[]>,
  heldByAnother?: () => Promise<string | undefined>,
): Promise<Extract<TeardownEvent, { type: "CANDIDATES" }>> {
  const heldBy = await heldByAnother?.();
  if (heldBy !== undefined) return { type: "CANDIDATES", pids: [], heldBy };
  try {
    const pids = await read();
    return { type: "CANDIDATES", pids: pids.filter((pid) => Number.isInteger(pid) && pid > 1) };
  } catch (err) {
    return {
      type: "CANDIDATES",
      pids: [],
      error: err instanceof Error ? err.message : String(err),
    };
  }
}

/**
 * Runs the teardown machine to its verdict for one site, with the Clock port as XState's
 * clock, and turns the verdict into the report every teardown returns (or the
 * `TeardownError` naming the survivors). Steps are timed from the start, prefixed with the
 * host when there is one, and logged at debug. Anything `perform` throws (or rejects with)
 * stops the machine and rejects the teardown.
 *
 * @example
 * ```ts
 * const report = await driveTeardown({
 *   input: { deployment, groups: [], pids: [4711], selfPid: process.pid },
 *   clock: nodeClock(),
 *   start: "pids 4711",
 *   perform: (effects, send, step) => effects.forEach((effect) => act(effect, send, step)),
 * });
 * ```
 */
export function driveTeardown(driver: TeardownDriver): Promise<TeardownReport> {
  const { input, clock, logger, host } = driver;
  const { deployment } = input;
  const started = clock.now();
  const steps: string[] = [];
  const step = (text: string) => {
    const elapsedMs = clock.now() - started;
    steps.push(`+${elapsedMs}ms ${host === undefined ? "" : `${host}: `}${text}`);
    logger?.debug(
      { deployment, ...(host !== undefined && { host }), elapsedMs },
      `${host === undefined ? "" : "remote "}teardown: ${text}`,
    );
  };
  step(`start: ${driver.start}`);

  const actor = createActor(teardownMachine, {
    clock,
    input,
    ...(driver.inspect !== undefined && { inspect: driver.inspect }),
  });
  const teardown = new Promise<TeardownReport>((resolve, reject) => {
    let failed = false;
    /** Asynchronous batches still running; later batches wait for them. */
    let pending: Promise<void> | undefined;
    const fail = (err: unknown) => {
      if (failed) return;
      failed = true;
      actor.stop();
      reject(err);
    };
    const send = (event: TeardownEvent) => {
      if (!failed) actor.send(event);
    };
    const run = (effects: readonly TeardownEffect[]): undefined | Promise<void> => {
      if (failed) return undefined;
      try {
        return driver.perform(effects, send, step);
      } catch (err) {
        fail(err);
        return undefined;
      }
    };
    actor.on("effects", ({ effects }) => {
      const running = pending === undefined ? run(effects) : pending.then(() => run(effects));
      if (running === undefined) return;
      const settled = running.catch(fail);
      pending = settled;
      void settled.finally(() => {
        if (pending === settled) pending = undefined;
      });
    });
    actor.subscribe({
      complete: () => {
        if (failed) return;
        const output = actor.getSnapshot().output!;
        if (!output.verified) {
          reject(new TeardownError(deployment, output.survivors));
          return;
        }
        resolve({
          verified: true,
          deployment,
          elapsedMs: clock.now() - started,
          steps,
          swept: output.swept,
          stopped: output.stopped,
          others:
            host === undefined ? output.others : output.others.map((other) => ({ ...other, host })),
          forbiddenGroups: output.forbiddenGroups,
        });
      },
      error: fail,
    });
    actor.start();
  });
  const { hurry } = driver;
  if (hurry === undefined) return teardown;
  const hurried = () => {
    if (actor.getSnapshot().status === "active") actor.send({ type: "HURRY" });
  };
  if (hurry.aborted) hurried();
  else hurry.addEventListener("abort", hurried, { once: true });
  return teardown.finally(() => hurry.removeEventListener("abort", hurried));
}
