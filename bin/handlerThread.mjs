// The thread of `baton worker --handler-thread` that runs job handlers (src/cli/handlerThread.ts).
import { registerHooks } from "./registerHooks.mjs";

registerHooks();

await import("../src/cli/handlerThreadMain.ts");
