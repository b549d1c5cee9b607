/**
 * One word for a POSIX shell: `text` between single quotes, each `'` written as `'\''`. The
 * shell reads it back byte for byte, whatever it holds (spaces, `$`, backquotes, newlines).
 * Text containing a NUL cannot be passed to a program and is refused.
 *
 * @example
 * ```ts
 * shellQuote("it's $HOME"); // "'it'\\''s $HOME'"
 * `cd ${shellQuote(dir)} && exec ${argv.map(shellQuote).join(" ")}`;
 * ```
 */
export function shellQuote(text: string): string {
  if (text.includes("\0")) {
    throw new Error(`cannot pass ${JSON.stringify(text)} to a shell: it contains a NUL byte`);
  }
  return `'${text.replaceAll("'", `'\\''`)}'`;
}

/**
 * `argv` as a person types it in a POSIX shell, to show a command to copy: each word as it is
 * when the shell reads it back so (letters, digits and `@%+=:,./_-`), else `shellQuote`d.
 *
 * @example
 * ```ts
 * shellLine(["python3", "-c", "import time; time.sleep(1)"]); // "python3 -c 'import time; time.sleep(1)'"
 * ```
 */
export function shellLine(argv: readonly string[]): string {
  return argv.map((word) => (/^[\w@%+=:,./-]+$/.test(word) ? word : shellQuote(word))).join(" ");
}
