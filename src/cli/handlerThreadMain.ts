import { parentPort, workerData } from "node:worker_threads";
import { BatonError } from "../errors.ts";
import { jobRunner } from "../runtime/jobRunner.ts";
import { createLogger } from "../runtime/logger.ts";
import { loadJobsFile } from "../runtime/userModule.ts";
import type { FromHandlerThread, HandlerThreadData, ToHandlerThread } from "./handlerThread.ts";
import { loadLoggingCause } from "./loadLoggingCause.ts";

// The handler thread of `baton worker --handler-thread` (see handlerThread.ts): loads the job
// module, then runs the jobs the worker's main thread hands it, one at a time.
const port = parentPort!;
const data = workerData as HandlerThreadData;
const send = (message: FromHandlerThread) => port.postMessage(message);
try {
  const logging = { level: data.level, pretty: data.pretty };
  const jobs = await loadLoggingCause(logging, () => loadJobsFile(data.module));
  const runner = jobRunner(jobs, createLogger(logging));
  port.on("message", (message: ToHandlerThread) => {
    if (message.type === "abort") runner.abort(message.reason);
    else {
      runner.start(message.frame, message.version, {
        progress: (frame) => send({ type: "progress", frame }),
        done: (result) => send({ type: "result", result }),
      });
    }
  });
  send({ type: "ready", codeHash: jobs.codeHash, kinds: jobs.kinds, source: jobs.source });
} catch (error) {
  send(
    error instanceof BatonError
      ? { type: "loadFailed", code: error.code, message: error.message }
      : {
          type: "loadFailed",
          code: "MODULE_LOAD",
          message: `could not load ${data.module}: ${String(error)}`,
        },
  );
}
