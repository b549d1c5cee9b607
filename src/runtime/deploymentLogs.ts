import { join } from "node:path";
import type { Logger } from "pino";
import { ConfigError } from "../errors.ts";
import { isDeploymentId, OUTCOME_FILE, rankFileName } from "../rank/deploymentPaths.ts";
import { durationMs } from "./duration.ts";
import { MOST_KEPT_LOGS } from "./mostKeptLogs.ts";
import { nodeFiles } from "./nodeFiles.ts";
import type { Files } from "./ports.ts";
import { requireWhole } from "./requireWhole.ts";

/** How many ended deployments' folders a state dir keeps, however old. */
export const KEEP_ENDED_DEPLOYMENTS = 20;

/** An ended deployment's folder is kept this long after it ended, however many newer there are. */
export const ENDED_DEPLOYMENT_KEPT_MS = 7 * 24 * 60 * 60 * 1000;

/**
 * How long the folders of ended deployments stay: one is removed once it is beyond the
 * newest `keep` and ended more than `keptMs` ago. `false` keeps them all.
 */
export type EndedLogsRetention = { keep: number; keptMs: number } | false;

/** What a state dir keeps when nobody says: the newest 20, and a week of them. */
export const DEFAULT_ENDED_LOGS_RETENTION: EndedLogsRetention = {
  keep: KEEP_ENDED_DEPLOYMENTS,
  keptMs: ENDED_DEPLOYMENT_KEPT_MS,
};

/** The environment variable that sets the retention of rank jobs and `baton launch`. */
export const KEEP_ENDED_LOGS_ENV = "BATON_KEEP_ENDED_LOGS";

/**
 * Reads a retention as `--keep-ended-logs` and {@link KEEP_ENDED_LOGS_ENV} take it:
 * `COUNT[,AGE]` (keep the newest COUNT, 1 to `MOST_KEPT_LOGS`, and any that ended within AGE: a
 * duration such as `7d` or `12h`, or 0; default 7d) or `forever`. COUNT is never 0: the
 * newest is the deployment that just ended, whose log a failed rank's error names. Anything
 * else is a `ConfigError` naming `source` (the flag or the variable) and what it got.
 *
 * @example
 * ```ts
 * parseEndedLogsRetention("5,1d", "--keep-ended-logs"); // { keep: 5, keptMs: 86400000 }
 * parseEndedLogsRetention("forever", "--keep-ended-logs"); // false
 * ```
 */
export function parseEndedLogsRetention(text: string, source: string): EndedLogsRetention {
  if (text.trim() === "forever") return false;
  const [count = "", age, ...rest] = text.split(",").map((part) => part.trim());
  const keep =
    /^\d+$/.test(count) && Number(count) >= 1 && Number(count) <= MOST_KEPT_LOGS
      ? Number(count)
      : undefined;
  const keptMs = age === undefined ? ENDED_DEPLOYMENT_KEPT_MS : age === "0" ? 0 : durationMs(age);
  if (keep === undefined || keptMs === undefined || rest.length > 0) {
    throw new ConfigError(
      `${source} must be COUNT[,AGE] (keep the logs of the newest COUNT ended deployments, 1 to ${MOST_KEPT_LOGS}, and of any that ended within AGE, such as 7d or 12h, or 0; default ${KEEP_ENDED_DEPLOYMENTS},7d) or forever (keep them all), not ${JSON.stringify(text)}`,
    );
  }
  return { keep, keptMs };
}

/**
 * The retention `env` sets ({@link KEEP_ENDED_LOGS_ENV}), else the default; a value that is
 * not one is a `ConfigError` naming the variable.
 *
 * @example
 * ```ts
 * endedLogsRetention({ BATON_KEEP_ENDED_LOGS: "forever" }); // false
 * ```
 */
export function endedLogsRetention(env: NodeJS.ProcessEnv): EndedLogsRetention {
  const text = env[KEEP_ENDED_LOGS_ENV];
  return text === undefined
    ? DEFAULT_ENDED_LOGS_RETENTION
    : parseEndedLogsRetention(text, KEEP_ENDED_LOGS_ENV);
}

/**
 * Refuses a retention given in code (`where`: whose option) that is not `false` or
 * `{ keep, keptMs }` of whole numbers (`keep` 1 to `MOST_KEPT_LOGS`, as for {@link parseEndedLogsRetention}),
 * with a `ConfigError`.
 */
export function checkEndedLogsRetention(where: string, retention: unknown): void {
  if (retention === false) return;
  if (typeof retention !== "object" || retention === null) {
    throw new ConfigError(
      `${where}: keepEndedLogs must be { keep, keptMs } or false (keep them all), not ${JSON.stringify(retention)}`,
    );
  }
  const { keep, keptMs } = retention as { keep?: unknown; keptMs?: unknown };
  requireWhole(where, "keepEndedLogs.keep", keep, 1, MOST_KEPT_LOGS);
  requireWhole(where, "keepEndedLogs.keptMs", keptMs, 0);
}

