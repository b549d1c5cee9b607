import { type ParseArgsConfig, parseArgs } from "node:util";
import { closestName } from "../closestName.ts";
import { ConfigError } from "../errors.ts";
import { type CommandEntry, type CommandName, commandCatalog } from "./commandCatalog.ts";
import { negativeValues } from "./negativeValues.ts";
import { unexpectedArguments } from "./unexpectedArguments.ts";

/** A command's flags, as `parseArgs` takes them: the command's one table of them. */
type Flags = NonNullable<ParseArgsConfig["options"]>;

/** What a command hands {@link parseFlags}: its arguments and its flags, as to `parseArgs`. */
export interface FlagsConfig extends ParseArgsConfig {
  args: readonly string[];
  options: Flags;
}

/**
 * What `parseArgs` gives for `T`; with `--help` given beside a mistake, the values of
 * `--help` alone and the `mistake`, a line for stderr after the help.
 */
type Parsed<T extends ParseArgsConfig> = ReturnType<typeof parseArgs<T>> & {
  mistake?: string | undefined;
};

type Token = NonNullable<ReturnType<typeof parseArgs>["tokens"]>[number];

/**
 * `parseArgs` of a command's arguments, with each long flag that takes a value joined to a
 * negative number after it (`negativeValues`), and every mistake `parseArgs` refuses as a
 * one-line `ConfigError` that says what to do, from the command's own flags: an unknown flag
 * with the closest of them (`--worker`: did you mean --workers?; `-workers`, one dash: did
 * you mean --workers?; `--secret`, a start of one: did you mean --secret-file?), a flag
 * that takes no value given one (`--no-store=1`), a flag given none (`--workers` last, or
 * followed by another flag), arguments where the command takes only flags (named, with its
 * usage; only counted by a command given a secret, as one could be that secret pasted). An
 * unknown flag close to none of the command's is named as another command's, if it is one
 * (`baton run --seeds`: --seeds is for baton sim). `unknownAdvice`, when given, is added to an unknown flag's
 * message (`baton launch`: a flag of the ranks' command given before the `--`). Arguments
 * that ask for `--help` (`-h`) get it whatever their mistake (`baton run --wrokers 2
 * --help`): the values of `--help` alone, and the mistake as `mistake` (`printHelp` writes
 * it after the help); `--help` as a flag's value with `=` (`--name=--help`) is that value.
 *
 * @example
 * ```ts
 * parseFlags("run", { args: ["--worker", "4"], options: { workers: { type: "string" } } });
 * // ConfigError: unknown flag --worker; did you mean --workers? (baton run --help lists its flags)
 * ```
 */
export function parseFlags<T extends FlagsConfig>(
  command: string,
  config: T,
  unknownAdvice = "",
): Parsed<T> {
  const args = negativeValues(config.args, config.options);
  try {
    return parseArgs({ ...config, args }) as Parsed<T>;
  } catch (error) {
    if (!(error as { code?: string }).code?.startsWith("ERR_PARSE_ARGS")) throw error;
    const tokens = tokensOf(args, config.options);
    const problem =
      flagProblem(
        command,
        args,
        tokens,
        config.options,
        config.allowPositionals === true,
        unknownAdvice,
      ) ?? (error as Error).message.replace(/\s*\n\s*/g, " ");
    if (asksForHelp(tokens, config.options)) {
      return {
        ...(parseArgs({ ...config, args: ["--help"] }) as Parsed<T>),
        mistake: `baton ${command}: ${problem} (only the help was shown, for --help)`,
      };
    }
    throw new ConfigError(`${problem} (baton ${command} --help lists its flags)`);
  }
}

/** `args` as `parseArgs` reads them with `flags`, refusing nothing. */
function tokensOf(args: readonly string[], flags: Flags): Token[] {
  return parseArgs({ args, options: flags, allowPositionals: true, strict: false, tokens: true })
    .tokens;
}

