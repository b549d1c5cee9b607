import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { commandCatalog } from "../../src/cli/commandCatalog.ts";
import { parseFlags } from "../../src/cli/parseFlags.ts";
import { ConfigError } from "../../src/errors.ts";
import { ROOT } from "../fixtures/batonCli.ts";

/** A command's flags, as `baton run`'s and `baton worker`'s look. */
const OPTIONS = {
  workers: { type: "string" },
  world: { type: "string" },
  "secret-file": { type: "string" },
  "keep-logs": { type: "string" },
  "keep-ended-logs": { type: "string" },
  "dry-run": { type: "boolean" },
  "no-store": { type: "boolean" },
  json: { type: "boolean" },
  help: { type: "boolean", short: "h" },
} as const;

const HELP = " (baton try --help lists its flags)";

/** The message parseFlags refuses `args` with, for a command `try` taking these flags. */
function refusal(args: string[], allowPositionals = false, advice?: string): string {
  try {
    parseFlags("try", { args, options: OPTIONS, allowPositionals }, advice);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    const { message } = error as ConfigError;
    expect(message.endsWith(HELP)).toBe(true);
    return message.slice(0, -HELP.length);
  }
  throw new Error(`parseFlags accepted ${args.join(" ")}`);
}

describe("parseFlags", () => {
  it("gives parseArgs' values and positionals for arguments it accepts", () => {
    const { values, positionals } = parseFlags("try", {
      args: ["g.ts", "--workers", "4", "--json"],
      options: OPTIONS,
      allowPositionals: true,
    });
    expect(values).toEqual({ workers: "4", json: true });
    expect(positionals).toEqual(["g.ts"]);
  });

  it("joins a flag to the negative number after it, for the flag's own check", () => {
    expect(parseFlags("try", { args: ["--world", "-1"], options: OPTIONS }).values).toEqual({
      world: "-1",
    });
  });

  it.each([
    [["--worker", "4"], "unknown flag --worker; did you mean --workers?"],
    [["--worker=4"], "unknown flag --worker; did you mean --workers?"],
    [["--Workers", "4"], "unknown flag --Workers; did you mean --workers?"],
    [["--dryrun"], "unknown flag --dryrun; did you mean --dry-run?"],
    [["--wrold", "2"], "unknown flag --wrold; did you mean --world?"],
    // One dash: parseArgs reads -workers as -w -o -r …; it is named whole when close to a flag.
    [["-workers", "4"], "unknown flag -workers; did you mean --workers?"],
    [["-dryrun"], "unknown flag -dryrun; did you mean --dry-run?"],
    // The start of a flag's name: the flags it starts.
    [["--secret", "s"], "unknown flag --secret; did you mean --secret-file?"],
    [["--keep", "3"], "unknown flag --keep; did you mean --keep-logs or --keep-ended-logs?"],
  ])("names the closest flag of the command for %o", (args, message) => {
    expect(refusal(args)).toBe(message);
  });

  it.each([
    [["--colour"], "unknown flag --colour"],
    [["-n", "3"], "unknown flag -n"],
    // Two letters start too many names to be a likely start of one.
    [["--ke", "3"], "unknown flag --ke"],
    // Not close to a flag, so not repeated: it could be anything pasted, such as a secret.
    [["-s3cr3tvalue"], "unknown flag -s"],
  ])("names no flag for %o, which is close to none", (args, message) => {
    expect(refusal(args)).toBe(message);
  });

  it("adds the command's advice for an unknown flag, after a suggestion or without one", () => {
    const advice = "if it is the command's own, put it after --";
    expect(refusal(["--epochs", "3"], true, advice)).toBe(
      "unknown flag --epochs; if it is the command's own, put it after --",
    );
    expect(refusal(["--wrold", "2"], true, advice)).toBe(
      "unknown flag --wrold; did you mean --world? If it is the command's own, put it after --",
    );
  });

  it("names the other commands an unknown flag is a flag of, when it is close to none of this one's", () => {
    const run = (args: string[]) => {
      try {
        parseFlags("run", { args, options: commandCatalog.run.flags, allowPositionals: true });
      } catch (error) {
        return (error as ConfigError).message;
      }
      throw new Error(`parseFlags accepted ${args.join(" ")}`);
    };
    expect(run(["g.ts", "--seeds", "1..10"])).toBe(
      "unknown flag --seeds; --seeds is for baton sim, to simulate the system from seeds, with faults (baton run --help lists its flags)",
    );
    expect(run(["g.ts", "-seeds", "1..10"])).toMatch(
      /^unknown flag -seeds; --seeds is for baton sim,/,
    );
    expect(run(["g.ts", "--World", "2"])).toBe(
      "unknown flag --World; --world is for baton sim or baton launch (baton run --help lists its flags)",
    );
    // A typo of the command's own flag is the likelier mistake: workers is also baton sim's.
    expect(refusal(["--seed", "1"])).toBe(
      "unknown flag --seed; --seed is for baton sim, to simulate the system from seeds, with faults",
    );
    expect(refusal(["--workerz", "2"])).toBe("unknown flag --workerz; did you mean --workers?");
    expect(refusal(["--jobs", "2"], true, "if it is the command's own, put it after --")).toBe(
      "unknown flag --jobs; --jobs is for baton run, baton worker, or baton sim; if it is the command's own, put it after --",
    );
  });

  it.each([
    [["--nproc-per-node", "4"], "--nproc-per-node", "--world"],
    [["--nproc_per_node=4"], "--nproc_per_node", "--world"],
    [["-n", "4"], "-n", "--world"],
    [["-np", "4"], "-np", "--world"],
    [["--ranks", "4"], "--ranks", "--world"],
    [["--nnodes", "2"], "--nnodes", "--hosts"],
  ])("tells baton launch's %j, another launcher's name, its own flag", (args, flag, meant) => {
    const advice = "if it is the command's own, put the command after --";
    try {
      parseFlags(
        "launch",
        {
          args: [...args, "--", "true"],
          options: commandCatalog.launch.flags,
          allowPositionals: true,
        },
        advice,
      );
    } catch (error) {
      expect((error as ConfigError).message).toBe(
        `unknown flag ${flag}; did you mean ${meant}? If it is the command's own, put the command after -- (baton launch --help lists its flags)`,
      );
      return;
    }
    throw new Error(`parseFlags accepted ${args.join(" ")}`);
  });

  it("gives --help whatever else the arguments hold, with their mistake for after the help", () => {
    const help = parseFlags("try", { args: ["--help"], options: OPTIONS, allowPositionals: true });
    expect(help.mistake).toBeUndefined();
    const helped = (args: string[], allowPositionals = false) => {
      const { mistake, ...parsed } = parseFlags("try", {
        args,
        options: OPTIONS,
        allowPositionals,
      });
      expect(parsed).toEqual(help);
      return mistake;
    };
    const shown = " (only the help was shown, for --help)";
    expect(helped(["--wrokers", "2", "--help"], true)).toBe(
      `baton try: unknown flag --wrokers; did you mean --workers?${shown}`,
    );
    expect(helped(["-h", "--bogus"])).toBe(`baton try: unknown flag --bogus${shown}`);
    expect(helped(["-hx"])).toBe(`baton try: unknown flag -x${shown}`);
    expect(helped(["--help=yes"])).toBe(
      `baton try: --help takes no value; give it alone, as --help${shown}`,
    );
    expect(helped(["s3cr3t", "--help"])).toBe(
      `baton try: an unexpected argument (not repeated, as it could be a pasted secret): baton try takes only flags${shown}`,
    );
    // Where parseFlags names --help (-h) as a flag after one that needs a value, it is one.
    for (const asked of ["--help", "-h"]) {
      expect(helped(["--secret-file", asked])).toBe(
        `baton try: --secret-file needs a value, and is followed by the flag --help: give --secret-file its value first${shown}`,
      );
    }
  });

  it("takes no --help from a flag's value or from after --", () => {
    expect(parseFlags("try", { args: ["--secret-file=--help"], options: OPTIONS }).values).toEqual({
      "secret-file": "--help",
    });
    expect(refusal(["--secret-file=--help", "--bogus"])).toBe("unknown flag --bogus");
    expect(refusal(["--bogus", "--", "--help"], true)).toBe("unknown flag --bogus");
  });

  it("refuses a value for a flag that takes none", () => {
    expect(refusal(["--no-store=1"])).toBe(
      "--no-store takes no value; give it alone, as --no-store",
    );
  });

  it("names a flag given no value, last or followed by another flag", () => {
    expect(refusal(["--json", "--workers"])).toBe("--workers needs a value");
    expect(refusal(["--workers", "--json"])).toBe(
      "--workers needs a value, and is followed by the flag --json: give --workers its value first",
    );
    expect(refusal(["--workers", "-x"])).toBe(
      "--workers is followed by a value starting with a dash; write --workers=VALUE if that is its value, or give --workers a value",
    );
  });

  it("names the arguments where the command takes only flags, and where they are, with its usage", () => {
    const reap = (args: string[]) => {
      try {
        parseFlags("reap", { args, options: commandCatalog.reap.flags });
      } catch (error) {
        return (error as ConfigError).message;
      }
      throw new Error(`parseFlags accepted ${args.join(" ")}`);
    };
    const usage =
      "baton reap takes only flags; usage: baton reap [--state-dir DIR] [options] (baton reap --help lists its flags)";
    expect(reap(["extra"])).toBe(`unexpected argument extra: ${usage}`);
    expect(reap(["extra", "--json", "more x"])).toBe(
      `unexpected arguments extra, 'more x': ${usage}`,
    );
    expect(reap(["--state-dir", "my", "run"])).toBe(
      `unexpected argument run after --state-dir's value (a value with spaces needs quotes): ${usage}`,
    );
    expect(reap(["--json", "--", "x", "y"])).toBe(`unexpected arguments x, y after --: ${usage}`);
    // The 4 may be --worker's value: the arguments named stop at a flag not the command's.
    expect(reap(["extra", "--worker", "4"])).toBe(`unexpected argument extra: ${usage}`);
    expect(reap(["--json", "yes", "more"])).toBe(
      "--json takes no value; leave out the unexpected argument yes after it (baton reap --help lists its flags)",
    );
  });

  it("never repeats an argument where a command given a secret takes only flags: it counts them", () => {
    expect(refusal(["s3cr3t"])).toBe(
      "an unexpected argument (not repeated, as it could be a pasted secret): baton try takes only flags",
    );
    expect(refusal(["--secret-file", "my", "file", "s3cr3t"])).toBe(
      "2 unexpected arguments (not repeated, as one could be a pasted secret) after --secret-file's value (a value with spaces needs quotes): baton try takes only flags",
    );
    expect(refusal(["--json", "--", "x"])).toBe(
      "an unexpected argument (not repeated, as it could be a pasted secret) after --: baton try takes only flags",
    );
    expect(refusal(["--json", "s3cr3t"])).toBe(
      "--json takes no value; leave out the argument after it",
    );
    for (const args of [["s3cr3t"], ["--workers", "2", "s3cr3t"], ["--json", "s3cr3t"]]) {
      expect(refusal(args)).not.toContain("s3cr3t");
    }
  });

  it("names the first argument parseArgs refuses, as it would", () => {
    expect(refusal(["--worker", "4", "--no-store=1", "extra"])).toBe(
      "unknown flag --worker; did you mean --workers?",
    );
    expect(refusal(["extra", "--worker", "4"])).toBe(
      "an unexpected argument (not repeated, as it could be a pasted secret): baton try takes only flags",
    );
  });

  it("is how every command reads its arguments: no other file of src/ calls parseArgs", () => {
    const src = join(ROOT, "src");
    const callers = readdirSync(src, { recursive: true, encoding: "utf8" })
      .filter((file) => file.endsWith(".ts"))
      .filter((file) => /\bparseArgs\s*[(<]/.test(readFileSync(join(src, file), "utf8")));
    expect(callers).toEqual([join("cli", "parseFlags.ts")]);
  });
});
