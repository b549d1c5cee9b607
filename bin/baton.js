#!/usr/bin/env node
// The `baton` command. TypeScript (baton's own sources and the user's graph and job
// modules) loads directly through tsx's loader.
import { register } from "tsx/esm/api";

register();
// A closed pipe on stdout (`baton run … --json | head`) is the reader's choice, not an error.
process.stdout.on("error", (error) => {
  if (error.code === "EPIPE") process.exit(process.exitCode ?? 0);
  throw error;
});
const { main } = await import("../src/cli/main.ts");
process.exitCode = await main(process.argv.slice(2));