/**
 * The name among `flags` of a flag as written (`--help`; `-h`, its short name; `-json`, its
 * name after one dash), if it is one of them.
 */
function flagNamed(written: string, flags: Flags): string | undefined {
  const name = /^--?([^=]+)/.exec(written)?.[1];
  if (name === undefined || Object.hasOwn(flags, name)) return name;
  if (written.startsWith("--")) return undefined;
  return Object.keys(flags).find((flag) => flags[flag]!.short === name);
}

/**
 * Whether `tokens` ask for the command's `--help` (or `-h`): as a flag, or as what follows a
 * flag that takes a value (`--name --help`), which `flagProblem` names as a flag too.
 */
function asksForHelp(tokens: readonly Token[], flags: Flags): boolean {
  if (!Object.hasOwn(flags, "help")) return false;
  return tokens.some(
    (token) =>
      token.kind === "option" &&
      (token.name === "help" ||
        (!token.inlineValue &&
          token.value !== undefined &&
          flagNamed(token.value, flags) === "help")),
  );
}

/**
 * What is wrong with `args` (read by `parseArgs` as `tokens`) at the first argument it
 * would refuse; `undefined` when it would refuse none.
 */
function flagProblem(
  command: string,
  args: readonly string[],
  tokens: readonly Token[],
  flags: Flags,
  allowPositionals: boolean,
  unknownAdvice: string,
): string | undefined {
  for (const [i, token] of tokens.entries()) {
    if (token.kind === "positional" && !allowPositionals) {
      return strayArguments(command, tokens, i, flags);
    }
    if (token.kind !== "option") continue;
    const flag = Object.hasOwn(flags, token.name) ? flags[token.name] : undefined;
    if (flag === undefined) {
      return unknownFlag(command, token.rawName, args[token.index]!, flags, unknownAdvice);
    }
    const name = `--${token.name}`;
    if (flag.type === "boolean") {
      if (token.value !== undefined) return `${name} takes no value; give it alone, as ${name}`;
    } else if (token.value === undefined) {
      return `${name} needs a value`;
    } else if (!token.inlineValue && token.value.startsWith("-")) {
      const next = flagNamed(token.value, flags);
      return next !== undefined
        ? `${name} needs a value, and is followed by the flag --${next}: give ${name} its value first`
        : `${name} is followed by a value starting with a dash; write ${name}=VALUE if that is its value, or give ${name} a value`;
    }
  }
  return undefined;
}

/**
 * An unknown flag of `command` (`rawName` as `parseArgs` names it, in the argument `arg`):
 * the command's `flags` it may be a typo of, else the other commands it is a flag of. A long
 * flag's name after one dash (`-workers`) is, to `parseArgs`, one-letter flags (`-w`, `-o`,
 * …): it is named whole only when it is close to a flag, or another command's.
 */
function unknownFlag(
  command: string,
  rawName: string,
  arg: string,
  flags: Flags,
  advice: string,
): string {
  const names = Object.keys(flags);
  let flag = rawName;
  let name = rawName.startsWith("--") ? rawName.slice(2) : undefined;
  let meant = name === undefined ? [] : closestFlags(name, names);
  const word = /^-([^-=][^=]+)/.exec(arg)?.[1];
  if (word !== undefined) {
    name = word;
    meant = names.includes(word) ? [word] : closestFlags(word, names);
  }
  const own = otherName(command, word ?? rawName.replace(/^--?/, ""));
  if (own !== undefined && Object.hasOwn(flags, own)) {
    meant = [own];
    if (word !== undefined) flag = `-${word}`;
  }
  const others = meant.length === 0 && name !== undefined ? commandsWith(name, command) : [];
  if (word !== undefined && meant.length + others.length > 0) flag = `-${word}`;
  let said = `unknown flag ${flag}`;
  if (meant.length > 0) said += `; did you mean ${or(meant.map((meantName) => `--${meantName}`))}?`;
  else if (others.length > 0) {
    const what = others.length === 1 ? `, to ${commandCatalog[others[0]!].does}` : "";
    said += `; --${name!.toLowerCase()} is for ${or(others.map((other) => `baton ${other}`))}${what}`;
  }
  if (advice === "") return said;
  return said.endsWith("?")
    ? `${said} ${advice[0]!.toUpperCase()}${advice.slice(1)}`
    : `${said}; ${advice}`;
}

