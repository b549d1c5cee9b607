#!/usr/bin/env node
// The `baton` command.
import "./registerHooks.mjs";

// A closed pipe on stdout (`baton run … --json | head`) is the reader's choice, not an error.
process.stdout.on("error", (error) => {
  if (error.code === "EPIPE") process.exit(process.exitCode ?? 0);
  throw error;
});
const { main } = await import("../src/cli/main.ts");
process.exitCode = await main(process.argv.slice(2));
