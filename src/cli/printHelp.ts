/**
 * A command's answer to `--help`: its `usage` on stdout and then, on stderr, the `mistake`
 * `parseFlags` found beside `--help` (`baton run --wrokers 2 --help`), if any: last, where
 * it is seen after a long help. Returns the exit code, 0: the help was asked for and given.
 *
 * @example
 * ```ts
 * const { values, mistake } = parseFlags("status", { args: argv, options: flags });
 * if (values.help) return printHelp(STATUS_USAGE, mistake);
 * ```
 */
export function printHelp(usage: string, mistake: string | undefined): number {
  process.stdout.write(`${usage}\n`);
  if (mistake !== undefined) process.stderr.write(`${mistake}\n`);
  return 0;
}
