// Which copy of baton the `baton` command runs. The compiled one (dist/) starts in a fraction
// of the time: it needs no TypeScript loader, and tsx's (a hooks thread and esbuild) cost
// more than everything `baton status` does. But a user's graph and job modules are
// TypeScript, loaded through tsx, on the command's threads as well as its main thread, and
// their `import "baton"` must get the very copy the command runs (one class per error); so
// the commands that load a user's modules run the sources through tsx as before, and so does
// every command when dist/ is missing or not compiled from the src/ beside it
// (bin/distCurrent.mjs): a stale dist/ in a clone never runs instead of the sources.
import { distIsCurrent } from "./distCurrent.mjs";

/** The commands that import a user's graph, job or simulation modules. */
const USER_MODULE_COMMANDS = new Set(["run", "worker", "sim"]);

/** The URL of the main module for `baton COMMAND …`, its module hooks registered. */
export async function batonEntry(command) {
  if (!USER_MODULE_COMMANDS.has(command) && distIsCurrent()) {
    return new URL("../dist/cli/main.js", import.meta.url).href;
  }
  await import("./registerHooks.mjs");
  return new URL("../src/cli/main.ts", import.meta.url).href;
}
