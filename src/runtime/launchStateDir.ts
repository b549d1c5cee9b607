import type { Manifest } from "../rank/manifestFormat.ts";
import type { Files } from "./ports.ts";

/**
 * The state dir a deployment's launcher gave its ranks (`BATON_STATE_DIR`, and the hash in
 * its cgroup's name), for a reader that found its manifest under `stateDir`: the manifest's
 * own when it names `stateDir`, or the same directory by another path (a symlink on the way,
 * either side); `stateDir` for an older manifest that names none; undefined when it names
 * another directory, which its ranks carry instead.
 *
 * @example
 * ```ts
 * // Launched with --state-dir /scratch/run, a symlink to /lus/alice/run:
 * await launchStateDir(nodeFiles(), manifest, "/lus/alice/run"); // "/scratch/run"
 * ```
 */
export async function launchStateDir(
  files: Files,
  manifest: Manifest | undefined,
  stateDir: string,
): Promise<string | undefined> {
  const launchedIn = manifest?.stateDir;
  if (launchedIn === undefined || launchedIn === stateDir) return stateDir;
  return (await files.sameFile(launchedIn, stateDir)) ? launchedIn : undefined;
}
