/**
 * One line for an error of Node's `parseArgs`. Its "argument is ambiguous" (a flag followed by
 * a value starting with a dash, as in `--world -1`) is three lines about `-XYZ`; here it names
 * the flag and the form that passes such a value, which the flag's own check then judges (a
 * command that passes its argv through `negativeValues` sends such a number to that check). An
 * unknown option is named without Node's advice to pass it as a positional after `--`, and a
 * flag given no value (`Option '-w, --world <value>' argument missing`) is named as needing one.
 *
 * @example
 * ```ts
 * parseArgsMessage(error); // "--world is followed by a value starting with a dash; …"
 * ```
 */
export function parseArgsMessage(error: Error): string {
  const ambiguous = /argument is ambiguous[\s\S]*use '(--[^=']+)=-XYZ'/.exec(error.message);
  if (ambiguous !== null) {
    const flag = ambiguous[1];
    return `${flag} is followed by a value starting with a dash; write ${flag}=VALUE if that is its value, or give ${flag} a value`;
  }
  const unknown = /^Unknown option '[^']*'/.exec(error.message);
  if (unknown !== null) return unknown[0];
  const missing = /^Option '(?:-\w, )?(--[^ ']+) <value>' argument missing/.exec(error.message);
  if (missing !== null) return `${missing[1]} needs a value`;
  return error.message.replace(/\s*\n\s*/g, " ");
}
