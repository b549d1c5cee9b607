/** `baton worker`'s exit code when the coordinator refused its setup (see `workerCommand`). */
export const REFUSED_EXIT = 4;

/**
 * `baton worker`'s exit code when its process was ended with exit code 0 while it served a
 * run, which baton never does: a job handler called `process.exit(0)`. Exit 0 means the
 * coordinator stopped the worker (or it left idle), so `localPool` did not replace it, and a
 * run whose every worker a handler had ended so waited forever. A pool replaces a worker that
 * exits 5, and the job it held goes back to the coordinator, lost with its worker.
 *
 * @example
 * ```ts
 * process.on("exit", (code) => { if (code === 0) process.exitCode = HANDLER_EXITED_EXIT; });
 * ```
 */
export const HANDLER_EXITED_EXIT = 5;

/**
 * Exit codes of `baton worker` after which starting it again the same way ends the same way:
 * 2, bad usage or a job module that does not load here (with `--handler-thread`, also one that
 * stopped loading or changed since it joined, found when a stopped handler's thread was
 * replaced); 4, the coordinator refused its setup
 * (the wrong secret, another job module, no shared protocol version, a name another worker
 * process holds). `localPool` and the
 * Slurm batch script do not restart a worker that exits with one of them.
 *
 * @example
 * ```ts
 * if (FINAL_WORKER_EXITS.includes(code)) throw new Error("a new worker would end the same way");
 * ```
 */
export const FINAL_WORKER_EXITS: readonly number[] = [2, REFUSED_EXIT];
