// The thread of `baton worker --handler-thread` that runs job handlers (src/cli/handlerThread.ts).
import "./registerHooks.mjs";

await import("../src/cli/handlerThreadMain.ts");
