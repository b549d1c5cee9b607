/**
 * What a seed thread of the compiled package imports first when it simulates a graph of
 * yours (`simulateSeeds`' `modules`): tsx's module hooks, its ESM loader and its CommonJS
 * one, so that your TypeScript graph and handlers load on every thread as they did on the
 * calling thread (run under tsx). Hooks registered on a thread do not reach the threads it
 * starts, so without these a helper thread failed on `Unknown file extension ".ts"`. Unlike
 * the `baton` command's hooks (bin/registerHooks.mjs), which give your module's
 * `import "baton"` the command's TypeScript sources, `import "baton"` is left to Node: it
 * finds the installed package, the one the calling thread runs.
 */
import { register as registerCommonJs } from "tsx/cjs/api";
import { register } from "tsx/esm/api";

register();
registerCommonJs();
