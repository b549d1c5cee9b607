import { argumentError } from "../argumentError.ts";
import { RankFileError } from "../errors.ts";
import { checkOptionNames } from "../optionNames.ts";
import { requireObject } from "../requireObject.ts";
import { requireOptionalFunction } from "../requireOptionalFunction.ts";
import type { Clock, Files, Procs } from "../runtime/ports.ts";
import { requireMethods } from "../runtime/requireMethods.ts";
import { requirePositiveMs } from "../runtime/requirePositiveMs.ts";
import { requireTimerClock } from "../runtime/requireTimerClock.ts";
import { ACK_FORMAT } from "./ackFormat.ts";
import { CANCEL_FORMAT, type Cancel } from "./cancelFormat.ts";
import { type DeploymentPaths, deploymentPaths } from "./deploymentPaths.ts";
import { launcherGone } from "./launcherWatch.ts";
import { LEASE_FORMAT, type Lease } from "./leaseFormat.ts";
import { MARKER_FORMAT, type MarkerPhase } from "./markerFormat.ts";
import type { RankEnv } from "./rankEnv.ts";
import { encodeStateFile, readStateFile } from "./stateFile.ts";

/** What a rank needs from the world. */
export interface RankPorts {
  files: Files;
  clock: Clock;
  /** Only `inspect` is used: the launcher's liveness. */
  procs: Pick<Procs, "inspect">;
  /** This process's pid, written into the marker. */
  pid: number;
}

/** How often a rank checks its launcher's pid and lease by default (`RankOptions.watchEveryMs`). */
export const RANK_WATCH_EVERY_MS = 1_000;

/** What `createRank` takes beside the rank's environment and ports. */
export interface RankOptions {
  /** How often the launcher's pid and lease are checked (default 1000 ms). */
  watchEveryMs?: number | undefined;
  /**
   * Called once when the launcher is gone or its lease is stale, after the marker says
   * `exiting` and every timer is stopped. The Node `startRank` exits the process after it.
   */
  onOrphaned?: ((reason: string) => void | Promise<void>) | undefined;
  /** Where the rank reports a file it ignored or could not write (default: nowhere). */
  warn?: ((message: string) => void) | undefined;
}

/** Every option `createRank` takes (the compiler holds this to `RankOptions`). */
const RANK_OPTIONS: Record<keyof RankOptions, true> = {
  watchEveryMs: true,
  onOrphaned: true,
  warn: true,
};

/** One rank of a deployment, as the rank process itself sees it. */
export interface Rank {
  readonly env: RankEnv;
  readonly paths: DeploymentPaths;
  readonly phase: MarkerPhase;
  /** The last cancel epoch applied, or the watermark the rank started with; 0 if none. */
  readonly epoch: number;
  /** Requests in flight (`begin` minus `end`). */
  readonly active: number;
  /** The ids of the requests in flight. */
  inFlight(): string[];
  /** Loaded and ready to serve: the marker's phase becomes `ready` (the launcher's barrier). */
  ready(): Promise<void>;
  /** No new work: the marker's phase becomes `draining`. */
  drain(): Promise<void>;
  /** A request starts; the marker's `active` follows. */
  begin(id: string): void;
  /** A request ends (finished or cancelled); unknown ids are ignored. */
  end(id: string): void;
  /**
   * A step boundary: if the cancel file holds an epoch of this deployment above `epoch`, runs
   * `apply(cancel)` (which should `end` the requests it cancels), then records the epoch,
   * writes the ack with the requests still in flight and rewrites the marker. Returns the
   * cancel applied, or undefined. Each epoch is applied once; a file of another deployment
   * or a malformed one is ignored (and reported through `warn`). Call it from one loop: a
   * call made while a step is running shares that step (and its `apply`).
   */
  step(apply: (cancel: Cancel) => void | Promise<void>): Promise<Cancel | undefined>;
  /** Stops the heartbeat and the launcher watch; the marker's phase becomes `exiting`. */
  close(): Promise<void>;
}

