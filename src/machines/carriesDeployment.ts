import { mentionsWhole } from "../mentionsWhole.ts";

/**
 * A deployment as teardown, the reaper and `baton status` tell it apart: its name in its root
 * state dir. Two launches of one name in two state dirs are two deployments: their ranks both
 * have `BATON_DEPLOYMENT=<name>`, and differ in `BATON_STATE_DIR`.
 */
export interface DeploymentIdentity {
  deployment: string;
  /** The root state dir, absolute and resolved, as the launcher gives its ranks `BATON_STATE_DIR`. */
  stateDir: string;
}

/**
 * Characters a deployment id may hold; anything else bounds it inside an argument:
 * `--deployment=dep-abc` and `/run/dep-abc/rank-0.marker.json` name `dep-abc`, `dep-abc2` and
 * `dep-abc.log` do not.
 */
const ID_CHAR = /[A-Za-z0-9_.-]/;

/**
 * Whether an environment is the deployment's: `BATON_DEPLOYMENT` is its name and
 * `BATON_STATE_DIR` its state dir, as the launcher set them for its ranks (and their
 * descendants inherit them).
 *
 * @example
 * ```ts
 * envCarries({ BATON_DEPLOYMENT: "web", BATON_STATE_DIR: "/srv/a" }, { deployment: "web", stateDir: "/srv/a" }); // true
 * envCarries({ BATON_DEPLOYMENT: "web", BATON_STATE_DIR: "/srv/b" }, { deployment: "web", stateDir: "/srv/a" }); // false
 * ```
 */
export function envCarries(
  env: Readonly<Record<string, string>> | undefined,
  { deployment, stateDir }: DeploymentIdentity,
): boolean {
  return env?.BATON_DEPLOYMENT === deployment && env.BATON_STATE_DIR === stateDir;
}

/**
 * The rank-group contract's ownership test: a process *carries* a deployment when its
 * environment is the deployment's ({@link envCarries}), or when its environment is not that of
 * the same name in another state dir (`BATON_STATE_DIR` set to another) and either has
 * `BATON_DEPLOYMENT=<name>` (with no state dir) or one of its arguments names the deployment
 * (as a whole word, not as part of a longer id). Teardown's sweep and the reaper signal a
 * pid only when this holds right before signalling, so a pid reused by another program, or
 * by a rank of the same name launched from another state dir, is never touched.
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
  if (envCarries(env, id)) return true;
  const ofName = env?.BATON_DEPLOYMENT === id.deployment;
  if (ofName && env.BATON_STATE_DIR !== undefined) return false;
  return ofName || argv.some((arg) => mentionsWhole(arg, id.deployment, ID_CHAR));
}
