import { execFile } from "node:child_process";
import { delimiter, join } from "node:path";
import { SlurmError } from "../errors.ts";
import { execKind } from "./execKind.ts";

/** What to submit: `count` allocations of one batch script, as one array or one by one. */
export interface SubmitRequest {
  /** The batch script's path. */
  script: string;
  /** The job name every allocation of the pool carries (how `queue` finds them). */
  name: string;
  count: number;
  /** One `sbatch --array=0-(count-1)` instead of `count` plain submissions. */
  array: boolean;
  /** Directory of the allocation logs: `slurm-<allocation>.log` each. */
  logsDir: string;
  /** Further `sbatch` options (`--partition=P`, `--cpus-per-task=N`, the user's own). */
  options: readonly string[];
}

/** One line of the queue: an allocation and its Slurm state (`PENDING`, `RUNNING`, ...). */
export interface QueueEntry {
  /** `1234`, or `1234_5` for an array task. */
  id: string;
  state: string;
  /** Slurm's reason (`Resources`, `None`, ...). */
  reason: string;
}

/**
 * The Slurm commands a pool uses, parsed. Every call either answers or throws a
 * `SlurmError` (`SLURM_COMMAND`, `SLURM_TIMEOUT`, `SBATCH_REJECTED`, `SLURM_MISSING` when the
 * command is not on the PATH); a failed `queue` is no information about the queue, never an
 * empty one.
 */
export interface SlurmCommands {
  /** Submits and returns the new allocations' ids. */
  submit(request: SubmitRequest): Promise<string[]>;
  /** Every allocation named `name` Slurm still remembers, in any state (`squeue -t all`). */
  queue(name: string): Promise<QueueEntry[]>;
  /** One allocation (`scontrol show job`), or undefined when Slurm no longer knows it. */
  show(id: string): Promise<QueueEntry | undefined>;
  /**
   * `scancel`; with `pendingOnly`, exactly these allocations and only those still pending:
   * Slurm itself skips any that has started (`--state=PENDING`).
   */
  cancel(ids: readonly string[], options: { pendingOnly: boolean }): Promise<void>;
  /**
   * Ends these running allocations at once: SIGKILL to each one's batch step, its script and
   * the worker it runs (`scancel --signal=KILL --batch`), where `cancel`'s SIGTERM would let a
   * worker wait for a handler that ignores its abort, and Slurm its KillWait before SIGKILL.
   * Slurm records them FAILED (signal 9).
   */
  kill(ids: readonly string[]): Promise<void>;
  /** The partitions Slurm lists (`sinfo`), the default one marked `*` (`debug*`). */
  partitions(): Promise<string[]>;
}

/**
 * A Slurm command's timeout, and what sets it, as the way to wait longer is named when the
 * timeout kills the command: `"slurmPool's commandTimeoutMs"` by default.
 */
export interface CommandTimeout {
  ms: number;
  /** The setting that waits longer, named for the user: a flag, an option. */
  setBy: string;
}

/** How long a Slurm command may take by default (`timeoutMs`, slurmPool's `commandTimeoutMs`). */
export const SLURM_COMMAND_TIMEOUT_MS = 30_000;

export interface NodeSlurmOptions {
  /**
   * Longest a Slurm command may take before it is killed and counted as failed (default 30 s);
   * a function is asked at each command's start (a pool bounds it by what is left of its
   * `unreachableMs`, and then names that as what killed a command).
   */
  timeoutMs?: number | (() => CommandTimeout);
  /** Environment of the commands (default this process's; `SLURM_CONF` is read from it). */
  env?: NodeJS.ProcessEnv;
  /**
   * Commands that must all be on the PATH (a pool's {@link POOL_COMMANDS}): until each has been
   * found there, every call first looks, and fails with `SLURM_MISSING` naming those missing,
   * so a Slurm client that has `squeue` but not `sbatch` is refused at the first command, not
   * found out at the first submission.
   */
  required?: readonly string[];
}

/** The commands a Slurm pool runs (`sinfo` only to list partitions in an error, so not one). */
export const POOL_COMMANDS = ["sbatch", "squeue", "scontrol", "scancel"] as const;

