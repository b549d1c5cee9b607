import { randomBytes } from "node:crypto";
import { dirname, join } from "node:path";
import {
  graphFileStem,
  keepRecord,
  type RunRecord,
  type RunWithoutLock,
  runHolder,
} from "./graphLock.ts";
import { nodeFiles } from "./nodeFiles.ts";
import type { Files } from "./ports.ts";
import { realPath } from "./realPath.ts";

export interface RegisterRunOptions {
  /** Where the file is made, renewed and removed (default `nodeFiles()`). */
  files?: Files;
  /** The flag with which the run takes no graph lock. */
  withoutLock: RunWithoutLock;
  /** The result store it reads (`--store-read-only`), and its log folder. */
  store?: string | undefined;
  logs?: string | undefined;
}

/**
 * Registers a `baton run` that takes no graph lock (`--no-store`, `--store-read-only`:
 * there is no store it writes to guard) in the `run/` folder `dir`, beside its
 * run files, so that `baton status` lists it as it lists the runs that hold a lock: the file
 * `DIR/graph-<hash of the graph's real path>-<pid>-<8 random hex>.run`, created exclusively (mode
 * 0600, folders made as needed) with what a lock holds (`runHolder`) and `withoutLock`, kept
 * written as a lock is (`keepRecord`: renewed with what the run notes, removed on release).
 * It excludes nobody: runs of one graph register side by side. One whose run was killed is
 * judged gone as a lock is, listed as a dead run, and removed by `baton reap`
 * (`removeGoneGraphLocks`). Errors are the Files port's.
 *
 * @example
 * ```ts
 * const registration = await registerRun(".baton/run", "pipeline.graph.ts", { withoutLock: "--no-store" });
 * try { await engine.run(graph); } finally { await registration.release(); }
 * ```
 */
export async function registerRun(
  dir: string,
  graph: string,
  { files = nodeFiles(), withoutLock, store, logs }: RegisterRunOptions,
): Promise<RunRecord> {
  const graphPath = realPath(graph);
  const holder = runHolder(graphPath, {
    withoutLock,
    ...(store !== undefined && { store }),
    ...(logs !== undefined && { logs }),
  });
  // Random, so that no run's file is another's: one of a dead run with this pid (a
  // container whose runs all get one pid), or a run's of another host sharing the folder.
  const name = `${graphFileStem(graphPath)}-${holder.pid}-${randomBytes(4).toString("hex")}.run`;
  const path = join(dir, name);
  await files.createExclusive(path, JSON.stringify(holder), 0o600);
  return keepRecord({ files, storeDir: dirname(dir), path, graph: graphPath }, holder);
}