/**
 * Starts the rank side of a deployment on the given ports: reads the cancel file once as a
 * watermark (epochs up to it are never applied), writes the marker (phase `loading`), then
 * heartbeats it every `env.markerHeartbeatMs` and checks the launcher every `watchEveryMs`.
 * When the launcher's pid is gone (a zombie counts as gone) or its lease is stale, it stops,
 * marks itself `exiting` and calls `onOrphaned`. Rejects when the first marker cannot be
 * written. Node ranks use `startRank`, which supplies the ports and exits the process.
 * Throws a `ConfigError` saying what it takes for an `env` that is not one `readRankEnv` read
 * (`process.env` itself), ports without the methods it calls, options that are no object or
 * name one it does not take (a typo such as `watchEvery` was ignored), a `watchEveryMs` that is
 * no positive number, or an `onOrphaned` or `warn` that is no function.
 *
 * @example
 * ```ts
 * const rank = await createRank(readRankEnv(process.env), { files, clock, procs, pid: 4242 }, {
 *   onOrphaned: (reason) => shutDown(reason),
 * });
 * await rank.ready();
 * for (;;) {
 *   await rank.step((cancel) => abortMatching(cancel));
 *   await doOneStep();
 * }
 * ```
 */
export async function createRank(
  env: RankEnv,
  ports: RankPorts,
  options: RankOptions = {},
): Promise<Rank> {
  checkRankArguments(env, ports, options);
  const { files, clock } = ports;
  const paths = deploymentPaths(env.stateDir, env.deployment);
  const startedAt = clock.now();
  const watchEveryMs = options.watchEveryMs ?? RANK_WATCH_EVERY_MS;
  let lastWarning: string | undefined;
  const warn = (message: string) => {
    if (message === lastWarning) return;
    lastWarning = message;
    options.warn?.(message);
  };

  /** The cancel file, if it is a valid one of this deployment. */
  const readCancel = async (): Promise<Cancel | undefined> => {
    let cancel: Cancel | undefined;
    try {
      cancel = await readStateFile(files, CANCEL_FORMAT, paths.cancel);
    } catch (error) {
      if (!(error instanceof RankFileError)) throw error;
      warn(`ignoring the cancel file: ${error.message}`);
      return undefined;
    }
    if (cancel !== undefined && cancel.deployment !== env.deployment) {
      warn(
        `ignoring ${paths.cancel}: it belongs to deployment ${cancel.deployment}, not ${env.deployment}`,
      );
      return undefined;
    }
    return cancel;
  };

  let phase: MarkerPhase = "loading";
  let epoch = (await readCancel())?.epoch ?? 0;
  const requests = new Set<string>();
  let closed = false;

  // Marker writes are serialised; calls made while one is waiting share it, and each write
  // takes the state of the moment it starts, so a burst of changes costs two writes at most.
  let chain: Promise<void> = Promise.resolve();
  let queued: Promise<void> | undefined;
  const writeMarker = (): Promise<void> => {
    if (queued !== undefined) return queued;
    const write = chain.then(() => {
      queued = undefined;
      return files.writeAtomic(
        paths.marker(env.rank),
        encodeStateFile(MARKER_FORMAT, {
          deployment: env.deployment,
          rank: env.rank,
          pid: ports.pid,
          phase,
          startedAt,
          heartbeatAt: clock.now(),
          active: requests.size,
          epoch,
        }),
      );
    });
    queued = write;
    chain = write.catch(() => {});
    return write;
  };
  const writeMarkerSoon = () => {
    writeMarker().catch((error: Error) => warn(`cannot write the marker: ${error.message}`));
  };

  await writeMarker();

  const readLease = async (): Promise<Lease | undefined> => {
    try {
      const lease = await readStateFile(files, LEASE_FORMAT, paths.lease);
      return lease?.deployment === env.deployment ? lease : undefined;
    } catch (error) {
      if (!(error instanceof RankFileError)) throw error;
      warn(`ignoring the lease: ${error.message}`);
      return undefined;
    }
  };

  let heartbeatTimer: unknown;
  let watchTimer: unknown;
  const heartbeat = () => {
    writeMarkerSoon();
    heartbeatTimer = clock.setTimeout(heartbeat, env.markerHeartbeatMs);
  };
  const watch = async () => {
    const reason = launcherGone({
      launcherPid: env.launcherPid,
      process: ports.procs.inspect(env.launcherPid),
      lease: await readLease(),
      now: clock.now(),
      noLeaseSince: startedAt,
      leaseStaleMs: env.leaseStaleMs,
    });
    if (closed) return;
    if (reason === undefined) {
      watchTimer = clock.setTimeout(watchSoon, watchEveryMs);
      return;
    }
    await rank.close();
    await options.onOrphaned?.(reason);
  };
  const watchSoon = () => {
    watch().catch((error: Error) => {
      warn(`the launcher watch failed: ${error.message}`);
      if (!closed) watchTimer = clock.setTimeout(watchSoon, watchEveryMs);
    });
  };
  heartbeatTimer = clock.setTimeout(heartbeat, env.markerHeartbeatMs);
  watchTimer = clock.setTimeout(watchSoon, watchEveryMs);

  const setPhase = async (next: MarkerPhase) => {
    if (closed) return;
    phase = next;
    await writeMarker();
  };

  let stepping: Promise<Cancel | undefined> | undefined;
  const consume = async (
    apply: (cancel: Cancel) => void | Promise<void>,
  ): Promise<Cancel | undefined> => {
    const cancel = await readCancel();
    if (closed || cancel === undefined || cancel.epoch <= epoch) return undefined;
    await apply(cancel);
    epoch = cancel.epoch;
    await files.writeAtomic(
      paths.ack(env.rank),
      encodeStateFile(ACK_FORMAT, {
        deployment: env.deployment,
        rank: env.rank,
        epoch,
        active: requests.size,
        at: clock.now(),
      }),
    );
    await writeMarker();
    return cancel;
  };

  const rank: Rank = {
    env,
    paths,
    get phase() {
      return phase;
    },
    get epoch() {
      return epoch;
    },
    get active() {
      return requests.size;
    },
    inFlight: () => [...requests],
    ready: () => setPhase("ready"),
    drain: () => setPhase("draining"),
    begin(id) {
      if (requests.has(id)) return;
      requests.add(id);
      if (!closed) writeMarkerSoon();
    },
    end(id) {
      if (!requests.delete(id)) return;
      if (!closed) writeMarkerSoon();
    },
    step(apply) {
      stepping ??= consume(apply).finally(() => {
        stepping = undefined;
      });
      return stepping;
    },
    async close() {
      if (closed) return;
      clock.clearTimeout(heartbeatTimer);
      clock.clearTimeout(watchTimer);
      phase = "exiting";
      closed = true;
      await writeMarker().catch((error: Error) =>
        warn(`cannot write the marker: ${error.message}`),
      );
    },
  };
  return rank;
}

