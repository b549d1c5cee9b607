/**
 * What a system error says went wrong, without the system call and path Node appends to its
 * message (a message that names a file names it on its own terms): `"i/o error (EIO)"` for
 * Node's `EIO: i/o error, write`. Any other error's message as it is.
 *
 * @example
 * ```ts
 * `cannot write ${file}: ${errnoReason(error)}`; // "cannot write /srv/a.json: i/o error (EIO)"
 * ```
 */
export function errnoReason(error: unknown): string {
  const { code, message } = error as NodeJS.ErrnoException;
  const text = typeof message === "string" ? message : String(error);
  const said = code === undefined ? undefined : new RegExp(`^${code}: ([^,]+)`).exec(text)?.[1];
  return said === undefined ? text : `${said} (${code})`;
}
