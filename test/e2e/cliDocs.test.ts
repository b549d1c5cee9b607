/**
 * `baton <command> --help` and README.md name the same flags: every flag a command's help
 * lists is documented in the README's section on that command, and every flag the README
 * shows on a `baton <command>` line (its synopses and examples, up to a `--` that starts the
 * ranks' own command) is one the command's help lists.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { SIM_DEFAULTS } from "../../src/cli/simCommand.ts";
import { DEFAULT_HEARTBEAT_MS } from "../../src/machines/connection.ts";
import { DEFAULT_TEARDOWN_TIMEOUTS } from "../../src/machines/teardown.ts";
import { INSPECTOR_OPEN_TIMEOUT_MS } from "../../src/runtime/inspector.ts";
import { DEFAULT_RANK_GROUP_TIMEOUTS } from "../../src/runtime/rankGroup.ts";
import { STORE_FULL_WAIT_MS } from "../../src/runtime/resultWriter.ts";
import { DEFAULT_UNREACHABLE_MS } from "../../src/runtime/slurmPool.ts";
import { DEFAULT_WELCOME_TIMEOUT_MS, SILENCE_LIMIT_PINGS } from "../../src/runtime/worker.ts";
import { DEFAULT_ABORT_GRACE_MS } from "../../src/runtime/workerProcessOptions.ts";
import { DEFAULT_CONNECT_TIMEOUT_MS } from "../../src/runtime/wsNet.ts";
import { DRAWN_WORLD } from "../../src/sim/drawnRankGroups.ts";
import { faultHorizonMs } from "../../src/sim/faultPlan.ts";
import { SIM_LIMITS } from "../../src/sim/simLimits.ts";
import { type BatonExit, ROOT, startBaton, stopBatons } from "../fixtures/batonCli.ts";

afterEach(() => stopBatons());

const README = readFileSync(join(ROOT, "README.md"), "utf8");

/** Each help asked for, once per file: `baton COMMAND --help`, or `baton help` for "help". */
const helps = new Map<string, Promise<BatonExit>>();
function helpOf(command: string): Promise<BatonExit> {
  if (!helps.has(command))
    helps.set(command, startBaton(command === "help" ? ["help"] : [command, "--help"]).exit);
  return helps.get(command)!;
}

/** The README section each command is documented in. */
const SECTIONS = {
  run: "## The CLI",
  worker: "## The CLI",
  launch: "## Rank groups",
  reap: "## Rank groups",
  status: "## Rank groups",
  sim: "## Simulation",
  viz: "## Visualiser",
} as const;

/** `--flag`s in a text, not counting a value's own (`--slurm-opt=--time=1:00:00`). */
function flags(text: string): Set<string> {
  return new Set([...text.matchAll(/(?<![\w=-])--[a-z][a-z-]*/g)].map(([flag]) => flag));
}

function section(title: string): string {
  const start = README.indexOf(`\n${title}\n`);
  expect(start).toBeGreaterThanOrEqual(0);
  const end = README.indexOf("\n## ", start + 1);
  return README.slice(start, end < 0 ? undefined : end);
}

/** The flags README shows on `baton COMMAND` lines: in code blocks (with their continuation lines) and inline. */
function shownFlags(command: string): Set<string> {
  const lines: string[] = [];
  let inBlock = false;
  let inCommand = false;
  for (const line of README.split("\n")) {
    if (line.startsWith("```")) inBlock = !inBlock;
    if (line.startsWith(`baton ${command} `) || line === `baton ${command}`) inCommand = inBlock;
    else if (!line.startsWith(" ")) inCommand = false;
    if (inCommand) lines.push(line);
  }
  for (const [, inline] of README.matchAll(new RegExp(`\`baton ${command} ([^\`]*)\``, "g"))) {
    lines.push(inline!);
  }
  return flags(lines.map((line) => line.split(" -- ")[0]!.split(" #")[0]!).join("\n"));
}

describe("the commands' flags in their --help and in README.md", () => {
  it.each(Object.entries(SECTIONS))(
    "baton %s: its --help and the README name the same flags",
    async (command, title) => {
      const help = await helpOf(command);
      expect(help.code).toBe(0);
      const listed = flags(help.stdout);
      listed.delete("--help");
      expect(listed.size).toBeGreaterThan(0);
      const documented = flags(section(title));
      expect([...listed].filter((flag) => !documented.has(flag))).toEqual([]);
      expect([...shownFlags(command)].filter((flag) => !listed.has(flag))).toEqual([]);
    },
  );

  it("finds the flags of a command's lines, not those of the ranks' command after --", () => {
    expect([...shownFlags("launch")]).toEqual(expect.arrayContaining(["--world", "--hosts"]));
    expect(shownFlags("launch").has("--steps")).toBe(false);
    expect(flags("--slurm-opt=--time=1:00:00 [--ui]")).toEqual(new Set(["--slurm-opt", "--ui"]));
  });
});

describe("README.md's baton run and baton worker pairs", () => {
  it("give the worker the job module the coordinator loads (--jobs, or else the graph module), as a worker must", () => {
    const pairs = [...README.matchAll(/^```\n(baton run .*)\n(baton worker .*)\n```$/gm)];
    expect(pairs.length).toBeGreaterThan(0);
    for (const [, run, worker] of pairs) {
      const loaded = / --jobs (\S+)/.exec(run!)?.[1] ?? /^baton run (\S+)/.exec(run!)![1];
      expect(worker).toContain(` --jobs ${loaded} `);
    }
  });
});

