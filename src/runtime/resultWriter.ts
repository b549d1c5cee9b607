import type { Actor } from "xstate";
import { StoreError } from "../errors.ts";
import type { Json } from "../graph/job.ts";
import type { coordinatorMachine } from "../machines/coordinator.ts";
import { inFlightLimit } from "./inFlightLimit.ts";
import type { ResultStore } from "./resultStore.ts";

/** What the writer needs of a logger: pino's `info(object, message)`. */
export interface InfoLogger {
  info(details: object, message: string): void;
}

/**
 * Writes in flight at once; the rest wait their turn, first come first served. Each write
 * holds a file open through its fsync, so an unbounded number could run out of file
 * descriptors; 64 at once stores as fast as any number did here.
 */
export const WRITES_IN_FLIGHT = 64;

/**
 * Carries out the coordinator's `result.store` effects: writes each completed result to the
 * store, then tells the coordinator `STORED`, or `STORE_FAILED` with an error saying what to
 * do. Workers never wait for an fsync: a worker's next job starts while its last result is
 * still being written, and the job board holds that job `storing` (its dependents wait)
 * until the write is durable. Up to {@link WRITES_IN_FLIGHT} writes run at once (fsyncs of
 * different files overlap); the others queue in order.
 *
 * A write that ends after the coordinator stopped (a run shut down while a result was being
 * written) tells nobody: the run already counted the job as shut down.
 *
 * @example
 * ```ts
 * const coordinator = createActor(coordinatorMachine, { input: { jobs, durable: true } });
 * writeResults(coordinator, store, logger);
 * coordinator.start();
 * ```
 */
export function writeResults(
  coordinator: Actor<typeof coordinatorMachine>,
  store: Pick<ResultStore, "dir" | "put">,
  log: InfoLogger,
): void {
  const limit = inFlightLimit(WRITES_IN_FLIGHT);
  const tell = (event: Parameters<typeof coordinator.send>[0]) => {
    if (coordinator.getSnapshot().status === "active") coordinator.send(event);
  };
  const write = (job: string, kind: string, value: Json) =>
    store.put(job, kind, value).then(
      () => tell({ type: "STORED", job }),
      (error: Error) => {
        // Info, as any attempt that ended without a result: the job's error says it, and
        // `baton run` prints it once, with the job that failed.
        log.info({ job, err: error }, "could not store a result");
        tell({
          type: "STORE_FAILED",
          job,
          error: {
            name: "StoreError",
            // A StoreError says what to do itself (a newer baton's entry is in the way).
            message: `the result of job ${job} (${kind}) could not be stored in ${store.dir}: ${error.message}${error instanceof StoreError ? "" : "; check that the store's disk has room and is writable"}`,
          },
        });
      },
    );
  coordinator.on("effects", ({ effects }) => {
    for (const effect of effects) {
      if (effect.type === "result.store") {
        const { job, kind, value } = effect;
        void limit(() => write(job, kind, value));
      }
    }
  });
}
