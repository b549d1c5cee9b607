import { dirname } from "node:path";
import { BatonError, ConfigError, RankGroupError } from "../errors.ts";
import type { Json } from "../graph/job.ts";
import { requireObject } from "../requireObject.ts";
import { type GroupProgress, groupProgressMessage, watchGroup } from "../viz/groupProgress.ts";
import {
  checkEndedLogsRetention,
  type EndedLogsRetention,
  endedLogsRetention,
  pruneDeploymentLogs,
} from "./deploymentLogs.ts";
import { holdExitUntil } from "./exitHolds.ts";
import type { JobContext } from "./jobModule.ts";
import { launchGroup } from "./launchGroup.ts";
import { nodeClock } from "./nodeClock.ts";
import type { Clock } from "./ports.ts";
import type { LaunchSpec, LeftRunning } from "./rankGroup.ts";
import { requireJobContext } from "./requireJobContext.ts";
import { isInstance } from "./serializeThrown.ts";

/** A rank job reports its group at most once per this many ms; changes in between coalesce. */
export const GROUP_REPORT_INTERVAL_MS = 250;

/**
 * What a rank job launches: the command every rank runs, and optionally where its state
 * lives, environment defaults, a working directory, a name and timeouts. The number of ranks
 * is the job's own `ranks` option. `keepEndedLogs` says how long the folders of ended
 * deployments in its state dir stay (`{ keep, keptMs }`, or `false` to keep them all;
 * default: `BATON_KEEP_ENDED_LOGS` of the worker, else the newest 20 and a week).
 */
export type RankLaunch = Omit<LaunchSpec, NotRankLaunchKey> & {
  keepEndedLogs?: EndedLogsRetention | undefined;
};

/** What `launchGroup` takes that a rank job does not: the worker sets these itself. */
type NotRankLaunchKey = "worldSize" | "ports" | "logger" | "operatorEnv" | "inspect";

/** The keys of `NotRankLaunchKey`, for the check of what a `ranks` function returned. */
const NOT_RANK_LAUNCH_KEYS: Record<NotRankLaunchKey, true> = {
  worldSize: true,
  ports: true,
  logger: true,
  operatorEnv: true,
  inspect: true,
};

/**
 * A rank job's result: its deployment, how each rank ended (all 0: it succeeded), and what the
 * ranks left running that the group's teardown stopped (a helper a rank started and forgot,
 * as `GroupExit.leftRunning` names it), only when there was any.
 */
export type RankJobResult = {
  deployment: string;
  worldSize: number;
  ranks: { rank: number; code: number | null }[];
  leftRunning?: LeftRunning[];
};

/**
 * Runs a rank job inside the worker that leased it: launches its group with `launchGroup`
 * (the reaper, the barrier, the watch), and resolves with the group's outcome when every rank
 * exited 0. A failing rank fails the job with the group's `RankGroupError` (retried as any
 * failure is); a launch that cannot work (a spec `launchGroup` refuses, a program or working
 * directory that is not there, a rank that exited 127 or 126 with its shell's or env's own
 * "not found" as its log's last line, see `commandNotRun`: `retryable: false`) is not retried. A name that is not free
 * yet is retried, and its message says to give the job a backoff and each job its own name. While it runs, the group's
 * state and each rank's phase, pid and exit are the job's progress (a `GroupProgress` report
 * as the message, at most one every
 * `GROUP_REPORT_INTERVAL_MS`, the last one before the result), which the dashboard shows.
 * The job's AbortSignal — the run was cancelled, the lease was withdrawn, the
 * worker lost its coordinator — stops the group with a verified teardown. A worker process
 * that dies leaves ranks that see their launcher gone and exit; the next launch's reaper (or
 * `baton reap`) clears what is left. Once the group has ended, the folders of deployments
 * of this user's in its state dir that ended long ago are removed (`pruneDeploymentLogs`:
 * by default beyond the newest 20, after a week; `keepEndedLogs`), so a state dir that runs
 * rank jobs every day does not grow for ever. A launch that is no object, or a `ctx` that is
 * not its handler's, is a `ConfigError`.
 *
 * @example
 * ```ts
 * // the handler of a rank job returns what to launch; the worker that leases it calls runRankJob
 * const jobs = defineJobs({
 *   train: { ranks: (input: { lr: number }) => ["python3", "train.py", "--lr", String(input.lr)] },
 * });
 * const result = await createEngine({ jobs }).run([job("train", { lr: 0.1 }, { ranks: 4 })]);
 * ```
 */
