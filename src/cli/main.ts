import { readFileSync } from "node:fs";
import { relative, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { didYouMean } from "../closestName.ts";
import { BatonError } from "../errors.ts";
import { codedMessage } from "./codedMessage.ts";
import { type CommandName, commandCatalog } from "./commandCatalog.ts";
import { unexpectedArguments } from "./unexpectedArguments.ts";

export { exitAfterStdoutFailure, stdoutFailure } from "./stdoutFailure.ts";

/**
 * The two commands `main` answers itself, with no module of their own: their operands, what
 * they do (for `baton help`) and what they take, which a refusal of more says.
 */
const OWN_COMMANDS = {
  help: {
    operands: "[COMMAND]",
    does: "this help, or a command's (as baton COMMAND --help)",
    takes: "one command at most",
  },
  version: { operands: "", does: "print baton's version (also --version)", takes: "no arguments" },
} as const;

/** `baton help`: each command of the catalog with its operands and what it does, then `help` and `version`. */
const USAGE = `usage: baton <command> [options]

commands:
${Object.entries(commandCatalog)
  .map(
    ([name, { operands, does }]) =>
      `  ${`${name} ${operands}`.padEnd(21)}${does} (baton ${name} --help)`,
  )
  .join("\n")}
${Object.entries(OWN_COMMANDS)
  .map(([name, { operands, does }]) => `  ${`${name} ${operands}`.padEnd(21)}${does}`)
  .join("\n")}`;

/**
 * The example to try first, as a path from the working directory: `examples/…` in a clone,
 * `node_modules/baton/examples/…` where baton is installed, whose store then goes here
 * rather than into node_modules.
 */
function quickStart(): string {
  const example = relative(
    process.cwd(),
    fileURLToPath(new URL("../../examples/pipeline.graph.ts", import.meta.url)),
  );
  const installed = example.split(sep).includes("node_modules");
  return `Quick start: baton run ${example}${installed ? " --store .baton" : ""}`;
}

/**
 * A file-system error on a path the user gave, and what it means: one line, not a stack. What
 * this user may not do to the path (`EACCES`) depends on the operation and the path: that is
 * `permissionAdvice`'s to say, loaded only then.
 */
const PATH_ERRORS: Readonly<Record<string, string>> = {
  ENOENT: "no such file or directory; check the path",
  ENOTDIR: "part of that path is a file, not a directory; give another path",
  EISDIR: "it is a directory, where a file is expected",
  EROFS: "the file system is read-only; give a path you can write to",
  ENOSPC: "no space left on the disk; free some space, or give a path on another disk",
  EDQUOT: "this user's disk quota is used up; free some space, or give a path on another disk",
};

type Command = (argv: string[]) => Promise<number>;

/** Whether `arg` asks for help as every command's `--help` (`-h`) does. */
function isHelpFlag(arg: string): boolean {
  return arg === "--help" || arg === "-h";
}

/**
 * The command a first argument names: `--help` (`-h`) is `help` and `--version` is `version`,
 * with the same operands, as `git --help commit` is `git help commit`.
 */
function commandNamed(first: string | undefined): string | undefined {
  if (first === "--version") return "version";
  return first !== undefined && isHelpFlag(first) ? "help" : first;
}

/**
 * Refuses the arguments `help` or `version` (`command`) does not take, named, with its usage,
 * as `parseFlags` refuses another command's: exit code 2.
 */
function refuseMore(command: keyof typeof OWN_COMMANDS, strays: readonly string[]): number {
  const { operands, takes } = OWN_COMMANDS[command];
  const usage = `baton ${command}${operands === "" ? "" : ` ${operands}`}`;
  const message = `${unexpectedArguments(strays)}: baton ${command} takes ${takes}; usage: ${usage}`;
  process.stderr.write(`baton ${command}: ${codedMessage(message, "CONFIG")}\n`);
  return 2;
}

/**
 * Each command's module, imported only when that command runs: `baton version`, `help` and
 * `status` never load the engine, the simulation, the dashboard or their dependencies
 * (xstate, ws, pino, fast-check, the inspector), nor `reap` more of them than its logger and
 * the teardown machine; importing all of them took most of a second.
 */
const commands: Record<CommandName, () => Promise<Command>> = {
  run: async () => (await import("./runCommand.ts")).runCommand,
  worker: async () => (await import("./workerCommand.ts")).workerCommand,
  sim: async () => (await import("./simCommand.ts")).simCommand,
  launch: async () => (await import("./launchCommand.ts")).launchCommand,
  reap: async () => (await import("./reapCommand.ts")).reapCommand,
  status: async () => (await import("./statusCommand.ts")).statusCommand,
  viz: async () => (await import("./vizCommand.ts")).vizCommand,
};

/**
 * The `baton` command line. Returns the process exit code; errors a person can act on are
 * printed as one line (with the code), anything unexpected with its stack.
 *
 * @example
 * ```ts
 * process.exitCode = await main(["run", "examples/pipeline.graph.ts", "--json"]);
 * ```
 */
export async function main(argv: string[]): Promise<number> {
  const [first, ...rest] = argv;
  const name = commandNamed(first);
  if (name === "help" && rest.length > 1) return refuseMore("help", rest.slice(1));
  const [operand] = rest;
  if (name === "help" && operand !== undefined && !isHelpFlag(operand)) {
    return main([operand, "--help"]);
  }
  const asksForHelp = name === "version" && rest.some(isHelpFlag);
  if (name === undefined || name === "help" || asksForHelp) {
    process.stdout.write(`${USAGE}\n\n${quickStart()}\n`);
    return name === undefined ? 2 : 0;
  }
  if (name === "version") {
    if (rest.length > 0) return refuseMore("version", rest);
    const pkg = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8"));
    process.stdout.write(`baton ${pkg.version}\n`);
    return 0;
  }
  const load = Object.hasOwn(commands, name) ? commands[name as CommandName] : undefined;
  if (!load) {
    process.stderr.write(
      `baton: unknown command "${name}"${didYouMean(name, [...Object.keys(commands), "help", "version"], (meant) => `baton ${meant}`)}\n\n${USAGE}\n`,
    );
    return 2;
  }
  try {
    const command = await load();
    return await command(rest);
  } catch (error) {
    if (error instanceof BatonError) {
      process.stderr.write(`baton ${name}: ${codedMessage(error.message, error.code)}\n`);
      return 2;
    }
    const system = error as NodeJS.ErrnoException;
    // A full disk is the machine's, whatever the file: a write through a handle names none.
    const advice =
      system.path === undefined
        ? system.code === "ENOSPC" || system.code === "EDQUOT"
          ? PATH_ERRORS[system.code]
          : undefined
        : system.code === "EACCES"
          ? (await import("../runtime/permissionAdvice.ts")).permissionAdvice(
              system.syscall,
              system.path,
            )
          : PATH_ERRORS[system.code ?? ""];
    if (advice !== undefined) {
      process.stderr.write(
        `baton ${name}: cannot ${system.syscall ?? "use"}${system.path === undefined ? "" : ` ${system.path}`}: ${advice} [${system.code}]\n`,
      );
      return 2;
    }
    throw error;
  }
}
