import type { Logger } from "pino";
import type { Resources } from "../graph/job.ts";
import type { LoadedJobs } from "./jobModule.ts";
import type { Net } from "./ports.ts";
import { runWorker, type WorkerExit } from "./worker.ts";

export interface InProcessWorkersOptions {
  count: number;
  net: Net;
  address: string;
  jobs: LoadedJobs;
  resources: Resources;
  secret: Uint8Array;
  logger: Logger;
  /** Replacements allowed for workers whose connection ended abnormally (default 3 × count). */
  restartBudget?: number;
}

/** Workers running in this process; `stop()` resolves when every one has ended. */
export interface InProcessWorkers {
  stop(): Promise<WorkerExit[]>;
}

/**
 * Starts `count` workers in this process. A worker whose connection ends abnormally (not a
 * normal stop) is replaced, within a restart budget; the pool owns worker failure, the
 * coordinator owns job failure.
 *
 * @example
 * ```ts
 * const workers = startInProcessWorkers({ count: 4, net, address, jobs, resources, secret, logger });
 * await workers.stop(); // after the coordinator has closed its listener
 * ```
 */
export function startInProcessWorkers(options: InProcessWorkersOptions): InProcessWorkers {
  const exits: WorkerExit[] = [];
  let budget = options.restartBudget ?? options.count * 3;
  let stopping = false;
  const start = (name: string): Promise<void> =>
    runWorker({ ...options, name }).then(
      (exit) => {
        exits.push(exit);
        if (stopping || exit.code === 1000 || exit.code === 1001 || budget <= 0) return;
        budget--;
        options.logger.warn(
          { worker: name, code: exit.code, reason: exit.reason },
          "worker replaced",
        );
        return start(name);
      },
      (error: unknown) => {
        options.logger.error({ worker: name, err: error }, "worker could not connect");
      },
    );
  const running = Array.from({ length: options.count }, (_, i) => start(`inproc-${i + 1}`));
  return {
    async stop() {
      stopping = true;
      await Promise.all(running);
      return exits;
    },
  };
}
