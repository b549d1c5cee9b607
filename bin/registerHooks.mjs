// The module hooks of the `baton` command that load a user's modules: TypeScript loads
// directly through tsx's loaders, the ESM one and the CommonJS one for a module in a folder
// whose package.json does not say "type": "module" (or has none); and a user module's
// `import "baton"` gets the baton this command runs (bin/resolveBaton.mjs), registered last so
// that it answers before tsx. From the sources (bin/baton.js when dist/ is not current, the
// thread of `baton worker --handler-thread`, a seed thread) they are registered before baton
// loads, and load baton's own sources too; from the compiled dist/ (`compiled`), on a thread's
// first import of a user's module (src/runtime/userModule.ts).
import { register as registerHook } from "node:module";
import { register as registerCommonJs } from "tsx/cjs/api";
import { register } from "tsx/esm/api";

/** Registers the hooks on the calling thread (hooks do not reach the threads it starts). */
export function registerHooks(compiled = false) {
  register();
  registerCommonJs();
  registerHook("./resolveBaton.mjs", import.meta.url, { data: { compiled } });
}
