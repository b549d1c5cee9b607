// `baton run`, `worker`, `launch`, `sim` and `reap` listen for the stop signals themselves once
// they have read their flags (and the worker its secret and job module), but loading baton's
// modules to get there takes a second or two on a loaded machine (tsx's hooks from the sources,
// the command's module, the engine's packages), and a Ctrl-C then ended them with Node's
// default: exit 130, nothing said, so the user could not tell whether anything had begun. Until
// the command listens, a stop signal ends it saying so, with the code a shell gives a process
// the signal killed (128 + its number, as src/cli/signalExit.ts's SIGNAL_EXIT). Nothing of the
// command's exists yet: no store or lock touched, no worker or rank started, no connection.
import { constants } from "node:os";

/** The signals answered: src/cli/signalExit.ts's STOP_SIGNALS, which a test holds this to. */
export const LOADING_STOP_SIGNALS = ["SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT"];

/**
 * What each command stopped while it loads has not begun, what that leaves, and what the same
 * command does when given again. `status`, `viz`, `help` and `version` only read and print:
 * Node's default, to end at once, is theirs.
 */
const NOT_BEGUN = {
  run: {
    before: "the run started",
    left: "baton was still loading, so nothing was run",
    again: "starts the run",
  },
  worker: {
    before: "the worker connected",
    left: "it took no job",
    again: "connects and takes jobs",
  },
  launch: {
    before: "any rank started",
    left: "baton was still loading, so nothing was launched",
    again: "launches the group",
  },
  sim: {
    before: "the first seed ran",
    left: "baton was still loading, so nothing was simulated",
    again: "runs the seeds",
  },
  reap: {
    before: "the reap started",
    left: "baton was still loading, so nothing was reaped",
    again: "reaps the state dir",
  },
};

/**
 * Answers a stop signal with one line and its exit code until `command` adds a listener for
 * any of them, which takes over: it then has something to say of its own (the store it left
 * as it was, the seeds done) or something to stop (a run, a rank group, a job).
 */
export function sayStoppedWhileLoading(command) {
  if (!Object.hasOwn(NOT_BEGUN, command)) return;
  const { before, left, again } = NOT_BEGUN[command];
  const stopped = (signal) => {
    process.stderr.write(
      `\nstopped (${signal}) before ${before}: ${left}; the same baton ${command} again ${again}\n`,
    );
    process.exit(128 + constants.signals[signal]);
  };
  // Not at once: `newListener` comes before the command's listener is added, and removing the
  // last listener of a signal there gives the signal back to the system's default, which the
  // command's listener, added next, does not take back (Node starts listening for a signal only
  // when it has none). A signal is delivered to listeners from the event loop, after this turn's
  // microtasks: none falls between.
  const handOver = (event) => {
    if (!LOADING_STOP_SIGNALS.includes(event)) return;
    process.off("newListener", handOver);
    queueMicrotask(() => {
      for (const signal of LOADING_STOP_SIGNALS) process.off(signal, stopped);
    });
  };
  for (const signal of LOADING_STOP_SIGNALS) process.on(signal, stopped);
  process.on("newListener", handOver);
}
