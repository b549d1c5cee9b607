// The thread of `baton worker --handler-thread` that runs job handlers, when baton runs from
// its sources (src/cli/handlerThread.ts; from dist/ the thread starts at the compiled
// dist/cli/handlerThreadMain.js, which registers the hooks at its job module's import).
import { registerHooks } from "./registerHooks.mjs";

registerHooks();

await import("../src/cli/handlerThreadMain.ts");
