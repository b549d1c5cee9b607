import { ConfigError } from "../errors.ts";
import { DEFAULT_TEARDOWN_TIMEOUTS } from "../machines/teardown.ts";
import { DEFAULT_RANK_GROUP_TIMEOUTS, type LaunchSpec } from "./rankGroup.ts";

/** Every option `launchGroup` takes (the compiler holds this to `LaunchSpec`). */
const LAUNCH_OPTIONS: Record<keyof LaunchSpec, true> = {
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
 * `teardown` that is no timeout (a typo such as `termGrace` was ignored, the default kept).
 * `launchGroup` checks the values itself.
 *
 * @example
 * ```ts
 * checkLaunchSpec({ argv: "python3 serve.py", worldSize: 2 });
 * // ConfigError: a rank group's argv must be an array, the program and then its arguments (["python3", "serve.py"]), not the string "python3 serve.py": split it into its words
 * ```
 */
export function checkLaunchSpec(spec: LaunchSpec): void {
  if (typeof spec !== "object" || spec === null || Array.isArray(spec)) {
    throw new ConfigError(
      `launchGroup takes an object, { argv, worldSize, … }, not ${Array.isArray(spec) ? "an array (give it as argv)" : String(spec)}`,
    );
  }
  const { argv } = spec as { argv: unknown };
  if (!Array.isArray(argv)) {
    throw new ConfigError(
      `a rank group's argv must be an array, the program and then its arguments (["python3", "serve.py"]), not ${typeof argv === "string" ? `the string ${JSON.stringify(argv)}: split it into its words` : String(argv)}`,
    );
  }
  refuseUnknown("a rank group", spec, LAUNCH_OPTIONS);
  if (spec.timeouts !== undefined) {
    refuseUnknown("a rank group's timeouts", spec.timeouts, DEFAULT_RANK_GROUP_TIMEOUTS);
  }
  if (spec.teardown !== undefined) {
    refuseUnknown("a rank group's teardown", spec.teardown, DEFAULT_TEARDOWN_TIMEOUTS);
  }
}

/** Refuses a name of `given` that `known` does not have, listing those it has. */
function refuseUnknown(what: string, given: object, known: object): void {
  for (const name of Object.keys(given)) {
    if (!Object.hasOwn(known, name)) {
      throw new ConfigError(
        `${what} has no option ${name}; it takes ${Object.keys(known).join(", ")}`,
      );
    }
  }
}
