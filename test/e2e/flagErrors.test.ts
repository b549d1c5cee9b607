/**
 * Every command's answer to a mistyped flag, as a user sees it from `node bin/baton.js`: one
 * line on stderr naming the closest flag of that command (or, close to none, the other
 * command it is a flag of) and its `--help`, exit code 2, nothing on stdout and nothing
 * started; with `--help` beside it, the help and then the mistake on stderr, exit code 0.
 * Every child still running when its test ends is killed by pid.
 */
import { afterEach, describe, expect, it } from "vitest";
import { startBaton, stopBatons } from "../fixtures/batonCli.ts";

afterEach(stopBatons);

const helpOf = (command: string) => `(baton ${command} --help lists its flags) [CONFIG]\n`;

describe("a mistyped flag", () => {
  it.each([
    ["run", ["examples/pipeline.graph.ts", "--worker", "4"], "--worker; did you mean --workers?"],
    ["worker", ["--conect", "ws://127.0.0.1:1"], "--conect; did you mean --connect?"],
    ["worker", ["--silence-limit", "3"], "--silence-limit; did you mean --silence-limit-ms?"],
    ["sim", ["--sede", "3"], "--sede; did you mean --seed?"],
    ["sim", ["-seeds", "1..3"], "-seeds; did you mean --seeds?"],
    [
      "launch",
      ["--wrold", "2", "--", "true"],
      "--wrold; did you mean --world? If it is the command's own, put the command after -- (baton launch --world 2 -- cmd --its-flags)",
    ],
    ["reap", ["--grace", "5"], "--grace; did you mean --grace-ms?"],
    ["status", ["--state", "/nonexistent"], "--state; did you mean --state-dir?"],
    // A flag of another command is no flag of this one.
    ["status", ["--worker", "2"], "--worker"],
    ["viz", ["--fromat", "json"], "--fromat; did you mean --format?"],
  ])("baton %s %j names the command's closest flag", async (command, args, says) => {
    const { code, stdout, stderr } = await startBaton([command, ...args]).exit;
    expect(stderr).toBe(`baton ${command}: unknown flag ${says} ${helpOf(command)}`);
    expect(code).toBe(2);
    expect(stdout).toBe("");
  });
});

describe("a flag's value where none goes, or none where one does", () => {
  it.each([
    ["status", ["--json=1"], "--json takes no value; give it alone, as --json"],
    ["sim", ["--seeds"], "--seeds needs a value"],
    [
      "reap",
      ["--json", "yes"],
      "--json takes no value; leave out the unexpected argument yes after it",
    ],
    // Never repeated: a stray argument to a worker could be a pasted secret.
    [
      "worker",
      ["--name", "w1", "s3cr3t"],
      "an unexpected argument (not repeated, as it could be a pasted secret) after --name's value (a value with spaces needs quotes): baton worker takes only flags; usage: baton worker --connect ws://HOST:PORT --jobs FILE --secret-file FILE [options]",
    ],
    // Named, with the command's usage, by a command that takes no secret.
    [
      "reap",
      ["extra"],
      "unexpected argument extra: baton reap takes only flags; usage: baton reap [--state-dir DIR] [options]",
    ],
    [
      "status",
      ["--state-dir", "my", "run dir"],
      "unexpected argument 'run dir' after --state-dir's value (a value with spaces needs quotes): baton status takes only flags; usage: baton status [--state-dir DIR] [--json]",
    ],
  ])("baton %s %j says what to do", async (command, args, says) => {
    const { code, stdout, stderr } = await startBaton([command, ...args]).exit;
    expect(stderr).toBe(`baton ${command}: ${says} ${helpOf(command)}`);
    expect(code).toBe(2);
    expect(stdout).toBe("");
  });
});

