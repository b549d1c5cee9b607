import { checkOptionNames } from "../optionNames.ts";
import { requireOptionalFunction } from "../requireOptionalFunction.ts";
import { nodeFiles } from "../runtime/nodeFiles.ts";
import { nodeProcs } from "../runtime/nodeProcs.ts";
import type { Clock } from "../runtime/ports.ts";
import { requirePositiveMs } from "../runtime/requirePositiveMs.ts";
import { createRank, type Rank } from "./rank.ts";
import { readRankEnv } from "./rankEnv.ts";

/**
 * The exit code of a rank that left because its launcher is gone or its lease is stale.
 *
 * @example
 * ```ts
 * // startRank exits with it by itself; a rank in another language should do the same
 * const { code } = await nodeProcs().spawn({ argv: ["python3", "rank.py"], newGroup: true, logFile: "rank-0.log" }).exited;
 * if (code === ORPHANED_EXIT_CODE) console.error("rank 0 left: its launcher was gone");
 * ```
 */
export const ORPHANED_EXIT_CODE = 1;

/** What `startRank` takes; every field has a default, so `startRank()` is the usual call. */
export interface StartRankOptions {
  /** The environment to read (default `process.env`). */
  env?: Record<string, string | undefined> | undefined;
  /** How often the launcher's pid and lease are checked (default 1000 ms, as `createRank`'s). */
  watchEveryMs?: number | undefined;
  /**
   * Called once when the launcher is gone or its lease is stale, before the process exits
   * with `ORPHANED_EXIT_CODE`: release what only this process can (the marker already says
   * `exiting`). Keep it short; the process exits when it settles, or after 5 s.
   */
  onOrphaned?: ((reason: string) => void | Promise<void>) | undefined;
}

/** Every option `startRank` takes (the compiler holds this to `StartRankOptions`). */
const START_RANK_OPTIONS: Record<keyof StartRankOptions, true> = {
  env: true,
  watchEveryMs: true,
  onOrphaned: true,
};

/** How long `onOrphaned` may run before the process exits anyway. */
const ORPHANED_GRACE_MS = 5_000;

/** Node's timers, unref'd: a rank's heartbeat and watch never keep a finished program alive. */
const backgroundClock: Clock = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms).unref(),
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout | undefined),
};

/**
 * The Node rank library. Reads the rank environment the launcher set (`RANK`, `WORLD_SIZE`,
 * `BATON_DEPLOYMENT`, `BATON_STATE_DIR`, `BATON_LAUNCHER_PID`, …), writes this rank's marker
 * (phase `loading`), heartbeats it, and exits the process (code 1, after `onOrphaned`) when
 * the launcher is gone or its lease is stale. Warnings (an ignored cancel file, a failed
 * marker write) go to stderr, which the launcher keeps in the rank's log. Call `ready()` once
 * loaded, `step(apply)` at every step boundary to apply cancel epochs, `begin`/`end` around
 * requests, and `close()` before exiting. Options that are no object (`null`), a name it does
 * not take, a `watchEveryMs` that is no positive number or an `onOrphaned` that is no function
 * are a `ConfigError` before the environment is read.
 *
 * @example
 * ```ts
 * import { cancelCovers, startRank } from "baton";
 * const rank = await startRank();
 * await loadModel();
 * await rank.ready();
 * while (running) {
 *   await rank.step((cancel) => {
 *     for (const id of rank.inFlight()) if (cancelCovers(cancel, id)) abort(id); // abort → rank.end(id)
 *   });
 *   await serveOneBatch(); // rank.begin(id) … rank.end(id) per request
 * }
 * await rank.close();
 * ```
 */
export async function startRank(options: StartRankOptions = {}): Promise<Rank> {
  checkOptionNames("startRank", options, START_RANK_OPTIONS, {
    shape: "{ env, watchEveryMs, onOrphaned }, or nothing",
  });
  if (options.watchEveryMs !== undefined) {
    requirePositiveMs("startRank", "watchEveryMs", options.watchEveryMs);
  }
  requireOptionalFunction("startRank", "onOrphaned", "(reason) => …", options.onOrphaned);
  const env = readRankEnv(options.env ?? process.env);
  const label = `baton rank ${env.rank} (${env.deployment})`;
  return createRank(
    env,
    { files: nodeFiles(), clock: backgroundClock, procs: nodeProcs(), pid: process.pid },
    {
      watchEveryMs: options.watchEveryMs,
      warn: (message) => process.stderr.write(`${label}: ${message}\n`),
      async onOrphaned(reason) {
        process.stderr.write(`${label}: ${reason}; exiting\n`);
        setTimeout(() => process.exit(ORPHANED_EXIT_CODE), ORPHANED_GRACE_MS).unref();
        try {
          await options.onOrphaned?.(reason);
        } finally {
          process.exit(ORPHANED_EXIT_CODE);
        }
      },
    },
  );
}
