import type { Actor } from "xstate";
import type { coordinatorMachine } from "../machines/coordinator.ts";
import type { ResultStore } from "./resultStore.ts";

/** What the writer needs of a logger: pino's `error(object, message)`. */
export interface ErrorLogger {
  error(details: object, message: string): void;
}

/**
 * Carries out the coordinator's `result.store` effects: writes each completed result to the
 * store, then tells the coordinator `STORED`, or `STORE_FAILED` with an error saying what to
 * do. Writes of different jobs run at once, so workers never wait for an fsync: a worker's
 * next job starts while its last result is still being written, and the job board holds that
 * job `storing` (its dependents wait) until the write is durable.
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
  log: ErrorLogger,
): void {
  const tell = (event: Parameters<typeof coordinator.send>[0]) => {
    if (coordinator.getSnapshot().status === "active") coordinator.send(event);
  };
  coordinator.on("effects", ({ effects }) => {
    for (const effect of effects) {
      if (effect.type !== "result.store") continue;
      const { job, kind, value } = effect;
      store.put(job, kind, value).then(
        () => tell({ type: "STORED", job }),
        (error: Error) => {
          log.error({ job, err: error }, "could not store a result");
          tell({
            type: "STORE_FAILED",
            job,
            error: {
              name: "StoreError",
              message: `the result of job ${job} (${kind}) could not be stored in ${store.dir}: ${error.message}; check that the store's disk has room and is writable (the job is retried)`,
            },
          });
        },
      );
    }
  });
}
