import type { GroupFailure } from "./machines/group.ts";

/**
 * Every error baton raises is a `BatonError` with a stable `code` and a message that says
 * what to do about it. Each subclass types `code` as the codes it can carry
 * (`StoreError["code"]`), so comparing one with a code it never has does not compile.
 *
 * @example
 * ```ts
 * try { await engine.run(graph); }
 * catch (err) {
 *   if (err instanceof StoreError && err.code === "STORE_LOCKED") console.error("another run holds the store");
 *   else if (err instanceof BatonError) console.error(err.code, err.message);
 * }
 * ```
 */
export class BatonError extends Error {
  constructor(
    readonly code: string,
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
    this.name = new.target.name;
  }
}

/**
 * The graph cannot run as written: a cycle, an unknown kind, a job no worker can take, bad input.
 * Thrown inside a handler (`ctx.need` of a bad job, a result that is not JSON), the same
 * attempt would fail the same way again, so the job is not retried (`retryable`).
 *
 * @example
 * ```ts
 * try {
 *   engine.run([job("triple", 1)]); // throws at once: nothing runs
 * } catch (err) {
 *   if (err instanceof GraphError) console.error(err.code, err.jobs); // "UNKNOWN_KIND" ["triple"]
 * }
 * ```
 */
export class GraphError extends BatonError {
  declare readonly code: "GRAPH_CYCLE" | "UNKNOWN_KIND" | "UNSATISFIABLE" | "NOT_JSON" | "BAD_JOB";
  readonly retryable = false;

  constructor(
    code: GraphError["code"],
    message: string,
    /** Ids (or kinds, before planning) of the jobs at fault. */
    readonly jobs: readonly string[] = [],
    options?: ErrorOptions,
  ) {
    super(code, message, options);
  }
}

/**
 * A frame broke the protocol; carries the close code the connection is closed with.
 *
 * @example
 * ```ts
 * // what baton's coordinator does with a frame that breaks the protocol (a worker sees 4000)
 * const refuse = (err: unknown) => {
 *   if (err instanceof ProtocolError) link.close(err.closeCode, err.message);
 * };
 * ```
 */
export class ProtocolError extends BatonError {
  declare readonly code: "BAD_FRAME";

  constructor(
    code: ProtocolError["code"],
    message: string,
    readonly closeCode: number,
  ) {
    super(code, message);
  }
}

/**
 * A job module could not be loaded or does not have the expected shape. Failing a job (a
 * worker whose module has no handler for the job's kind, or whose handler thread cannot load
 * the module again), it is not retried (`retryable`): every worker of a run has the same code,
 * so another attempt would meet the same module.
 *
 * @example
 * ```ts
 * createEngine({ jobs: { double: 2 } as never }); // JobModuleError: job kind "double" must be a handler function, …
 * ```
 */
export class JobModuleError extends BatonError {
  declare readonly code: "JOB_MODULE";
  readonly retryable = false;

  constructor(message: string) {
    super("JOB_MODULE", message);
  }
}

/**
 * A graph, job or simulation module could not be loaded: its file is not there
 * (`MODULE_NOT_FOUND`), it or a file it imports has a syntax error (`MODULE_SYNTAX`), it threw
 * while loading (`MODULE_THREW`: a top-level `throw`, a top-level `await` that rejected), it
 * imports a package that is not installed, or a local file that is not there
 * (`MODULE_MISSING_IMPORT`), it or a file it imports imports a name that the module it
 * imports does not export (`MODULE_MISSING_EXPORT`), or it failed otherwise (`MODULE_LOAD`). `at` names the file at
 * fault and, where known, the line and column; `cause` is what loading it threw (both only on
 * the thread that loaded it: a simulation's helper thread passes on the code and message).
 *
 * @example
 * ```ts
 * const modules = { graph: "graph.ts", handlers: "sim.ts" };
 * try {
 *   for await (const r of simulateSeeds(1, 10, { modules }, { threads: 1 })) console.log(r.ok);
 * } catch (err) {
 *   if (err instanceof ModuleLoadError && err.code === "MODULE_SYNTAX") console.error(err.at);
 *   // { file: "/home/me/helpers.js", line: 4, column: 3 }
 * }
 * ```
 */