/** The command's own flag that another tool calls `name` (`nproc-per-node`: `world`), if any. */
function otherName(command: string, name: string): string | undefined {
  if (!Object.hasOwn(commandCatalog, command)) return undefined;
  const entry: CommandEntry = commandCatalog[command as CommandName];
  return entry.otherNames !== undefined && Object.hasOwn(entry.otherNames, name)
    ? entry.otherNames[name]
    : undefined;
}

/** `items` joined with commas and "or". */
function or(items: readonly string[]): string {
  return new Intl.ListFormat("en", { type: "disjunction" }).format(items);
}

/** The commands other than `command` that have a flag `name` (in any case), in the catalog's order. */
function commandsWith(name: string, command: string): CommandName[] {
  const lower = name.toLowerCase();
  return (Object.keys(commandCatalog) as CommandName[]).filter(
    (other) => other !== command && Object.hasOwn(commandCatalog[other].flags, lower),
  );
}

/**
 * The flags `name` is likely meant as: its `closestName` (a typo), else those it is the
 * start of, when it is three letters or more (`secret` for `secret-file`, `keep` for
 * `keep-logs` and `keep-ended-logs`).
 */
function closestFlags(name: string, names: readonly string[]): string[] {
  const closest = closestName(name, names);
  if (closest !== undefined) return [closest];
  const lower = name.toLowerCase();
  return lower.length < 3 ? [] : names.filter((candidate) => candidate.startsWith(lower));
}

/**
 * The arguments where `command` takes only flags: each one from the first (`tokens[first]`)
 * on, up to a flag not the command's, named (`baton reap extra`: unexpected argument extra), and where they are when the one
 * before them says why they are there (after `--`, after a flag's value: a value with spaces
 * not quoted), with the command's usage; after a flag that takes no value, the first of them,
 * to leave out (`--json yes`). A command given a secret (`--secret-file`, `baton worker`)
 * does not repeat them, as one could be the secret itself, pasted: it counts them.
 */
function strayArguments(
  command: string,
  tokens: readonly Token[],
  first: number,
  flags: Flags,
): string {
  const previous = tokens[first - 1];
  const secret = Object.hasOwn(flags, "secret-file");
  if (previous?.kind === "option" && flags[previous.name]?.type === "boolean") {
    const stray = tokens[first] as Extract<Token, { kind: "positional" }>;
    const named = secret ? "argument" : unexpectedArguments([stray.value]);
    return `--${previous.name} takes no value; leave out the ${named} after it`;
  }
  // Up to a flag not the command's, whose value, if it takes one, would be named as a stray.
  const unknown = tokens.findIndex(
    (token, i) => i > first && token.kind === "option" && !Object.hasOwn(flags, token.name),
  );
  const strays = tokens
    .slice(first, unknown === -1 ? undefined : unknown)
    .flatMap((token) => (token.kind === "positional" ? [token.value] : []));
  const named = secret
    ? strays.length === 1
      ? "an unexpected argument (not repeated, as it could be a pasted secret)"
      : `${strays.length} unexpected arguments (not repeated, as one could be a pasted secret)`
    : unexpectedArguments(strays);
  const where =
    previous?.kind === "option-terminator"
      ? " after --"
      : previous?.kind === "option"
        ? ` after --${previous.name}'s value (a value with spaces needs quotes)`
        : "";
  const usage = Object.hasOwn(commandCatalog, command)
    ? `; usage: ${commandCatalog[command as CommandName].usage}`
    : "";
  return `${named}${where}: baton ${command} takes only flags${usage}`;
}
