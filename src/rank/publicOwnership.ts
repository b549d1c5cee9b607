import { argumentError } from "../argumentError.ts";
import {
  carriesDeployment as carries,
  type DeploymentIdentity,
  envCarries as envIs,
} from "../machines/carriesDeployment.ts";
import { requireDeploymentIdentity } from "./requireDeploymentIdentity.ts";
import { requireEnvironment } from "./requireEnvironment.ts";

/**
 * Refuses an environment that is neither an object of text nor undefined (a `KEY=value`
 * string, a list of them), which the ownership tests read as no environment
 * (`requireEnvironment`: never shown).
 */
function requireEnv(where: string, env: unknown): void {
  if (env === undefined) return;
  requireEnvironment(
    where,
    "env",
    env,
    "a process's environment as an object ({ BATON_DEPLOYMENT: …, … }, such as Procs.environ(pid) gives), or undefined",
  );
}

/**
 * Whether an environment is the deployment's: `BATON_DEPLOYMENT` is its name and
 * `BATON_STATE_DIR` its state dir, as the launcher set them for its ranks (and their
 * descendants inherit them). Refuses, with a `ConfigError`, an environment that is no object
 * and an `id` that is no deployment id and absolute state dir (a relative one never matched).
 *
 * @example
 * ```ts
 * envCarries({ BATON_DEPLOYMENT: "web", BATON_STATE_DIR: "/srv/a" }, { deployment: "web", stateDir: "/srv/a" }); // true
 * envCarries({ BATON_DEPLOYMENT: "web", BATON_STATE_DIR: "/srv/b" }, { deployment: "web", stateDir: "/srv/a" }); // false
 * ```
 */
export function envCarries(
  env: Readonly<Record<string, string>> | undefined,
  id: DeploymentIdentity,
): boolean {
  requireEnv("envCarries", env);
  requireDeploymentIdentity("envCarries", "id", id);
  return envIs(env, id);
}

/**
 * The rank-group contract's ownership test: a process *carries* a deployment when its
 * environment is the deployment's ({@link envCarries}), or when its environment is not that of
 * the same name in another state dir (`BATON_STATE_DIR` set to another) and either has
 * `BATON_DEPLOYMENT=<name>` (with no state dir) or one of its arguments names the deployment
 * (as a whole word, not as part of a longer id). Teardown's sweep and the reaper signal a
 * pid only when this holds right before signalling, so a pid reused by another program, or
 * by a rank of the same name launched from another state dir, is never touched. Refuses, with
 * a `ConfigError`, an `argv` that is no list of strings (a command line as one string), an
 * environment that is no object and an `id` as {@link envCarries} does.
 *
 * @example
 * ```ts
 * const id = { deployment: "dep-abc", stateDir: "/srv/app/.baton/run" };
 * carriesDeployment(["python", "train.py"], { BATON_DEPLOYMENT: "dep-abc", BATON_STATE_DIR: "/srv/app/.baton/run" }, id); // true
 * carriesDeployment(["python", "dep-abc"], { BATON_DEPLOYMENT: "dep-abc", BATON_STATE_DIR: "/tmp/other" }, id); // false
 * carriesDeployment(["sleep", "30"], undefined, id); // false
 * ```
 */
export function carriesDeployment(
  argv: readonly string[],
  env: Readonly<Record<string, string>> | undefined,
  id: DeploymentIdentity,
): boolean {
  if (!Array.isArray(argv) || argv.some((arg) => typeof arg !== "string")) {
    throw argumentError(
      "carriesDeployment",
      "argv",
      'a process\'s arguments as a list of strings (["python3", "train.py"], such as ProcInfo.argv)',
      argv,
    );
  }
  requireEnv("carriesDeployment", env);
  requireDeploymentIdentity("carriesDeployment", "id", id);
  return carries(argv, env, id);
}