export class ModuleLoadError extends BatonError {
  declare readonly code:
    | "MODULE_NOT_FOUND"
    | "MODULE_SYNTAX"
    | "MODULE_THREW"
    | "MODULE_MISSING_IMPORT"
    | "MODULE_MISSING_EXPORT"
    | "MODULE_LOAD";

  constructor(
    code: ModuleLoadError["code"],
    message: string,
    /** The file at fault (the module, or one it imports) and where in it, as far as known. */
    readonly at?:
      | { file: string; line?: number | undefined; column?: number | undefined }
      | undefined,
    options?: ErrorOptions,
  ) {
    super(code, message, options);
  }
}

/**
 * A setting was given a value it cannot take. Thrown inside a handler (a rank job whose launch
 * baton refuses: a `worldSize` in it, bad timeouts, a program or working directory that is not
 * there), another attempt would be refused the same way, so the job is not retried
 * (`retryable`): it fails at once with the message saying what to fix.
 *
 * @example
 * ```ts
 * await simulate({ seed: 1, jobs: 0 }); // ConfigError: simulate: jobs must be a whole number from 1 to 10000, not 0
 * ```
 */
export class ConfigError extends BatonError {
  declare readonly code: "CONFIG";
  readonly retryable = false;

  constructor(message: string, options?: ErrorOptions) {
    super("CONFIG", message, options);
  }
}

/**
 * A program that could not be run: not there (`shellCode` 127, as a shell exits for "command
 * not found") or there but not executable — a directory, no x bit, a `#!` interpreter that is
 * not executable (126). `baton launch` exits with `shellCode` when a rank's command is one.
 *
 * @example
 * ```ts
 * const error = new ProgramNotRunError('cannot start "trainn": no program trainn on PATH', 127);
 * process.exitCode = error.shellCode; // 127
 * ```
 */
export class ProgramNotRunError extends ConfigError {
  constructor(
    message: string,
    readonly shellCode: 126 | 127,
  ) {
    super(message);
  }
}

/**
 * A listener on a `Run` (`job`, `progress`, `job.progress`, `listening`, `store.reading`)
 * threw. The run is cancelled (results already stored stay stored) and rejects with this
 * error once its workers have stopped; `event` names the event, `cause` is what was thrown.
 *
 * @example
 * ```ts
 * const run = engine.run(graph);
 * const seen = new Map<string, string>();
 * run.on("job", (event) => {
 *   if (seen.get(event.id) === "completed") throw new Error(`${event.id} changed after completing`);
 *   seen.set(event.id, event.state);
 * });
 * try {
 *   await run;
 * } catch (error) {
 *   if (error instanceof ListenerError) console.error(error.event, error.cause);
 * }
 * ```
 */
export class ListenerError extends BatonError {
  declare readonly code: "LISTENER_THREW";

  constructor(
    readonly event: string,
    cause: unknown,
  ) {
    super(
      "LISTENER_THREW",
      `A "${event}" listener on the run threw: ${messageOf(cause)}. The run was cancelled (with a store, the results it wrote are reused by the next run). Fix the listener, or catch errors inside it: a listener must not throw.`,
      { cause },
    );
  }
}

/** A thrown value's message, or what it is when even that cannot be read. */
function messageOf(thrown: unknown): string {
  try {
    return thrown instanceof Error ? thrown.message : String(thrown);
  } catch {
    return `a value that cannot be shown (typeof ${typeof thrown})`;
  }
}

