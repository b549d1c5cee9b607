import { ConfigError } from "../errors.ts";
import { checkPlantedBugs } from "../machines/checkPlantedBugs.ts";
import { checkOptionNames } from "../optionNames.ts";
import { checkTeardownTimeouts } from "./checkTeardownTimeouts.ts";
import { checkInspectOption } from "./guardInspect.ts";
import { DEFAULT_RANK_GROUP_TIMEOUTS, type LaunchSpec } from "./rankGroup.ts";

/** Every option `launchGroup` takes (the compiler holds this to `LaunchSpec`). */
export const LAUNCH_OPTIONS: Record<keyof LaunchSpec, true> = {
  argv: true,
  worldSize: true,
  stateDir: true,
  name: true,
  env: true,
  operatorEnv: true,
  cwd: true,
  hosts: true,
  remote: true,
  masterAddr: true,
  masterPort: true,
  contain: true,
  timeouts: true,
  teardown: true,
  ports: true,
  logger: true,
  inspect: true,
  plantedBugs: true,
};

/**
 * Refuses, with a `ConfigError`, a launch spec of the wrong shape, which JavaScript (or a rank
 * kind's `ranks` function) can pass: not an object, an `argv` that is not an array (a command
 * line as one string used to launch its first letter, `cannot start "p"`; none at all threw
 * "undefined is not iterable"), an option it does not know, or a name in `timeouts` or
 * `teardown` that is no timeout (a typo such as `termGrace` was ignored, the default kept),
 * or a teardown timeout that is no number of ms of 0 or more (`checkTeardownTimeouts`),
 * an `inspect` that is neither a function nor an object or an unknown planted bug (both
 * taken without a word), or an argument or environment variable with a NUL byte, which no process can be given (the
 * spawn's refusal failed the launch as if another attempt could do better).
 * `launchGroup` checks the other values itself.
 *
 * @example
 * ```ts
 * checkLaunchSpec({ argv: "python3 serve.py", worldSize: 2 } as never);
 * // ConfigError: a rank group's argv must be an array, the program and then its arguments (["python3", "serve.py"]), not the string "python3 serve.py": split it into its words
 * ```
 */
export function checkLaunchSpec(spec: LaunchSpec): void {
  // Before the names: a `ranks` function's string, spread, has names 0, 1, … and no argv.
  const argv: unknown =
    typeof spec === "object" && spec !== null && !Array.isArray(spec) ? spec.argv : [];
  if (!Array.isArray(argv)) {
    throw new ConfigError(
      `a rank group's argv must be an array, the program and then its arguments (["python3", "serve.py"]), not ${typeof argv === "string" ? `the string ${JSON.stringify(argv)}: split it into its words` : String(argv)}`,
    );
  }
  checkOptionNames("launchGroup", spec, LAUNCH_OPTIONS, { shape: "{ argv, worldSize, … }" });
  argv.forEach((word: unknown, i) => {
    if (typeof word === "string" && word.includes("\0")) {
      throw new ConfigError(
        `a rank group's argv[${i}] holds a NUL byte, which no program's argument can: ${JSON.stringify(word)}`,
      );
    }
  });
  for (const [name, value] of Object.entries(spec.env ?? {})) {
    if (name.includes("\0") || (typeof value === "string" && value.includes("\0"))) {
      throw new ConfigError(
        `a rank group's env variable ${JSON.stringify(name)} holds a NUL byte, which no environment variable can: ${JSON.stringify(value)}`,
      );
    }
  }
  if (spec.timeouts !== undefined) {
    checkOptionNames("launchGroup: timeouts", spec.timeouts, DEFAULT_RANK_GROUP_TIMEOUTS, {
      shape: "{ loadTimeoutMs, … }",
    });
  }
  if (spec.teardown !== undefined) checkTeardownTimeouts("launchGroup", "teardown", spec.teardown);
  checkInspectOption("launchGroup", spec.inspect);
  if (spec.plantedBugs !== undefined)
    checkPlantedBugs("launchGroup: plantedBugs", spec.plantedBugs);
}
