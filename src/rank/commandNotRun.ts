/**
 * A shell's or env's own line saying it could not run a command: `env: 'python9': No such
 * file or directory` (GNU env; busybox says `env: can't execute 'python9': ...`), dash's
 * `sh: 1: trainn: not found`, bash's `bash: line 1: trainn: command not found`, zsh's
 * `zsh:1: command not found: trainn`, and for 126 `Permission denied`, `Is a directory`,
 * `cannot execute binary file: Exec format error`. It names its program first, then a colon.
 */
const SHELL_SAYS = [
  /^[\w./-]+:(?: line \d+:| \d+:)? (?:can't execute )?'?[^:']+'?: (?:command not found|not found|No such file or directory|Permission denied|Is a directory|cannot execute binary file: Exec format error)$/,
  /^[\w./-]+:\d+: (?:command not found|no such file or directory|permission denied): \S+$/,
];

/** What a rank's exit code 127 or 126 means, and whether another launch could go better. */
export interface CommandNotRun {
  /** Sentences for the group's failure message: what the code means and what to do. */
  advice: string;
  /** `false` when the log's last line is the shell's or env's own: the same launch fails alike. */
  retryable?: false;
}

/**
 * What an exit `code` of 127 ("command not found") or 126 ("found but cannot execute") says,
 * the codes a shell (`sh -c 'trainn'`) or env (`/usr/bin/env python9`, a script starting
 * `#!/usr/bin/env python9`) exits with when it cannot run the command; undefined for any other
 * code. `tail` is the rank's log as `logTail` quotes it: when its last line is the shell's or
 * env's own complaint, the command never ran and a launch again fails the same way
 * (`retryable: false`). A program may exit 127 itself, so without that line the failure is
 * told as what it probably is but stays retryable.
 *
 * @example
 * ```ts
 * commandNotRun(127, "The last line of the log:\n  | env: 'python9': No such file or directory");
 * // { advice: " Exit code 127 is a shell's or env's \"command not found\" ...", retryable: false }
 * ```
 */
export function commandNotRun(code: number, tail: string): CommandNotRun | undefined {
  if (code !== 127 && code !== 126) return undefined;
  const last = tail.split("\n").at(-1) ?? "";
  const said = last.startsWith("  | ") && SHELL_SAYS.some((says) => says.test(last.slice(4)));
  const advice =
    code === 127
      ? ` Exit code 127 is a shell's or env's "command not found": the rank's command, a command in its sh -c line, or the interpreter a script's #!/usr/bin/env line names is not on the PATH the rank gets. Install it, add its directory to that PATH, or give its full path.`
      : ` Exit code 126 is a shell's or env's "found but cannot execute": the command is not executable (chmod +x it), is a directory, or is not a program for this machine (Exec format error). Give the program itself, or run the script through its interpreter.`;
  return said
    ? {
        advice: `${advice} The log's last line, below, is the shell's or env's own.`,
        retryable: false,
      }
    : {
        advice: `${advice} A program may also exit with ${code} itself; its log says which.`,
      };
}
