import { formatDuration } from "../formatDuration.ts";
import type { GroupProgress } from "../viz/groupProgress.ts";

/**
 * `rankMachine`'s states in the order the line counts them: ready first, which is what a
 * person waits for, then the rest as a rank goes through them.
 */
const PHASES = ["ready", "spawning", "loading", "stopping", "exited", "failed", "lost"];

/** What the group is doing, by its machine's state. */
function doing(progress: GroupProgress): string {
  const world = progress.worldSize;
  const ranks = `${world} rank${world === 1 ? "" : "s"}`;
  switch (progress.state) {
    case "reaping":
      return "checking the state dir for orphaned ranks";
    case "launching":
      return `starting ${ranks}`;
    case "barrier":
      return `waiting for ${ranks} to be ready`;
    case "running":
      return `${ranks} running`;
    case "stopping":
      return `stopping ${ranks}`;
    // Whether it succeeded, failed or was stopped, the launch says next; the line, that it is over.
    case "stopped":
      return `${ranks} ended`;
    case "teardownFailed":
      return `the stop of ${ranks} is not verified`;
    default:
      return `${ranks}: ${progress.state}`;
  }
}

/**
 * The live line `baton launch` keeps at the bottom of a terminal while its group runs: what
 * the group is doing, its ranks counted by phase, and the time since the launch.
 *
 * @example
 * ```ts
 * groupStatusLine(progress, 12_300);
 * // "waiting for 4 ranks to be ready: 1 ready · 3 loading · 12.3 s"
 * ```
 */
export function groupStatusLine(progress: GroupProgress, elapsedMs: number): string {
  const counts = new Map<string, number>();
  // While the state dir is checked, no rank has been started yet.
  const ranks = progress.state === "reaping" ? [] : progress.ranks;
  for (const { phase } of ranks) counts.set(phase, (counts.get(phase) ?? 0) + 1);
  const place = (phase: string) => (PHASES.includes(phase) ? PHASES.indexOf(phase) : PHASES.length);
  const phases = [...counts.keys()].sort((a, b) => place(a) - place(b));
  const byPhase = phases.map((phase) => `${counts.get(phase)} ${phase}`).join(" · ");
  return `${doing(progress)}${byPhase === "" ? "" : `: ${byPhase}`} · ${formatDuration(elapsedMs)}`;
}
