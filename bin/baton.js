#!/usr/bin/env node
// The `baton` command: compiled (dist/) when dist/ is current, else baton's TypeScript
// sources through tsx (bin/batonEntry.mjs).
import { batonEntry } from "./batonEntry.mjs";

// A closed pipe on stdout (`baton run … --json | head`) is the reader's choice, not an error:
// the command's output has nobody left to read it, so it ends at once, with the exit code it
// set (`baton run` sets it before writing its results). On stderr, which says how the work
// goes rather than what it gave, what is left is dropped and the work goes on (a run that
// completed, with its stderr piped to a `less` quit early, used to end with an uncaught error
// and exit 1). So it is with any failed write there, such as a stderr that is a file on a full
// disk (a `baton worker` whose log filled its disk ran its jobs, then exited 1 with an
// uncaught ENOSPC when it said why it stopped): nowhere is left to report it.
process.stdout.on("error", (error) => {
  if (error.code === "EPIPE") process.exit(process.exitCode ?? 0);
  throw error;
});
process.stderr.on("error", () => {});
const argv = process.argv.slice(2);
const { main } = await import(await batonEntry());
process.exitCode = await main(argv);
