import type { Writable } from "node:stream";

/**
 * Settles once all that was written to `stream` before the call has left this process (handed
 * to the kernel; a pipe's reader may not have read it yet), or once writing it failed (the
 * stream's `error` event says how): at once when nothing waits (a file or a terminal, which
 * Node writes to as it is asked). On Linux, stdout and stderr on a pipe keep in memory what the
 * reader has not yet taken, which the process loses when it ends; a command that must not end
 * with its output cut, nor let a signal cut it, waits for this.
 *
 * @example
 * ```ts
 * for (const piece of resultJson(result)) process.stdout.write(piece);
 * await flushed(process.stdout); // the whole JSON is in the pipe
 * ```
 */
export async function flushed(stream: Pick<Writable, "write" | "writableLength">): Promise<void> {
  if (stream.writableLength === 0) return;
  // Called once the writes queued before it are done, in order.
  await new Promise<void>((resolve) => stream.write("", () => resolve()));
}