/**
 * The Slurm commands run for real: `sbatch --parsable`, `squeue -h -r -t all -o ...`,
 * `scontrol show job -o`, `scancel` (a pending-only one after `scontrol hold`; a kill with
 * `--signal=KILL --batch`), `sinfo -h -o %P`. Each runs
 * without a shell, with a timeout (default 30 s, then SIGKILL); `sacct` is not needed.
 * Allocation logs are `<logsDir>/slurm-<id>.log` for both plain and array allocations.
 *
 * @example
 * ```ts
 * const slurm = nodeSlurmCommands({ timeoutMs: 10_000 });
 * const ids = await slurm.submit({ script: "/tmp/w.sh", name: "baton-x", count: 2, array: true,
 *   logsDir: "/tmp/logs", options: ["--cpus-per-task=1"] }); // ["41_0", "41_1"]
 * await slurm.queue("baton-x"); // [{ id: "41_0", state: "RUNNING", reason: "None" }, ...]
 * ```
 */
export function nodeSlurmCommands(options: NodeSlurmOptions = {}): SlurmCommands {
  const timeoutMs = options.timeoutMs ?? SLURM_COMMAND_TIMEOUT_MS;
  const env = options.env ?? process.env;
  let required = options.required ?? [];
  const run = (command: string, args: readonly string[]) => {
    if (required.length > 0) {
      const missing = required.filter((name) => !onPath(name, env.PATH));
      if (missing.length > 0) {
        const found = required.filter((name) => !missing.includes(name));
        return Promise.reject(new SlurmError("SLURM_MISSING", notOnPath(missing, found)));
      }
      required = [];
    }
    return runCommand(
      command,
      args,
      typeof timeoutMs === "number" ? { ms: timeoutMs, setBy: COMMAND_TIMEOUT } : timeoutMs(),
      env,
    );
  };
  return {
    async submit(request) {
      const common = [
        "--parsable",
        `--job-name=${request.name}`,
        ...request.options,
        request.script,
      ];
      if (request.count < 1) return [];
      if (request.array) {
        const base = parseSubmitted(
          await run("sbatch", [
            `--array=0-${request.count - 1}`,
            `--output=${request.logsDir}/slurm-%A_%a.log`,
            ...common,
          ]),
        );
        return Array.from({ length: request.count }, (_, i) => `${base}_${i}`);
      }
      const ids: string[] = [];
      for (let i = 0; i < request.count; i++) {
        ids.push(
          parseSubmitted(
            await run("sbatch", [`--output=${request.logsDir}/slurm-%j.log`, ...common]),
          ),
        );
      }
      return ids;
    },
    async queue(name) {
      const out = await run("squeue", ["-h", "-r", "-t", "all", "-n", name, "-o", "%i|%T|%r"]);
      return out
        .split("\n")
        .filter((line) => line.trim() !== "")
        .map((line) => {
          const [id = "", state = "", reason = ""] = line.trim().split("|");
          return { id, state, reason };
        });
    },
    async show(id) {
      let out: string;
      try {
        out = await run("scontrol", ["show", "job", "-o", id]);
      } catch (error) {
        if (error instanceof SlurmError && /Invalid job id/i.test(error.message)) return undefined;
        throw error;
      }
      const state = /\bJobState=(\S+)/.exec(out)?.[1];
      if (state === undefined) {
        throw new SlurmError("SLURM_COMMAND", `scontrol show job ${id} printed no JobState`, [id]);
      }
      return { id, state, reason: /\bReason=(\S+)/.exec(out)?.[1] ?? "" };
    },
    async cancel(ids, { pendingOnly }) {
      if (ids.length === 0) return;
      if (!pendingOnly) {
        await run("scancel", [...ids]);
        return;
      }
      // The tasks of an array that have not started share the array's record, and
      // `scancel --state=PENDING 1234_5` cancels every pending task of that record, not just
      // 5. Holding them first gives each its own record (a started one only keeps running).
      // A hold that fails names an allocation that ended or that Slurm forgot: no matter.
      await run("scontrol", ["hold", ...ids]).catch(() => undefined);
      try {
        await run("scancel", ["--state=PENDING", ...ids]);
      } finally {
        // What was not cancelled (it started meanwhile, or the scancel failed) must not stay
        // held: a held allocation never starts, not even when Slurm requeues it.
        await run("scontrol", ["release", ...ids]).catch(() => undefined);
      }
    },
    async kill(ids) {
      if (ids.length > 0) await run("scancel", ["--signal=KILL", "--batch", ...ids]);
    },
    async partitions() {
      // One line per partition and node state: each name once, in sinfo's order.
      const out = await run("sinfo", ["-h", "-o", "%P"]);
      return [...new Set(out.split("\n").map((line) => line.trim()))].filter((p) => p !== "");
    },
  };
}