/**
 * Refuses what a JavaScript rank program may give `createRank` by mistake, each of which
 * failed with a TypeError from inside (`Cannot destructure property 'files' of undefined`)
 * or, for `process.env` as `env`, with a TypeError about `stateDir.replace`.
 */
function checkRankArguments(env: RankEnv, ports: RankPorts, options: RankOptions): void {
  if (typeof env !== "object" || env === null || typeof env.deployment !== "string") {
    throw argumentError(
      "createRank",
      "env",
      "the rank's environment as readRankEnv(process.env) reads it",
      env,
      // An environment is not shown: it holds secrets.
      typeof env === "object" && env !== null ? "an object with no deployment" : undefined,
    );
  }
  requireObject("createRank", "ports", "{ files, clock, procs, pid }", ports);
  requireMethods(
    "createRank",
    "ports.files",
    ports.files,
    ["read", "writeAtomic", "remove"],
    "a Files, such as nodeFiles()",
  );
  requireTimerClock("createRank", "ports.clock", ports.clock);
  requireMethods(
    "createRank",
    "ports.procs",
    ports.procs,
    ["inspect"],
    "a Procs, such as nodeProcs()",
  );
  checkOptionNames("createRank", options, RANK_OPTIONS, {
    shape: "{ watchEveryMs, onOrphaned, warn }",
  });
  if (options.watchEveryMs !== undefined) {
    requirePositiveMs("createRank", "watchEveryMs", options.watchEveryMs);
  }
  requireOptionalFunction("createRank", "onOrphaned", "(reason) => …", options.onOrphaned);
  requireOptionalFunction("createRank", "warn", "(message) => …", options.warn);
}
