#!/usr/bin/env node
// The `baton` command. TypeScript (baton's own sources and the user's graph and job
// modules) loads directly through tsx's loaders: the ESM one, and the CommonJS one for a
// user module in a folder whose package.json does not say "type": "module" (or has none).
import { register as registerHook } from "node:module";
import { register as registerCommonJs } from "tsx/cjs/api";
import { register } from "tsx/esm/api";

register();
registerCommonJs();
registerHook("./resolveBaton.mjs", import.meta.url);
// A closed pipe on stdout (`baton run … --json | head`) is the reader's choice, not an error.
process.stdout.on("error", (error) => {
  if (error.code === "EPIPE") process.exit(process.exitCode ?? 0);
  throw error;
});
const { main } = await import("../src/cli/main.ts");
process.exitCode = await main(process.argv.slice(2));
