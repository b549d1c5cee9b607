/**
 * A frame's size in UTF-8 bytes when it is over `limit`, or undefined when it fits. UTF-8
 * takes at most 3 bytes a UTF-16 unit, so only a frame longer than a third of the limit is
 * counted: frames go by the million, and counting costs a pass over the text.
 *
 * @example
 * ```ts
 * const size = frameOverLimit(text, maxFrameBytes);
 * if (size !== undefined) link.close(4004, `frame of ${size} bytes exceeds the limit of ${maxFrameBytes} bytes`);
 * ```
 */
export function frameOverLimit(frame: string, limit: number): number | undefined {
  if (frame.length * 3 <= limit) return undefined;
  const size = Buffer.byteLength(frame);
  return size > limit ? size : undefined;
}
