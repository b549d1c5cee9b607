// The module hooks of the `baton` command, for its main thread and for the thread that runs
// job handlers (`baton worker --handler-thread`): TypeScript (baton's own sources and the
// user's graph and job modules) loads directly through tsx's loaders, the ESM one and the
// CommonJS one for a user module in a folder whose package.json does not say "type": "module"
// (or has none); and a user module's `import "baton"` gets the baton this command runs.
import { register as registerHook } from "node:module";
import { register as registerCommonJs } from "tsx/cjs/api";
import { register } from "tsx/esm/api";

register();
registerCommonJs();
registerHook("./resolveBaton.mjs", import.meta.url);