/**
 * The result store cannot be used, mostly found before any job runs: its directory cannot be a
 * directory because a file is in the way (`STORE_NOT_DIRECTORY`), cannot be created or
 * written (`STORE_NOT_WRITABLE`: permission denied, a read-only file system), a stored entry
 * cannot be read at all (`STORE_UNREADABLE`: another user's entry, a directory where an
 * entry belongs), or another `baton run` of the same graph is using it (`STORE_LOCKED`), or
 * its lock of that graph, or the folder it is made in, is another user's, which this one may
 * not read, write or remove (`STORE_LOCK_DENIED`: a store shared with that user; also another
 * user's registration of a dead run, one that took no lock, that `baton reap` may not
 * remove), or a newer
 * baton wrote it in a format this one does not know (`STORE_NEWER_FORMAT`: nothing of it is
 * touched). During a run: its disk had no room for results for longer than the run waits
 * (`STORE_FULL`: the run stopped, keeping what was stored). The message names the path and
 * says what to do.
 *
 * @example
 * ```ts
 * try {
 *   await createEngine({ jobs, store: "/etc/passwd" }).run(graph);
 * } catch (err) {
 *   if (err instanceof StoreError) console.error(err.code, err.path); // "STORE_NOT_DIRECTORY" "/etc/passwd"
 * }
 * ```
 */
export class StoreError extends BatonError {
  declare readonly code:
    | "STORE_NOT_DIRECTORY"
    | "STORE_NOT_WRITABLE"
    | "STORE_UNREADABLE"
    | "STORE_LOCKED"
    | "STORE_LOCK_DENIED"
    | "STORE_NEWER_FORMAT"
    | "STORE_FULL";

  constructor(
    code: StoreError["code"],
    message: string,
    /** The store's directory. */
    readonly dir: string,
    /** The file or directory at fault. */
    readonly path: string,
    options?: ErrorOptions,
  ) {
    super(code, message, options);
  }
}

/**
 * A worker pool cannot keep its workers alive: a worker slot died more often than its
 * restart budget allows (`WORKER_CRASH_LOOP`), a worker process could not be started
 * (`WORKER_SPAWN`), or one ended in a way a new one would too (`WORKER_CANNOT_START`: a job
 * module that does not load, or one the coordinator refused as not the module it hashed). The pool owns worker failure; job failures are the coordinator's.
 *
 * @example
 * ```ts
 * const run = createEngine({ jobs, workers: localPool({ jobsModule: "jobs.ts", count: 2 }) }).run(graph);
 * run.catch((err) => {
 *   if (err instanceof PoolError) console.error(err.message, "see", err.logFile);
 * });
 * ```
 */
export class PoolError extends BatonError {
  declare readonly code: "WORKER_CRASH_LOOP" | "WORKER_SPAWN" | "WORKER_CANNOT_START";

  constructor(
    code: PoolError["code"],
    message: string,
    /** Name of the worker at fault (`local-3.2`). */
    readonly worker: string,
    /** Its log file (none for a worker in the engine's own process). */
    readonly logFile?: string,
  ) {
    super(code, message);
  }
}

/**
 * A rank-group state file (manifest, lease, marker, cancel file, ack) does not follow its
 * format: not JSON, another format, a missing or mistyped field. Names the file and the field.
 * Baton writes these files whole (atomically), so one stays malformed until someone replaces
 * or removes it: a launch it blocks (its manifest cannot be reaped) is not retried (`retryable`).
 *
 * @example
 * ```ts
 * parseStateFile(MARKER_FORMAT, "{}", "/run/dep-1/rank-0.marker.json");
 * // RankFileError: /run/dep-1/rank-0.marker.json is not a valid baton.marker/1 file: …
 * ```
 */
export class RankFileError extends BatonError {
  declare readonly code: "RANK_FILE_MALFORMED";
  readonly retryable = false;

  constructor(
    message: string,
    /** The file at fault. */
    readonly path: string,
    /** The format it was read as (`baton.marker/1`). */
    readonly format: string,
    /**
     * What is wrong with it alone (`field "epoch" must be an integer ≥ 0; it is missing`),
     * for a message that quotes it in a sentence of its own, where the message's advice
     * (a file no baton process owns can be removed) does not fit.
     */
    readonly problem: string,
  ) {
    super("RANK_FILE_MALFORMED", message);
  }
}