/** An ended deployment's folder: its name, and when it last changed (its deployment ended). */
interface Ended {
  dir: string;
  endedAt: number;
}

/**
 * Removes the folders of deployments that ended long ago from the root state dir `stateDir`,
 * through the Files port: a folder of this user's (another user's is theirs to prune, by
 * their own launches) holding nothing but its ranks' logs (`rank-R.log`) and its outcome
 * record (`outcome.json`: its manifest,
 * lease and every other control file are gone, so none of its ranks can be alive and the
 * reaper has nothing left there), beyond the newest `retention.keep`, that last changed (its
 * control files were removed when its deployment ended) more than `retention.keptMs` ago
 * (default {@link DEFAULT_ENDED_LOGS_RETENTION}; `false` removes nothing). A folder with
 * anything else in it — a control file (a live, orphaned or half-cleared deployment: the
 * reaper's), a file of the user's — is left alone, and so are other entries of the state
 * dir. The oldest go first. Right before removing a folder its entries are read again, and
 * it is kept if it holds anything but logs by then or a log was written within the kept
 * time: a launch of the same name (`--name`) may be taking it over. A folder another prune
 * removes at the same time (two workers' rank jobs ending together) is passed by; what
 * cannot be removed is logged and skipped: pruning never fails a launch. Resolves to the
 * folders removed.
 *
 * @example
 * ```ts
 * await group.wait();
 * await pruneDeploymentLogs(dirname(group.dir), { now: Date.now(), logger });
 * ```
 */
export async function pruneDeploymentLogs(
  stateDir: string,
  {
    now,
    logger,
    files = nodeFiles(),
    retention = DEFAULT_ENDED_LOGS_RETENTION,
  }: { now: number; logger: Logger; files?: Files; retention?: EndedLogsRetention },
): Promise<string[]> {
  if (retention === false) return [];
  const keptSince = now - retention.keptMs;
  const ended = await endedDeployments(stateDir, files);
  const old = ended
    .sort((a, b) => b.endedAt - a.endedAt)
    .slice(retention.keep)
    .filter(({ endedAt }) => endedAt < keptSince)
    .reverse();
  const removed: string[] = [];
  for (const { dir } of old) {
    try {
      if (await removeEnded(dir, keptSince, files)) removed.push(dir);
    } catch (error) {
      logger.warn({ err: error, dir }, "could not remove an ended deployment's logs; left it");
    }
  }
  if (removed.length > 0) {
    logger.info(
      { removed: removed.length, stateDir, keep: retention.keep, keptMs: retention.keptMs },
      "removed the logs of deployments that ended long ago",
    );
  }
  return removed;
}

/**
 * The folders of `stateDir` of this user's that hold only ranks' logs (and an outcome
 * record), with when each last changed.
 */
async function endedDeployments(stateDir: string, files: Files): Promise<Ended[]> {
  let names: string[];
  try {
    names = await files.list(stateDir);
  } catch {
    return [];
  }
  const ended: Ended[] = [];
  for (const name of names) {
    if (!isDeploymentId(name)) continue;
    const dir = join(stateDir, name);
    try {
      if (!(await files.owner(dir))?.self || !onlyLogs(await files.list(dir))) continue;
      const endedAt = await files.modifiedAt(dir);
      if (endedAt !== undefined) ended.push({ dir, endedAt });
    } catch {
      // A file, removed meanwhile, or not ours to read: not a folder to prune.
    }
  }
  return ended;
}

/**
 * Whether `names`, a folder's entries, are ranks' logs (at least one) and perhaps the
 * deployment's outcome record, and nothing else.
 */
function onlyLogs(names: readonly string[]): boolean {
  const isLog = (name: string) => rankFileName(name)?.kind === "log";
  return names.some(isLog) && names.every((name) => isLog(name) || name === OUTCOME_FILE);
}

/**
 * Removes an ended deployment's folder: its logs, then the folder, which is kept if anything
 * came in meanwhile. False, and the folder kept, when it no longer holds only logs last
 * written before `keptSince`, or when it went while this ran (another prune took it).
 */
async function removeEnded(dir: string, keptSince: number, files: Files): Promise<boolean> {
  const names = await files.list(dir);
  if (!onlyLogs(names)) return false;
  const paths = names.map((name) => join(dir, name));
  const written = await Promise.all(paths.map((path) => files.modifiedAt(path)));
  if (written.some((at) => at === undefined || at >= keptSince)) return false;
  await Promise.all(paths.map((path) => files.remove(path)));
  return files.removeDir(dir);
}
