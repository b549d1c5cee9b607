import { isDeploymentId } from "../rank/deploymentPaths.ts";
import { shellQuote } from "./shellQuote.ts";
import type { SshHost } from "./sshHost.ts";

/**
 * How long a deployment's folder on an ssh host must have been empty and untouched before it
 * is taken for a leftover: a launch fills its new folder (the mirrored lease) within one ssh
 * call, at most its 30 s timeout, and a folder's time changes with every file made or removed
 * in it.
 */
export const LEFT_EMPTY_MS = 10 * 60_000;

/**
 * Removes a deployment's folder `dir` on an ssh host when it is empty, the last step of
 * `clearDeployment` there, and in the same ssh call the empty folders named like a deployment
 * in the host's root state dir `stateDir` that nothing has touched for `LEFT_EMPTY_MS`:
 * earlier versions of baton, whose teardown cleared a deployment's files there but not its
 * folder, left one such folder per launch and per reap, for good. Each goes by `rmdir`, which
 * removes only an empty folder, so nothing a deployment holds there (its lease, markers) is
 * ever taken; a symbolic link is left alone. Returns the names of the leftovers removed
 * (`removed`: `dir`'s own is not one; a state dir that does not exist has none) and, when
 * `dir` is still there and empty, why its `rmdir` failed (`notRemoved`: rmdir's own words, a
 * state dir this user may not write to, say); one with something in it (a newer launch's
 * lease) or gone already is no failure.
 *
 * @example
 * ```ts
 * const { removed, notRemoved } = await removeFolderAndLeftEmpty(host, "/home/alice/.baton/run",
 *   "/home/alice/.baton/run/w7");
 * // removed: ["dep-4kq9z0c1m2xa", "w6"], notRemoved: undefined
 * ```
 */
export async function removeFolderAndLeftEmpty(
  host: SshHost,
  stateDir: string,
  dir: string,
  minAgeMs = LEFT_EMPTY_MS,
): Promise<{ removed: string[]; notRemoved?: string }> {
  const quoted = shellQuote(dir);
  const script = [
    // Not empty (a newer launch's lease), or gone already: it stays as it is. Empty and still
    // there, why not is a line of its own, after a `!`.
    `if ! why=$(rmdir ${quoted} 2>&1) && [ -d ${quoted} ] && [ -z "$(ls -A ${quoted} 2>/dev/null)" ]; then`,
    `  printf '!%s\n' "$(printf '%s' "$why" | tr '\n' ' ')"`,
    "fi",
    `cd ${shellQuote(stateDir)} 2>/dev/null || exit 0`,
    "now=$(date +%s)",
    "for d in */; do",
    `  d=\${d%/}; [ -d "$d" ] && [ ! -L "$d" ] || continue`,
    "  case $d in *[!A-Za-z0-9_.-]*) continue ;; esac",
    '  t=$(stat -c %Y "$d" 2>/dev/null || stat -f %m "$d" 2>/dev/null) || continue',
    `  [ $((now - t)) -ge ${Math.ceil(minAgeMs / 1000)} ] || continue`,
    `  rmdir "$d" 2>/dev/null && printf '%s\\n' "$d"`,
    "done",
    "exit 0",
  ].join("\n");
  const { stdout } = await host.run(script);
  const lines = stdout.toString("utf8").split("\n");
  const why = lines
    .find((line) => line.startsWith("!"))
    ?.slice(1)
    .trim();
  return {
    removed: lines.filter((name) => isDeploymentId(name)),
    // "rmdir: failed to remove '/home/alice/.baton/run/w7': Permission denied": the reason.
    ...(why !== undefined && { notRemoved: why.slice(why.lastIndexOf(": ") + 2) || why }),
  };
}
