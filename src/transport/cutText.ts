/**
 * `text`, or its first `most` characters and how many more there were: an error message or
 * stack cut to a size a frame, a log line and a terminal can carry. `whose` names where the
 * rest is, when the cut text is quoted inside another message.
 */
export function cutText(text: string, most: number, whose?: string): string {
  if (text.length <= most) return text;
  const where = whose === undefined ? "" : ` in ${whose}`;
  return `${text.slice(0, most)}… (${text.length - most} more characters${where})`;
}
