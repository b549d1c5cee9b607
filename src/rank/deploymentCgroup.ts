import { createHash } from "node:crypto";
import { posix } from "node:path";
import type { DeploymentIdentity } from "../machines/carriesDeployment.ts";
import { isDeploymentId } from "./deploymentPaths.ts";

/** The folder, below the launcher's own cgroup, that holds one cgroup per deployment. */
export const CGROUP_FOLDER = "baton";

/** Hex digits of the state dir's hash in a cgroup's name. */
const HASH_DIGITS = 12;

/**
 * The name of a deployment's cgroup inside {@link CGROUP_FOLDER}: its name, a dash and the
 * first 12 hex digits of the SHA-256 of its state dir, so that one name launched from two
 * state dirs gets two cgroups (the hash has a fixed length, so no two deployments share one).
 *
 * @example
 * ```ts
 * deploymentCgroupName({ deployment: "web", stateDir: "/srv/app/.baton/run" }); // "web-" + 12 hex digits
 * ```
 */
export function deploymentCgroupName({ deployment, stateDir }: DeploymentIdentity): string {
  return `${deployment}-${stateDirHash(stateDir)}`;
}

/**
 * The deployment of the state dir `stateDir` whose cgroup `name` (an entry of
 * {@link CGROUP_FOLDER}) is, as {@link deploymentCgroupName} names it; undefined for the
 * cgroup of another state dir, or of a launcher from before cgroups named their state dir.
 *
 * @example
 * ```ts
 * cgroupDeployment(deploymentCgroupName({ deployment: "web", stateDir: "/srv/run" }), "/srv/run"); // "web"
 * cgroupDeployment("web", "/srv/run"); // undefined
 * ```
 */
export function cgroupDeployment(name: string, stateDir: string): string | undefined {
  const suffix = `-${stateDirHash(stateDir)}`;
  if (!name.endsWith(suffix)) return undefined;
  const deployment = name.slice(0, -suffix.length);
  return isDeploymentId(deployment) ? deployment : undefined;
}

function stateDirHash(stateDir: string): string {
  return createHash("sha256").update(stateDir).digest("hex").slice(0, HASH_DIGITS);
}

/**
 * Whether `path` is the absolute, normal path of the deployment's own cgroup, as a manifest
 * records it: `…/baton/<deploymentCgroupName>`; or, for a manifest written before cgroups
 * named the state dir (it has no `stateDir`), `…/baton/<deployment>`.
 *
 * @example
 * ```ts
 * isDeploymentCgroup("/sys/fs/cgroup/baton/web", { deployment: "web", stateDir: undefined }); // true
 * isDeploymentCgroup("/sys/fs/cgroup", { deployment: "web", stateDir: undefined }); // false
 * ```
 */
export function isDeploymentCgroup(
  path: string,
  { deployment, stateDir }: { deployment: string; stateDir: string | undefined },
): boolean {
  const name = stateDir === undefined ? deployment : deploymentCgroupName({ deployment, stateDir });
  return (
    path.startsWith("/") &&
    posix.normalize(path) === path &&
    path.endsWith(`/${CGROUP_FOLDER}/${name}`)
  );
}
