import { execFileSync } from "node:child_process";

/**
 * The name of the user with id `uid`, as this machine's user database says (`getent passwd`,
 * so LDAP and NIS users too); undefined when it does not know the uid or cannot be asked.
 * It starts a process: for an error message, not for a loop.
 *
 * @example
 * ```ts
 * userName(0); // "root"
 * ```
 */
export function userName(uid: number): string | undefined {
  try {
    const entry = execFileSync("getent", ["passwd", String(uid)], {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "ignore"],
      timeout: 2_000,
    });
    return entry.split(":")[0] || undefined;
  } catch {
    return undefined;
  }
}
