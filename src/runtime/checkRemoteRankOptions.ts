import { argumentError } from "../argumentError.ts";
import { checkOptionNames } from "../optionNames.ts";
import { requireEnvironment } from "../rank/requireEnvironment.ts";
import { requireObject } from "../requireObject.ts";
import type { RemoteRankOptions } from "./remoteRank.ts";
import { requirePositiveMs } from "./requirePositiveMs.ts";
import { requireSshHost } from "./requireSshHost.ts";

/** Every option `spawnRemoteRank` takes (the compiler holds this to `RemoteRankOptions`). */
const REMOTE_RANK_OPTIONS: Record<keyof RemoteRankOptions, true> = {
  host: true,
  argv: true,
  env: true,
  envDefaults: true,
  cwd: true,
  logFile: true,
  guardGraceMs: true,
  lease: true,
  startTimeoutMs: true,
};

const SHAPE = "{ host, argv, env, logFile, … }";

/** Refuses a `value` for `name` that is no non-empty string: a path, a program. */
function requireText(where: string, name: string, value: unknown, what: string): void {
  if (typeof value !== "string" || value === "") throw argumentError(where, name, what, value);
}

/**
 * Refuses, with a `ConfigError`, what `spawnRemoteRank` cannot take as a JavaScript caller may
 * give it, before it opens the log or starts ssh: options that are no object or that it does
 * not know, a host that is no `SshHost`, an `argv` that is no list of strings with a program
 * first, an `env` or `envDefaults` that is no object of text (`requireEnvironment`: never
 * shown), a `cwd` or `logFile` that is no path, waits that are no positive number of ms, and a
 * `lease` without an absolute path and a staleness. Each was a TypeError from inside
 * (`Cannot convert undefined or null to object`), or a guard script that ran `undefined`.
 *
 * @example
 * ```ts
 * checkRemoteRankOptions({ ...options, argv: "python3 train.py" } as never);
 * // ConfigError: spawnRemoteRank: argv must be the rank's program and its arguments, a list of strings (["python3", "train.py"]), not "python3 train.py"
 * ```
 */
export function checkRemoteRankOptions(options: RemoteRankOptions): void {
  const where = "spawnRemoteRank";
  requireObject(where, "the options", SHAPE, options);
  checkOptionNames(where, options, REMOTE_RANK_OPTIONS, { shape: SHAPE });
  requireSshHost(where, "host", options.host, ["sessionArgv"]);
  const { argv } = options as { argv: unknown };
  if (
    !Array.isArray(argv) ||
    argv.length === 0 ||
    argv[0] === "" ||
    argv.some((arg) => typeof arg !== "string")
  ) {
    throw argumentError(
      where,
      "argv",
      'the rank\'s program and its arguments, a list of strings (["python3", "train.py"])',
      argv,
    );
  }
  requireEnvironment(where, "env", options.env, 'the rank\'s variables, { RANK: "1", … }');
  if (options.envDefaults !== undefined) {
    requireEnvironment(
      where,
      "envDefaults",
      options.envDefaults,
      'variables set where the remote login has none, { OMP_NUM_THREADS: "1", … }, or undefined',
    );
  }
  if (options.cwd !== undefined) {
    requireText(where, "cwd", options.cwd, "the rank's directory on the host, or undefined");
  }
  requireText(where, "logFile", options.logFile, "the path of the local file for its output");
  for (const name of ["guardGraceMs", "startTimeoutMs"] as const) {
    if (options[name] !== undefined) requirePositiveMs(where, name, options[name]);
  }
  if (options.lease !== undefined) {
    const what = "the mirrored lease, { path, staleAfterMs }, or undefined";
    requireObject(where, "lease", what, options.lease);
    const { path, staleAfterMs } = options.lease;
    if (typeof path !== "string" || !path.startsWith("/")) {
      throw argumentError(where, "lease.path", "the absolute path of the lease on the host", path);
    }
    requirePositiveMs(where, "lease.staleAfterMs", staleAfterMs, "BATON_LEASE_STALE_MS");
  }
}
