import { ConfigError } from "../errors.ts";

/** One worker process `localPool` is about to start, as its `command` option is given it. */
export interface WorkerCommand {
  /** The worker's name: `local-3`, then `local-3.2` for the process that replaces it. */
  readonly name: string;
  /** What `localPool` runs without `command`: `[node, …/bin/baton.js, "worker", ...args]`. */
  readonly argv: readonly [string, ...string[]];
  /**
   * `baton worker`'s arguments alone: `--connect`, `--secret-file` (with `secretIn: "file"`),
   * `--jobs`, `--name`, the resources and the flags of the pool's options, for a `baton`
   * installed elsewhere (in a container's image, on another host).
   */
  readonly args: readonly string[];
  /**
   * The run's 0600 secret file that `args` names (absent with `secretIn: "env"`): a container
   * mounts it, read-only, at the same path, and runs as a user that can read it.
   */
  readonly secretFile?: string | undefined;
}

/**
 * How `localPool` starts each worker: a prefix put before its command line (`["nice", "-n",
 * "5"]`, `["taskset", "-c", "0"]`, `["systemd-run", "--user", "--scope"]`), or a function from
 * the worker to the command line to run (`docker run … baton worker ...args`).
 */
export type WorkerCommandOption =
  | readonly string[]
  | ((worker: WorkerCommand) => readonly string[]);

/** Where a worker started by `localPool` finds the run's secret; see `LocalWorkersOptions.secretIn`. */
export type SecretIn = "file" | "env";

/**
 * Refuses, when the pool is made, a `command` that is neither a prefix of strings nor a
 * function, and a `secretIn` that is neither `"file"` nor `"env"`.
 *
 * @example
 * ```ts
 * checkWorkerCommand("localPool", { command: "nice -n 5" });
 * // ConfigError: localPool: command must be a prefix of the worker's command line such as ["nice", "-n", "5"] …
 * ```
 */
export function checkWorkerCommand(
  where: string,
  options: { command?: unknown; secretIn?: unknown },
): void {
  const { command, secretIn } = options;
  if (secretIn !== undefined && secretIn !== "file" && secretIn !== "env") {
    throw new ConfigError(
      `${where}: secretIn must be "file" (each worker reads the run's 0600 secret file, --secret-file) or "env" (BATON_SECRET in its environment, for a container started with docker run -e BATON_SECRET), not ${show(secretIn)}`,
    );
  }
  if (command === undefined || typeof command === "function") return;
  if (!Array.isArray(command) || command.length === 0 || !command.every(isArg)) {
    throw new ConfigError(
      `${where}: command must be a prefix of the worker's command line such as ["nice", "-n", "5"] (non-empty strings, at least one), or a function from the worker ({ name, argv, args, secretFile }) to the command line to run, not ${show(command)}`,
    );
  }
}

/**
 * The command line that starts `worker`: its own `argv` without `command`, `command` followed
 * by it for a prefix, or what the function returns. A function's answer that is not a
 * non-empty array of non-empty strings, or that holds the run's secret (`secretHex`: argv is
 * visible to every user through `ps`), is a `ConfigError`, which the pool reports as a worker
 * it could not start.
 */
export function workerCommandLine(
  where: string,
  command: WorkerCommandOption | undefined,
  worker: WorkerCommand,
  secretHex: string,
): [string, ...string[]] {
  if (command === undefined) return [...worker.argv];
  const line: unknown =
    typeof command === "function" ? command(worker) : [...command, ...worker.argv];
  // First, so that the error below never shows it.
  if (
    Array.isArray(line) &&
    line.some((arg) => typeof arg === "string" && arg.toLowerCase().includes(secretHex))
  ) {
    throw new ConfigError(
      `${where}: command(${worker.name}) put the run's secret on the command line, where every user of the machine sees it (ps); leave it in the file worker.secretFile names, or pass secretIn: "env" and hand BATON_SECRET on (docker run -e BATON_SECRET)`,
    );
  }
  if (!Array.isArray(line) || line.length === 0 || !line.every(isArg)) {
    throw new ConfigError(
      `${where}: command(${worker.name}) must return the command line to run, a non-empty array of non-empty strings such as ["docker", "run", "--rm", "IMAGE", "baton", "worker", ...worker.args], not ${show(line)}`,
    );
  }
  return line as [string, ...string[]];
}

function isArg(value: unknown): value is string {
  return typeof value === "string" && value !== "";
}

function show(value: unknown): string {
  if (typeof value === "function") return "a function";
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}
