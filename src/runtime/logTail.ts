import { open } from "node:fs/promises";

/** Lines of a log quoted in an error, and the bytes read from its end to find them. */
const TAIL_LINES = 20;
const TAIL_BYTES = 16 * 1024;

/**
 * The last lines of a log file, ready to append to an error message: each line quoted with
 * `  | `, or a note that the log is empty or could not be read. Only the file's last 16 KiB
 * are read, so a huge log costs nothing. `from`: the byte where the output of the process at
 * hand begins (`ProcHandle.logStart`), so that a log appended to by earlier runs of the same
 * name is not quoted as this one's.
 *
 * @example
 * ```ts
 * throw new Error(`worker local-2 exited with code 1. ${await logTail("logs/worker-2.log")}`);
 * ```
 */
export async function logTail(path: string, from = 0): Promise<string> {
  let text: string;
  let partial: boolean;
  try {
    const handle = await open(path, "r");
    try {
      const { size } = await handle.stat();
      // A log truncated since (by hand) is quoted from its start.
      const start = from > size ? 0 : from;
      const length = Math.min(size - start, TAIL_BYTES);
      const buffer = Buffer.alloc(length);
      const { bytesRead } = await handle.read(buffer, 0, length, size - length);
      text = buffer.toString("utf8", 0, bytesRead);
      partial = length < size - start;
    } finally {
      await handle.close();
    }
  } catch (error) {
    return `(Its log could not be read: ${error instanceof Error ? error.message : error}.)`;
  }
  const lines = text.split("\n");
  if (lines.at(-1) === "") lines.pop();
  if (partial) lines.shift();
  const tail = lines.slice(-TAIL_LINES);
  if (tail.length === 0) return from > 0 ? "(It wrote nothing to its log.)" : "(Its log is empty.)";
  const heading = tail.length === 1 ? "The last line" : `Last ${tail.length} lines`;
  return `${heading} of the log:\n${tail.map((line) => `  | ${line}`).join("\n")}`;
}
