// `baton run` listens for the stop signals itself from its flags on (runCommand's `beforeRun`,
// then the run's own handlers), but loading baton's modules to get there takes a second or two
// on a loaded machine (tsx's hooks from the sources, the command's module, the engine's
// packages), and a Ctrl-C then ended it with Node's default: exit 130, nothing said, so the
// user could not tell whether anything had run. Until the command listens, a stop signal ends
// it saying so, with the code a shell gives a process the signal killed (128 + its number,
// as src/cli/signalExit.ts's SIGNAL_EXIT). Nothing of the run exists yet: no store or lock has
// been touched, no worker started.
import { constants } from "node:os";

/** The signals answered: src/cli/signalExit.ts's STOP_SIGNALS, which a test holds this to. */
export const LOADING_STOP_SIGNALS = ["SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT"];

/**
 * Answers a stop signal with one line and its exit code until the command adds a listener
 * for any of them, which takes over: it then has something to say of its own (the store it
 * left as it was) or something to stop.
 */
export function sayStoppedWhileLoading() {
  const stopped = (signal) => {
    process.stderr.write(
      `\nstopped (${signal}) before the run started: baton was still loading, so nothing was run; the same baton run again starts the run\n`,
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
