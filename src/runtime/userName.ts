import { execFileSync } from "node:child_process";

/**
 * The name of the user with id `uid`, as this machine's user database says (`getent passwd`,
 * so LDAP and NIS users too); `uid N` when it does not know the uid or cannot be asked.
 * It starts a process: for an error message, not for a loop.
 *
 * @example
 * ```ts
 * userName(0); // "root"
 * userName(4242); // "uid 4242" on a machine with no such user
 * ```
 */
export function userName(uid: number): string {
  try {
    const entry = execFileSync("getent", ["passwd", String(uid)], {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "ignore"],
      timeout: 2_000,
    });
    return entry.split(":")[0] || `uid ${uid}`;
  } catch {
    return `uid ${uid}`;
  }
}