/**
 * The Slurm pool cannot go on: an allocation ended in a failed state (`ALLOCATION_FAILED`,
 * naming it and its log), Slurm refused a submission (`SBATCH_REJECTED`) or keeps an
 * allocation pending for a reason it will never start it for as asked
 * (`ALLOCATION_UNSATISFIABLE`: a request beyond the partition's limits), a Slurm command
 * failed or timed out (`SLURM_COMMAND`, `SLURM_TIMEOUT`) or is not on the PATH
 * (`SLURM_MISSING`), no Slurm command has succeeded since the pool started
 * (`SLURM_UNREACHABLE`: no working Slurm client here), or `stop()` could not get the
 * queue to confirm that every allocation is gone (`STOP_UNCONFIRMED`, naming those left).
 *
 * @example
 * ```ts
 * try {
 *   await createEngine({ jobs, workers: slurmPool({ jobsModule: "/shared/jobs.ts" }), listen: "0.0.0.0:7000" }).run(graph);
 * } catch (err) {
 *   if (err instanceof SlurmError) console.error(err.code, err.allocations, err.logFile);
 * }
 * ```
 */
export class SlurmError extends BatonError {
  declare readonly code:
    | "ALLOCATION_FAILED"
    | "ALLOCATION_UNSATISFIABLE"
    | "SBATCH_REJECTED"
    | "SLURM_COMMAND"
    | "SLURM_MISSING"
    | "SLURM_TIMEOUT"
    | "SLURM_UNREACHABLE"
    | "STOP_UNCONFIRMED";

  constructor(
    code: SlurmError["code"],
    message: string,
    /** The allocations at fault (`1234_5`), if any. */
    readonly allocations: readonly string[] = [],
    /** The log of the allocation at fault, if one. */
    readonly logFile?: string,
  ) {
    super(code, message);
  }
}

/**
 * A rank group's teardown could not verify that every process of the deployment is gone:
 * names the deployment and each survivor with its state. Nothing was forgotten (manifest,
 * lease, handles), so calling `stop()` again retries the whole teardown from the start.
 *
 * @example
 * ```ts
 * try {
 *   await group.stop();
 * } catch (err) {
 *   if (err instanceof TeardownError) console.error(err.survivors); // [{ pid: 4711, state: "disk-sleep" }]
 * }
 * ```
 */
export class TeardownError extends BatonError {
  declare readonly code: "TEARDOWN_UNVERIFIED";

  constructor(
    readonly deployment: string,
    /** Processes of the deployment still alive at the final check, with their states. */
    readonly survivors: readonly { pid: number; state: string }[],
  ) {
    const named = survivors.map(({ pid, state }) => `${pid} (${state})`).join(", ");
    const stuck = survivors.some(({ state }) => state === "disk-sleep")
      ? "A process in disk-sleep (D) is stuck in the kernel and dies only when its I/O " +
        "returns: look at `cat /proc/PID/wchan` and the device or mount it waits on. "
      : "";
    super(
      "TEARDOWN_UNVERIFIED",
      `teardown of deployment ${deployment} is not verified: ${named} still alive after ` +
        `TERM, two KILLs and the marker sweep. ${stuck}Check them with \`ps -o pid,stat,args ` +
        "-p PID`, then call stop() again (or run `baton reap`): the manifest and lease were " +
        "kept, so the next attempt retries from the start.",
    );
  }
}