describe("a missing or extra argument", () => {
  it.each([
    ["run", [], "give the graph module to run, such as baton run examples/pipeline.graph.ts"],
    [
      "run",
      ["examples/pipeline.graph.ts", "examples/pipeline.jobs.ts"],
      "give one graph module, not 2 (examples/pipeline.graph.ts, examples/pipeline.jobs.ts)",
    ],
    [
      "worker",
      ["--jobs", "examples/pipeline.jobs.ts"],
      "give --connect and --secret-file (or BATON_SECRET): the baton worker command that baton run prints has them all",
    ],
    [
      "sim",
      ["examples/pipeline.graph.ts", "examples/pipeline.jobs.ts"],
      "give one graph module, not 2 (examples/pipeline.graph.ts, examples/pipeline.jobs.ts): GRAPH --handlers SIM",
    ],
    ["viz", ["coordinator", "rank"], "give at most one machine, not 2 (coordinator, rank)"],
  ])("baton %s %j says what to give, naming the command once", async (command, args, says) => {
    const { code, stdout, stderr } = await startBaton([command, ...args], {
      env: { BATON_SECRET: undefined },
    }).exit;
    expect(stderr.startsWith(`baton ${command}: ${says} (`)).toBe(true);
    expect(stderr).not.toContain(`baton ${command}: baton ${command}`);
    expect(code).toBe(2);
    expect(stdout).toBe("");
  });
});

describe("an argument to help or version beyond what it takes", () => {
  it.each([
    [
      ["version", "extra"],
      "baton version: unexpected argument extra: baton version takes no arguments; usage: baton version [CONFIG]\n",
    ],
    [
      ["--version", "a", "b c"],
      "baton version: unexpected arguments a, 'b c': baton version takes no arguments; usage: baton version [CONFIG]\n",
    ],
    [
      ["help", "run", "extra"],
      "baton help: unexpected argument extra: baton help takes one command at most; usage: baton help [COMMAND] [CONFIG]\n",
    ],
    [
      ["-h", "run", "extra"],
      "baton help: unexpected argument extra: baton help takes one command at most; usage: baton help [COMMAND] [CONFIG]\n",
    ],
  ])("baton %j names it, with the usage, exit 2", async (args, says) => {
    const { code, stdout, stderr } = await startBaton(args).exit;
    expect(stderr).toBe(says);
    expect(code).toBe(2);
    expect(stdout).toBe("");
  });

  it("baton --help COMMAND is baton help COMMAND: the command's help, or no such command, exit 2", async () => {
    const status = await startBaton(["--help", "status"]).exit;
    expect(status.stdout).toMatch(/^usage: baton status /);
    expect(status.code).toBe(0);
    const { code, stdout, stderr } = await startBaton(["--help", "extra"]).exit;
    expect(stderr).toMatch(/^baton: unknown command "extra"\n\nusage: baton <command>/);
    expect(code).toBe(2);
    expect(stdout).toBe("");
  });

  it("baton version --help and baton help version print the help, exit 0", async () => {
    for (const args of [
      ["version", "--help"],
      ["help", "version"],
    ]) {
      const { code, stdout, stderr } = await startBaton(args).exit;
      expect(stdout, args.join(" ")).toMatch(/^usage: baton <command> \[options\]\n/);
      expect(stdout).toContain("  version              print baton's version (also --version)\n");
      expect(stderr).toBe("");
      expect(code).toBe(0);
    }
  });
});

describe("a flag of another command", () => {
  it("baton run g.ts --seeds 1..10 names the command it is for", async () => {
    const args = ["run", "examples/pipeline.graph.ts", "--seeds", "1..10"];
    const { code, stdout, stderr } = await startBaton(args).exit;
    expect(stderr).toBe(
      `baton run: unknown flag --seeds; --seeds is for baton sim, to simulate the system from seeds, with faults ${helpOf("run")}`,
    );
    expect(code).toBe(2);
    expect(stdout).toBe("");
  });
});

describe("--help beside a mistake", () => {
  it("baton run --wrokers 2 --help prints the help, then the mistake on stderr, exit 0", async () => {
    const { code, stdout, stderr } = await startBaton(["run", "--wrokers", "2", "--help"]).exit;
    expect(stdout).toMatch(/^usage: baton run /);
    expect(stderr).toBe(
      "baton run: unknown flag --wrokers; did you mean --workers? (only the help was shown, for --help)\n",
    );
    expect(code).toBe(0);
  });
});