describe("the defaults the helps state", () => {
  it.each([
    ["run", "--store-full-wait", `(default ${STORE_FULL_WAIT_MS / 60_000}m)`],
    ["run", "--abort-grace", `(default ${DEFAULT_ABORT_GRACE_MS / 1000}s)`],
    ["worker", "--abort-grace", `(default ${DEFAULT_ABORT_GRACE_MS / 1000}s)`],
    ["run", "--inspect-unreachable-after", `(default ${INSPECTOR_OPEN_TIMEOUT_MS / 1000}s)`],
    ["run", "--slurm-unreachable-after", `(default ${DEFAULT_UNREACHABLE_MS / 1000}s)`],
    [
      "worker",
      "--silence-limit-ms",
      `(default: ${SILENCE_LIMIT_PINGS} times the ping interval it announces: ${SILENCE_LIMIT_PINGS * DEFAULT_HEARTBEAT_MS} for ${DEFAULT_HEARTBEAT_MS / 1000} s)`,
    ],
    [
      "worker",
      "--welcome-timeout-ms",
      `(default: ${DEFAULT_CONNECT_TIMEOUT_MS} to accept it, as a frozen coordinator never does, then ${DEFAULT_WELCOME_TIMEOUT_MS} for the welcome)`,
    ],
    ["launch", "--grace-ms", `(default ${DEFAULT_TEARDOWN_TIMEOUTS.termGraceMs};`],
    [
      "launch",
      "--load-timeout-ms",
      `(default ${DEFAULT_RANK_GROUP_TIMEOUTS.loadTimeoutMs}: ${DEFAULT_RANK_GROUP_TIMEOUTS.loadTimeoutMs / 60_000} min;`,
    ],
    ["reap", "--grace-ms", `(default ${DEFAULT_TEARDOWN_TIMEOUTS.termGraceMs})`],
    ["sim", "--seeds", `(default ${SIM_DEFAULTS.seeds})`],
    [
      "sim",
      "--faults-within",
      `default ${faultHorizonMs("default") / 1000}s, heavy ${faultHorizonMs("heavy") / 1000}s)`,
    ],
    ["sim", "--jobs", `(default ${SIM_DEFAULTS.jobs}, at most ${SIM_LIMITS.jobs};`],
    ["sim", "--workers", `(default ${SIM_DEFAULTS.workers}, at most ${SIM_LIMITS.workers})`],
    ["sim", "--world", `at most ${SIM_LIMITS.world}; 0: none (default ${DRAWN_WORLD} with`],
  ])("baton %s: %s's is the code's, %s", async (command, flag, phrase) => {
    const help = await helpOf(command);
    const entry = help.stdout.slice(help.stdout.indexOf(`\n  ${flag} `));
    // The flag's entry: up to the next flag's line.
    expect(entry.slice(0, entry.indexOf("\n  -", 1)).replace(/\s+/g, " ")).toContain(phrase);
  });
});

describe("the helps, read on a terminal", () => {
  it.each(["help", ...Object.keys(SECTIONS)])(
    "baton %s: every line fits in 92 columns, as the rest of the help is wrapped",
    async (command) => {
      const help = await helpOf(command);
      expect(help.code).toBe(0);
      const wide = help.stdout.split("\n").filter((line) => [...line].length > 92);
      expect(wide).toEqual([]);
    },
  );
});

/** A command's --help split into its flags' entries: `--flag VALUE  text…`, with their continuation lines. */
function helpEntries(help: string): Map<string, string> {
  const entries = new Map<string, string>();
  let flag: string | undefined;
  for (const line of help.split("\n")) {
    const start = /^ {2}(?:-\w, )?(--[a-z-]+)/.exec(line);
    if (start) {
      flag = start[1]!;
      entries.set(flag, line.trim());
    } else if (flag !== undefined && /^ {6,}\S/.test(line)) {
      entries.set(flag, `${entries.get(flag)} ${line.trim()}`);
    } else flag = undefined;
  }
  return entries;
}

describe("baton run --help and baton worker --help, read by a new user", () => {
  it.each(["run", "worker"])(
    "baton %s: every flag that takes a value says its default (or that it is required) and its unit",
    async (command) => {
      const help = await helpOf(command);
      const entries = helpEntries(help.stdout);
      expect(entries.size).toBeGreaterThan(10);
      for (const [flag, entry] of entries) {
        // A value: `--flag VALUE`, `--flag=VALUE` or `--flag [VALUE]`.
        if (!/^--[a-z-]+(=| \[?[A-Z])/.test(entry)) continue;
        const says = `${flag}: ${entry}`;
        if (!/repeatable/.test(entry)) expect(says).toMatch(/default|required/);
        if (/ MS\b/.test(entry.split("  ")[0]!)) expect(says).toContain("milliseconds");
        if (/ DURATION\b/.test(entry.split("  ")[0]!)) expect(says).toMatch(/such as \d+[a-z]+/);
        if (/ MIB\b/.test(entry.split("  ")[0]!)) expect(says).toContain("MiB");
      }
    },
  );
});
