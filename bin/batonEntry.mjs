// Which copy of baton the `baton` command runs: the compiled one (dist/) when it is compiled
// from the src/ beside it (bin/distCurrent.mjs), else the TypeScript sources through tsx, so
// that a stale dist/ in a clone never runs instead of the sources. The compiled one starts in
// a fraction of the time: it needs no TypeScript loader, and tsx's (a hooks thread and
// esbuild) cost more than everything `baton status` does. A user's graph, job and simulation
// modules are TypeScript too; the compiled command loads them, and only them, through tsx,
// and resolves their `import "baton"` to the copy it runs (src/runtime/userModule.ts,
// bin/resolveBaton.mjs), on its handler and seed threads as on its main thread.
import { distIsCurrent } from "./distCurrent.mjs";

/** The URL of the main module for `baton …`, its module hooks registered. */
export async function batonEntry() {
  if (distIsCurrent()) return new URL("../dist/cli/main.js", import.meta.url).href;
  (await import("./registerHooks.mjs")).registerHooks();
  return new URL("../src/cli/main.ts", import.meta.url).href;
}
