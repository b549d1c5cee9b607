import type { StateFileFormat } from "./stateFile.ts";

/** One rank as the launcher started it. */
export interface ManifestRank {
  rank: number;
  localRank: number;
  /** `"local"` for a rank on the launcher's machine. */
  host: string;
  pid: number;
  /** Its process group id. */
  pgid: number;
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
}

/**
 * The launch manifest's format, `baton.manifest/1`. Ranks are unique and below `worldSize`.
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
    const ranks = fields.list("ranks", (rank) => ({
      rank: rank.integer("rank", 0),
      localRank: rank.integer("localRank", 0),
      host: rank.string("host"),
      pid: rank.integer("pid", 1),
      pgid: rank.integer("pgid", 1),
    }));
    const seen = new Set<number>();
    for (const { rank } of ranks) {
      if (rank >= worldSize)
        throw fields.invalid(`rank ${rank} is not below worldSize ${worldSize}`);
      if (seen.has(rank)) throw fields.invalid(`rank ${rank} is listed twice`);
      seen.add(rank);
    }
    return {
      deployment: fields.deployment(),
      launcher: fields.object("launcher", (launcher) => ({
        pid: launcher.integer("pid", 1),
        token: launcher.string("token"),
        host: launcher.string("host"),
      })),
      ranks,
      worldSize,
      argv: fields.strings("argv"),
      startedAt: fields.integer("startedAt", 0),
    };
  },
};
