/**
 * An error's message with its code, as the commands print it: `message [CODE]`, the code at
 * the end of the first line, before its colon when it ends with one (what follows the colon
 * is what it announces). A message that goes on to quote a log (a rank's last lines, each
 * `  | …`) keeps the quote as it was: a code after it would read as the log's last line.
 *
 * @example
 * ```ts
 * codedMessage("rank 2 exited with code 3. The last line of the log:\n  | boom", "RANK_FAILED");
 * // "rank 2 exited with code 3. The last line of the log [RANK_FAILED]:\n  | boom"
 * ```
 */
export function codedMessage(message: string, code: string): string {
  const end = message.indexOf("\n");
  const first = end === -1 ? message : message.slice(0, end);
  const rest = end === -1 ? "" : message.slice(end);
  return first.endsWith(":")
    ? `${first.slice(0, -1)} [${code}]:${rest}`
    : `${first} [${code}]${rest}`;
}
