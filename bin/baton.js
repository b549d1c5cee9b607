#!/usr/bin/env node
// The `baton` command: compiled (dist/) when dist/ is current, else baton's TypeScript
// sources through tsx (bin/batonEntry.mjs).
import { batonEntry } from "./batonEntry.mjs";
import { sayStoppedWhileLoading } from "./stoppedWhileLoading.mjs";
import { setBatonV8Flags } from "./v8Flags.mjs";

setBatonV8Flags();

// On stderr, which says how the work goes rather than what it gave, what is left after a failed
// write is dropped and the work goes on (a run that completed, with its stderr piped to a `less`
// quit early, used to end with an uncaught error and exit 1; a `baton worker` whose log filled
// its disk ran its jobs, then exited 1 with an uncaught ENOSPC when it said why it stopped):
// nowhere is left to report it. On stdout, a closed pipe (`baton run … --json | head`) ends the
// command at once with the exit code it set, and any other failure is said on stderr and makes
// the exit code 2; `baton worker`'s stdout holds its job handlers' output, which it drops and
// goes on (src/cli/stdoutFailure.ts).
process.stderr.on("error", () => {});
const argv = process.argv.slice(2);
// Until the command listens for Ctrl-C itself (bin/stoppedWhileLoading.mjs).
sayStoppedWhileLoading(argv[0]);
const { main, stdoutFailure, exitAfterStdoutFailure } = await import(await batonEntry());
let stdoutError;
process.stdout.on("error", (error) => {
  const failure = stdoutFailure(argv[0], error);
  if (stdoutError === undefined && failure.say !== undefined) process.stderr.write(failure.say);
  stdoutError ??= error;
  if (failure.endNow) process.exit(process.exitCode ?? 0);
});
process.on("exit", (code) => {
  if (stdoutError !== undefined) {
    process.exitCode = exitAfterStdoutFailure(argv[0], stdoutError, code);
  }
});
process.exitCode = await main(argv);
