import type { Files } from "./ports.ts";
import { userName } from "./userName.ts";

/**
 * Whether a file-system error means this user may not read or list a path (`EACCES`,
 * `EPERM`): in a shared state dir, another user's 0600 control file.
 *
 * @example
 * ```ts
 * const text = await files.read(path).catch((error) => {
 *   if (isPermissionDenied(error)) return undefined; // another user's
 *   throw error;
 * });
 * ```
 */
export function isPermissionDenied(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  return code === "EACCES" || code === "EPERM";
}

/**
 * The name of the user who owns `path` (`uid N` when the user database does not know it),
 * or undefined when the owner cannot be told: for a message that says whose a file is.
 *
 * @example
 * ```ts
 * await ownerName(nodeFiles(), "/tmp/shared/dep-0123456789ab/manifest.json"); // "alice"
 * ```
 */
export async function ownerName(files: Files, path: string): Promise<string | undefined> {
  const owner = await files.owner(path).catch(() => undefined);
  return owner && userName(owner.uid);
}
