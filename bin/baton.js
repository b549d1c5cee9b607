#!/usr/bin/env node
// The `baton` command: compiled (dist/) when dist/ is current, else baton's TypeScript
// sources through tsx (bin/batonEntry.mjs).
import { batonEntry } from "./batonEntry.mjs";

// A closed pipe (`baton run … --json | head`, `baton run … 2>&1 | less` quit early) is the
// reader's choice, not an error: what is left to write there is dropped, and the command ends as
// it would have. Exiting at once, as it did for stdout, ended a failed run with 0 before its
// exit code was set; on stderr a closed pipe was an uncaught error, exit 1 for a run that
// completed.
for (const stream of [process.stdout, process.stderr]) {
  stream.on("error", (error) => {
    if (error.code !== "EPIPE") throw error;
  });
}
const argv = process.argv.slice(2);
const { main } = await import(await batonEntry());
process.exitCode = await main(argv);