/**
 * A rank group could not be launched or did not finish well: the reaper could not clear the
 * way (`REAP_FAILED`), the deployment's name is held by a live launcher (here, or in an ssh
 * host's state dir) or an unreaped manifest (`DEPLOYMENT_BLOCKED`), a rank could not be
 * started (`LAUNCH_FAILED`), a rank was not ready within the load timeout
 * (`BARRIER_TIMEOUT`), a rank failed (`RANK_FAILED`, with its exit code and the tail of its
 * log) or its heartbeat went stale (`RANK_LOST`), or the launcher could not renew its lease
 * and stopped the ranks (`LEASE_LOST`); `ready` rejects with `STOPPED` when the group was
 * stopped or finished before every rank was ready. When the group's own teardown failed as
 * well, `teardownError` says so: the group's error is still this one, and `stop()` retries
 * the teardown. `retryable` is `false` when another launch would fail the same way (a rank's
 * program or working directory is not there, a state dir this user may not write, a name
 * blocked by a manifest no reap can clear): a rank job that fails with it is not retried. A
 * name a live launcher holds, or one whose orphans a reap could not stop yet, may be free at
 * the next launch, which reaps again: retried.
 *
 * @example
 * ```ts
 * try {
 *   await group.wait();
 * } catch (err) {
 *   if (err instanceof RankGroupError && err.code === "RANK_FAILED") process.exitCode = err.details.exitCode ?? 1;
 * }
 * ```
 */
export class RankGroupError extends BatonError {
  declare readonly code: GroupFailure["code"] | "STOPPED";

  constructor(
    code: RankGroupError["code"],
    message: string,
    readonly deployment: string,
    readonly details: {
      /** The rank at fault. */
      rank?: number | undefined;
      /**
       * The exit code a launcher should exit with: the rank's code, or 128 + its signal; for a
       * rank whose program could not be run, a shell's 127 (not there) or 126 (not executable).
       */
      exitCode?: number | undefined;
      /** The rank's log file. */
      logFile?: string | undefined;
      /** The teardown that followed, when it could not be verified. */
      teardownError?: Error | undefined;
    } = {},
    /** `false` when another launch would fail the same way; undefined when it may not. */
    readonly retryable?: false | undefined,
  ) {
    super(code, message);
  }
}

/**
 * A command on a remote host could not be run through `ssh`: the connection failed
 * (`SSH_UNREACHABLE`: unknown host key, refused key, no route — the message quotes ssh), the
 * call outlived its timeout and was killed (`SSH_TIMEOUT`), or the remote side answered
 * something baton cannot read (`SSH_REMOTE`). Names the host. `retryable` is `false` when the
 * host said something another attempt would meet again (a rank's program or working
 * directory is not there): a rank job that fails with it is not retried.
 *
 * @example
 * ```ts
 * try {
 *   await host.run("true", { timeoutMs: 5_000 });
 * } catch (err) {
 *   if (err instanceof RemoteHostError) console.error(err.host, err.message); // what ssh said
 * }
 * ```
 */
export class RemoteHostError extends BatonError {
  declare readonly code: "SSH_UNREACHABLE" | "SSH_TIMEOUT" | "SSH_REMOTE";

  constructor(
    code: RemoteHostError["code"],
    message: string,
    /** The host spec at fault (`ssh://user@host:port`). */
    readonly host: string,
    /** `false` when another attempt would meet the same; undefined when it may not. */
    readonly retryable?: false | undefined,
    /**
     * 127 when the rank's program is not on the host, as a shell exits for "command not
     * found" (`ProgramNotRunError`'s, for a rank on this machine); `baton launch` exits with it.
     */
    readonly shellCode?: 127 | undefined,
  ) {
    super(code, message);
  }
}

/**
 * Thrown by a handler when another attempt cannot help (the input is invalid, a permission
 * was refused for good): the coordinator fails the job at once instead of retrying it up to
 * `retries` times, and its `error` carries `retryable: false`. Any thrown error with a
 * `retryable` property of `false` counts the same, so another library's errors can say so too.
 *
 * @example
 * ```ts
 * const jobs = defineJobs({
 *   async load(path: string) {
 *     if (!path.endsWith(".csv")) throw new NonRetryableError(`${path} is not a .csv file; give a .csv`);
 *     return readFile(path, "utf8");
 *   },
 * });
 * ```
 */
export class NonRetryableError extends Error {
  readonly retryable = false;

  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "NonRetryableError";
  }
}