export async function runRankJob(given: RankLaunch, ctx: JobContext): Promise<Json> {
  requireObject("runRankJob", "the launch", "what a rank job launches, { argv, … }", given);
  requireJobContext("runRankJob", ctx);
  const { keepEndedLogs, ...launch } = given;
  checkRankLaunch(launch, ctx.job.kind);
  const worldSize = ctx.job.ranks;
  if (worldSize === undefined) {
    throw new ConfigError(
      `job kind "${ctx.job.kind}" launches ranks, so its jobs need the ranks option: job("${ctx.job.kind}", input, { ranks: 4 })`,
    );
  }
  // Checked before any rank starts, as the launch is.
  if (keepEndedLogs !== undefined) {
    checkEndedLogsRetention(`job kind "${ctx.job.kind}"`, keepEndedLogs);
  }
  const retention = keepEndedLogs ?? endedLogsRetention(process.env);
  const clock = nodeClock();
  const reporter = groupReporter(ctx, clock);
  const group = launchGroup({ ...launch, worldSize, logger: ctx.log, inspect: reporter.inspect });
  const signal = ctx.signal;
  const stop = () => {
    // A worker leaving the run exits once this teardown has ended, not in the middle of it.
    holdExitUntil(
      group.stop(`job ${ctx.job.id} was aborted`).catch((error: unknown) => {
        ctx.log.error({ err: error, deployment: group.deployment }, "rank job teardown failed");
      }),
    );
  };
  if (signal.aborted) stop();
  else signal.addEventListener("abort", stop, { once: true });
  try {
    const exit = await group.wait().catch((error: unknown) => {
      throw isInstance(error, RankGroupError) ? forTheJob(error, ctx.job) : error;
    });
    if (exit.status === "stopped") {
      throw signal.reason instanceof Error
        ? signal.reason
        : new BatonError("ABORTED", `rank job ${ctx.job.id} was stopped: ${exit.reason}`);
    }
    const result: RankJobResult = {
      deployment: group.deployment,
      worldSize,
      ranks: exit.ranks.map(({ rank, code }) => ({ rank, code })),
      ...(exit.leftRunning.length > 0 && { leftRunning: exit.leftRunning }),
    };
    return result as unknown as Json;
  } finally {
    signal.removeEventListener("abort", stop);
    // The group's last state goes out before the job's result does.
    reporter.flush();
    // Once the group has ended, its own folder is the newest: never one of those removed.
    await pruneDeploymentLogs(dirname(group.dir), {
      now: clock.now(),
      logger: ctx.log,
      retention,
    });
  }
}

/**
 * A group's error as the job's: a name that is not free (`DEPLOYMENT_BLOCKED`) but may be
 * (its launcher ends, a reap succeeds) is retried, so the message adds what makes a retry
 * come late enough and what keeps jobs from sharing a name. Any other error is the group's.
 */
function forTheJob(error: RankGroupError, job: JobContext["job"]): RankGroupError {
  if (error.code !== "DEPLOYMENT_BLOCKED" || error.retryable === false) return error;
  const advice = ` Each retry of job ${job.id} (kind "${job.kind}", this was attempt ${job.attempt}) launches it again, which works only once the name is free: give the job a backoff that outlasts what holds the name, job("${job.kind}", input, { backoff: { initialMs: 30_000 } }), or its retries follow at once and fail alike. Jobs that run at the same time never share a name: let each job's ranks function give its own name (from its input), or give none.`;
  return new RankGroupError(
    error.code,
    error.message + advice,
    error.deployment,
    error.details,
    error.retryable,
  );
}

/**
 * Refuses a key of `launchGroup`'s that a rank job's launch does not take, which the worker
 * set over the user's without a word: `worldSize` (the job's `ranks` option is the group's
 * size: a launch's `worldSize: 8` ran a group of the job's 4), or the worker's own `logger`,
 * `inspect`, `ports` and `operatorEnv`. The other keys are `launchGroup`'s to check.
 */
function checkRankLaunch(launch: object, kind: string): void {
  for (const [name, value] of Object.entries(launch)) {
    if (value === undefined || !Object.hasOwn(NOT_RANK_LAUNCH_KEYS, name)) continue;
    throw new ConfigError(
      name === "worldSize"
        ? `the ranks function of job kind "${kind}" returned worldSize ${String(value)}, which a rank job does not take: the job's ranks option is its group's size; leave worldSize out and give each job its size, job("${kind}", input, { ranks: ${String(value)} })`
        : `the ranks function of job kind "${kind}" returned ${name}, which a rank job does not take: the worker that launches the group sets it; leave it out`,
    );
  }
}

/**
 * Sends a rank group's reports as a job's progress (`ctx.progress({ message })`): the first at
 * once, then at most one per `GROUP_REPORT_INTERVAL_MS` (the latest; the ones in between are
 * dropped), and the pending one when `flush()` is called. A report that cannot be sent is
 * logged, never thrown into the group's machines.
 *
 * @example
 * ```ts
 * const reporter = groupReporter(ctx, nodeClock());
 * const group = launchGroup({ argv, worldSize: 2, inspect: reporter.inspect });
 * await group.wait().finally(() => reporter.flush());
 * ```
 */
export function groupReporter(
  ctx: Pick<JobContext, "progress" | "log">,
  clock: Clock,
): { inspect: ReturnType<typeof watchGroup>; flush(): void } {
  let pending: GroupProgress | undefined;
  let timer: unknown;
  let sentAt = Number.NEGATIVE_INFINITY;
  const flush = () => {
    clock.clearTimeout(timer);
    timer = undefined;
    if (pending === undefined) return;
    const message = groupProgressMessage(pending);
    pending = undefined;
    sentAt = clock.now();
    try {
      ctx.progress({ message });
    } catch (error) {
      ctx.log.warn({ err: error }, "rank group progress not sent");
    }
  };
  const inspect = watchGroup((progress) => {
    pending = progress;
    if (timer !== undefined) return;
    const wait = sentAt + GROUP_REPORT_INTERVAL_MS - clock.now();
    if (wait <= 0) flush();
    else timer = clock.setTimeout(flush, wait);
  });
  return { inspect, flush };
}
