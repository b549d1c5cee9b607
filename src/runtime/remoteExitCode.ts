import { constants } from "node:os";

/**
 * What to add to "rank R exited with code C" for a rank on an ssh host whose code is 128 + N
 * for a signal N: the remote guard learns the rank's end from its shell's `wait`, which gives
 * 128 + N for a death by signal N and the same number for a rank that exits with it, so the
 * two cannot be told apart there (see ARCHITECTURE.md, "Remote ranks over SSH"). Empty for
 * any other code. The signal's name is this machine's for N (hosts are Linux, as here).
 *
 * @example
 * ```ts
 * remoteExitCodeNote(137, "ssh://alice@gpu-2");
 * // " On ssh://alice@gpu-2 its shell reports code 137 both for a rank killed by signal 9
 * //   (SIGKILL) and for one that exits with 137: baton cannot tell which it was."
 * ```
 */
export function remoteExitCodeNote(code: number, host: string): string {
  const signal = code - 128;
  if (signal < 1 || signal > 64) return "";
  const name = Object.entries(constants.signals).find(([, number]) => number === signal)?.[0];
  return ` On ${host} its shell reports code ${code} both for a rank killed by signal ${signal}${name === undefined ? "" : ` (${name})`} and for one that exits with ${code}: baton cannot tell which it was.`;
}
