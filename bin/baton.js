#!/usr/bin/env node
// The `baton` command: compiled (dist/) when dist/ is current, else baton's TypeScript
// sources through tsx (bin/batonEntry.mjs).
import { batonEntry } from "./batonEntry.mjs";

// A closed pipe on stdout (`baton run … --json | head`) is the reader's choice, not an error.
process.stdout.on("error", (error) => {
  if (error.code === "EPIPE") process.exit(process.exitCode ?? 0);
  throw error;
});
const argv = process.argv.slice(2);
const { main } = await import(await batonEntry());
process.exitCode = await main(argv);
