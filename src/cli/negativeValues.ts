/** The options of a `parseArgs` call, as far as {@link negativeValues} reads them. */
type Options = Record<string, { type: "string" | "boolean" }>;

/** A negative number, as `-1` or `-0.5` or `-1..5`: a value, never a flag. */
const NEGATIVE = /^-\d/;

/**
 * `argv` with each long flag that takes a value and is followed by a negative number (`--world
 * -1`) joined to it (`--world=-1`), up to a `--`: Node's `parseArgs` refuses such a value as
 * ambiguous, so the flag's own check, which says what it takes, never saw it. Any other value
 * starting with a dash is left to `parseArgs` (and `parseFlags`, which calls this first).
 *
 * @example
 * ```ts
 * negativeValues(["--world", "-1"], { world: { type: "string" } }); // ["--world=-1"]
 * ```
 */
export function negativeValues(argv: readonly string[], options: Options): string[] {
  const joined: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === "--") return joined.concat(argv.slice(i));
    const next = argv[i + 1];
    const takesValue = arg.startsWith("--") && options[arg.slice(2)]?.type === "string";
    if (takesValue && next !== undefined && NEGATIVE.test(next)) {
      joined.push(`${arg}=${next}`);
      i++;
    } else joined.push(arg);
  }
  return joined;
}