/** `sbatch --parsable` prints `ID` or `ID;CLUSTER`. */
function parseSubmitted(out: string): string {
  const id = out.trim().split(";")[0] ?? "";
  if (!/^\d+$/.test(id)) {
    throw new SlurmError("SBATCH_REJECTED", `sbatch printed "${out.trim()}" instead of a job id`);
  }
  return id;
}

/** What sets a Slurm command's timeout unless a pool's `unreachableMs` bounds it. */
export const COMMAND_TIMEOUT = "slurmPool's commandTimeoutMs";

/** Runs a command without a shell; resolves with its stdout, or throws a `SlurmError`. */
function runCommand(
  command: string,
  args: readonly string[],
  timeout: CommandTimeout,
  env: NodeJS.ProcessEnv,
): Promise<string> {
  const line = [command, ...args].join(" ");
  return new Promise((resolve, reject) => {
    execFile(
      command,
      args,
      { timeout: timeout.ms, killSignal: "SIGKILL", env, encoding: "utf8" },
      (error, stdout, stderr) => {
        if (error === null) {
          resolve(stdout);
          return;
        }
        const said = stderr.trim() || stdout.trim();
        if (error.killed) {
          // What it said before it was killed is often why it hung: a slurm.conf it retries
          // to read for a minute, a controller it cannot reach. One line, its last.
          const last = said.split("\n").at(-1)?.trim();
          const before = last ? `, having said: ${last}` : "";
          reject(
            new SlurmError(
              "SLURM_TIMEOUT",
              `${line} did not answer within ${timeout.ms} ms and was killed${before}; check that slurmctld is up (sinfo); a Slurm that answers later than that is overloaded, and ${timeout.setBy} waits longer for it`,
            ),
          );
          return;
        }
        const code = (error as { code?: unknown }).code;
        if (code === "ENOENT") {
          reject(new SlurmError("SLURM_MISSING", notOnPath([command], [])));
          return;
        }
        const how = typeof code === "number" ? `exited with code ${code}` : `failed (${code})`;
        const rejected = command === "sbatch" && typeof code === "number";
        reject(
          new SlurmError(
            rejected ? "SBATCH_REJECTED" : "SLURM_COMMAND",
            `${line} ${how}${said ? `: ${said}` : ""}`,
          ),
        );
      },
    );
  });
}

/**
 * Why Slurm's commands cannot be run: `missing` are not on the PATH, `found` (of those
 * needed) are. None found is no Slurm client here; some found is an incomplete one.
 */
function notOnPath(missing: readonly string[], found: readonly string[]): string {
  const names = (list: readonly string[]) =>
    `${list.length > 1 ? `${list.slice(0, -1).join(", ")} and ` : ""}${list.at(-1)} ${list.length === 1 ? "is" : "are"}`;
  if (found.length === 0) {
    const commands = `Slurm's commands (${POOL_COMMANDS.join(", ")})`;
    const which =
      missing.length === 1
        ? `${missing[0]} is not on the PATH: ${commands} are`
        : `none of ${commands} is on the PATH: they are`;
    return `${which} not installed on this machine, or not on its PATH; run baton where they are (a login node of the cluster) or add their directory to PATH`;
  }
  const one = missing.length === 1;
  return `${names(missing)} not on the PATH, though ${names(found)}: a Slurm pool runs each of ${POOL_COMMANDS.join(", ")}, and this machine's Slurm client lacks ${one ? "that one" : "those"}; install ${one ? "it" : "them"} (Slurm's client commands), add ${one ? "its directory" : "their directories"} to PATH, or run baton on a login node of the cluster`;
}

/** Whether `name` is an executable file in one of `path`'s directories, as execvp looks. */
function onPath(name: string, path: string | undefined): boolean {
  return (path ?? "")
    .split(delimiter)
    .some((dir) => execKind(join(dir || ".", name)) === "executable");
}
