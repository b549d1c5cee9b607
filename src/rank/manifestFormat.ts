import { CGROUP_FOLDER, isDeploymentCgroup } from "./deploymentCgroup.ts";
import type { StateFileFormat } from "./stateFile.ts";

/** One rank as the launcher started it. */
export interface ManifestRank {
  rank: number;
  localRank: number;
  /** `"local"` for a rank on the launcher's machine, else `ssh://user@host[:port]`. */
  host: string;
  /** Its pid on its host. */
  pid: number;
  /** Its process group id (on its host). */
  pgid: number;
  /**
   * For a rank on an ssh host: the absolute root state dir `S` there, where its markers, the
   * mirrored lease and the cancel files are (the reaper's way to that host's part).
   */
  stateDir?: string;
}

/**
 * `S/<dep>/manifest.json`, written by the launcher when it launches and removed only after a
 * verified teardown: what to reap if the launcher dies.
 */
export interface Manifest {
  deployment: string;
  launcher: { pid: number; token: string; host: string };
  ranks: ManifestRank[];
  worldSize: number;
  argv: string[];
  /** Milliseconds since the epoch. */
  startedAt: number;
  /**
   * The root state dir the launcher gave its ranks as `BATON_STATE_DIR` (absolute, resolved):
   * with the name, what tells this deployment from one of the same name in another state dir.
   * Absent in manifests of launchers from before it was written.
   */
  stateDir?: string;
  /**
   * The cgroup the local ranks were started in (see `Containment`),
   * `…/baton/<deploymentCgroupName>` (`…/baton/<deployment>` in a manifest without
   * `stateDir`): the reaper tears down every process in it. Absent when they were not contained.
   */
  cgroup?: string;
}

/**
 * The launch manifest's format, `baton.manifest/1`. Ranks are unique and below `worldSize`; a
 * rank whose `host` is not `"local"` also names its host's state dir (`stateDir`); the
 * manifest's own `stateDir`, when present, is an absolute path; `cgroup`, when present, is the
 * absolute path of the deployment's own cgroup (`isDeploymentCgroup`: named after the
 * deployment and its `stateDir`, as the launcher makes it): the reaper stops every process in
 * it, so a manifest that names any other cgroup (the machine's root, another program's, the
 * same name's in another state dir) is refused rather than obeyed.
 *
 * @example
 * ```ts
 * const manifest = await readStateFile(files, MANIFEST_FORMAT, paths.manifest);
 * ```
 */
export const MANIFEST_FORMAT: StateFileFormat<Manifest> = {
  id: "baton.manifest/1",
  decode(fields) {
    const worldSize = fields.integer("worldSize", 1);
    const ranks = fields.list("ranks", (rank): ManifestRank => {
      const host = rank.string("host");
      return {
        rank: rank.integer("rank", 0),
        localRank: rank.integer("localRank", 0),
        host,
        pid: rank.integer("pid", 1),
        pgid: rank.integer("pgid", 1),
        // Only remote ranks carry it, so every manifest of local ranks reads as before.
        ...(host !== "local" && {
          stateDir: rank.string("stateDir", (dir) => dir.startsWith("/"), "an absolute path"),
        }),
      };
    });
    const seen = new Set<number>();
    for (const { rank } of ranks) {
      if (rank >= worldSize)
        throw fields.invalid(`rank ${rank} is not below worldSize ${worldSize}`);
      if (seen.has(rank)) throw fields.invalid(`rank ${rank} is listed twice`);
      seen.add(rank);
    }
    const deployment = fields.deployment();
    const stateDir = fields.has("stateDir")
      ? fields.string("stateDir", (dir) => dir.startsWith("/"), "an absolute path")
      : undefined;
    return {
      deployment,
      launcher: fields.object("launcher", (launcher) => ({
        pid: launcher.integer("pid", 1),
        token: launcher.string("token"),
        host: launcher.string("host"),
      })),
      ranks,
      worldSize,
      argv: fields.strings("argv"),
      startedAt: fields.integer("startedAt", 0),
      ...(stateDir !== undefined && { stateDir }),
      ...(fields.has("cgroup") && {
        cgroup: fields.string(
          "cgroup",
          (dir) => isDeploymentCgroup(dir, { deployment, stateDir }),
          `the absolute path of the deployment's cgroup (ending in /${CGROUP_FOLDER}/${deployment}${stateDir === undefined ? "" : "-<hash of its stateDir>"})`,
        ),
      }),
    };
  },
};
