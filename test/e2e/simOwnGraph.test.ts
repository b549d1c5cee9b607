/**
 * `baton sim GRAPH --handlers SIM` as a user hunting a race in their own graph runs it: seed
 * ranges on several threads (each importing the modules itself), a failure's replay command
 * that carries the modules and replays it, and clear refusals (exit 2) of what cannot run.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { ROOT, startBaton, startOwnBaton, stopBatons } from "../fixtures/batonCli.ts";
import { onTerminal, stopTerminals } from "../fixtures/onTerminal.ts";
import { stderrMatches } from "../fixtures/stderrMatches.ts";

/** Shells a test started: killed by pid if still running when it ends. */
const shells: ChildProcess[] = [];
afterEach(() => {
  stopBatons();
  stopTerminals();
  for (const shell of shells.splice(0)) {
    if (shell.exitCode === null && shell.signalCode === null) shell.kill("SIGKILL");
  }
});
/** Folders a test made, removed at the end. */
const folders: string[] = [];
afterAll(() => {
  for (const folder of folders) rmSync(folder, { recursive: true, force: true });
});

const sim = (...args: string[]) => startBaton(["sim", ...args]).exit;
const F = "test/fixtures";
const OWN = [`${F}/simOwn.graph.ts`, "--handlers", `${F}/simOwn.sim.ts`];
/** OWN as a replay command prints it: absolute, so that it replays from any folder. */
const OWN_ABSOLUTE = `${join(ROOT, F, "simOwn.graph.ts")} --handlers ${join(ROOT, F, "simOwn.sim.ts")}`;

/** The arguments of a printed `baton sim ...` command line (quotes removed). */
function argsOf(command: string): string[] {
  const words = command.match(/"[^"]*"|\S+/g) ?? [];
  return words.slice(2).map((w) => w.replace(/^"|"$/g, ""));
}

/** Handlers for simOwn.graph.ts whose merge always throws `message`, in a folder of the test's. */
function mergeThrows(message: string): string {
  const dir = mkdtempSync(join(tmpdir(), "baton-sim-throws-"));
  folders.push(dir);
  const file = join(dir, "throws.sim.mjs");
  writeFileSync(
    file,
    `export default () => ({
      fetch: (name) => name.length,
      merge: () => { throw new Error(${JSON.stringify(message)}); },
    });\n`,
  );
  return file;
}

/** The verdict lines of `stdout`, without their wall time. */
/**
 * simCharges seed 36's charge 2, as a failure follows it (ids as ID): a reset loses its worker,
 * and its second attempt charges again.
 */
const CHARGE_2_LINES = [
  "1 grant ID (charge 2) to sim:5 attempt 1",
  "953 fault reset sim:5 by client",
  "953 net sim:5 client closed 1006 connection reset",
  "953 net sim:5 server closed 1006 connection reset by peer",
  "953 job ID ready",
  "953 grant ID (charge 2) to sim:3 attempt 2",
  "3123 # ID (charge) attempt 1: its handler ended 2170 ms after its abort (connection closed: connection reset)",
  "3896 net sim:3 > server result ID completed",
  "3904 job ID completed",
];

const verdicts = (stdout: string) =>
  stdout
    .split("\n")
    .filter((line) => /^seed \d+: /.test(line))
    .map((line) => line.replace(/ in \d+ ms/, ""));

describe("baton sim on a graph of your own", () => {
  it("gives every seed of a range the same trace on 2 threads, the helper's too, as on 1", async () => {
    const one = await sim(...OWN, "--seeds", "1..4", "--workers", "2", "--threads", "1");
    // simOwnWhere.sim.ts traces as simOwn.sim.ts, and its merge on the calling thread returns
    // only once a helper's has run (a seed fails otherwise): seed 1 runs here, and some on the helper.
    const where = [OWN[0]!, "--handlers", `${F}/simOwnWhere.sim.ts`];
    const two = await sim(...where, "--seeds", "1..4", "--workers", "2", "--threads", "2");
    expect(two.stderr).toBe("");
    expect(one.code).toBe(0);
    expect(two.code).toBe(0);
    expect(verdicts(two.stdout)).toHaveLength(4);
    expect(verdicts(two.stdout)).toEqual(verdicts(one.stdout));
    expect(two.stdout).toMatch(/4 seeds, 0 failed, in [\d.]+ s \([\d.]+ seeds\/s on 2 threads\)/);
    // The graph's own jobs ran: the trace's grants name them by kind and input.
    const traced = await sim(...OWN, "--seed", "1", "--workers", "2", "--trace");
    expect(traced.stdout).toMatch(/grant \w+ \(fetch "dddd"\)/);
    expect(traced.stdout).toMatch(/grant \w+ \(merge\) to/);
    expect(verdicts(traced.stdout)).toEqual([verdicts(one.stdout)[0]]);
  });

  it("prints a replay command with the graph and handlers (absolute) that replays the failure from another folder, and shrinks only workers and faults", async () => {
    const exit = await sim(...OWN, "--seed", "0", "--workers", "3", "--plant", "lease-running-job");
    expect(exit.stderr).toBe("");
    expect(exit.code).toBe(1);
    const [failed] = verdicts(exit.stdout);
    expect(failed).toMatch(/^seed 0: FAIL invariant 1 /);
    const replay = /^replay: (baton sim .*)$/m.exec(exit.stdout)![1]!;
    expect(replay).toBe(
      `baton sim ${OWN_ABSOLUTE} --replay 0 --workers 3 --faults default --plant lease-running-job --trace`,
    );
    // Pasted in another folder than the one the seed failed in, as a person often does.
    const replayed = await startBaton(["sim", ...argsOf(replay)], { cwd: tmpdir() }).exit;
    expect(replayed.stderr).toBe("");
    expect(replayed.code).toBe(1);
    expect(verdicts(replayed.stdout)).toEqual([failed]);
    expect(replayed.stdout).not.toMatch(/smallest reproducer/);
    const small = /^smallest reproducer \(\d+ simulations\): (baton sim .*)$/m.exec(
      exit.stdout,
    )![1]!;
    expect(small).toMatch(new RegExp(`^baton sim ${OWN_ABSOLUTE} --replay 0 --workers [123] `));
    expect(small).not.toMatch(/--jobs/);
    const smaller = await sim(...argsOf(small));
    expect(smaller.code).toBe(1);
    expect(smaller.stdout).toMatch(/^seed 0: FAIL invariant 1 /m);
  });

  it("shrinks a seed that read the real clock, whose replays fail as it did and offer the dashboard", async () => {
    const stamps = [`${F}/simOwn.graph.ts`, "--handlers", `${F}/simOwnStamps.sim.ts`];
    const exit = await sim(...stamps, "--seed", "1", "--workers", "3");
    expect(exit.code).toBe(1);
    expect(verdicts(exit.stdout)[0]).toMatch(/^seed 1: FAIL invariant 0 /);
    const replay = /^replay: (baton sim .*)$/m.exec(exit.stdout)![1]!;
    const small = /^smallest reproducer \(\d+ simulations\): (baton sim .*)$/m.exec(
      exit.stdout,
    )![1]!;
    expect(small).toMatch(/ --workers 1 --faults none --trace$/);
    for (const command of [replay, small]) {
      const replayed = await sim(...argsOf(command));
      expect(replayed.code).toBe(1);
      expect(replayed.stdout).toMatch(/^seed 1 failed: invariant 0 .* called Date\.now\(\)/m);
      expect(replayed.stdout).toMatch(/^step through it in the dashboard: baton sim .* --ui$/m);
    }
  });

  it("draws rank groups beside your graph only with --world N, which its replay command keeps", async () => {
    const alone = await sim(...OWN, "--seed", "1", "--workers", "2", "--trace");
    expect(alone.code).toBe(0);
    expect(alone.stdout).toMatch(/grant \w+ \(merge\) to/);
    expect(alone.stdout).not.toMatch(/ ranks /);
    const beside = await sim(...OWN, "--seed", "1", "--workers", "2", "--world", "4", "--trace");
    expect(beside.code).toBe(0);
    expect(beside.stdout).toMatch(/ ranks launch 1 /);
    const failing = [
      "--seed",
      "0",
      "--workers",
      "3",
      "--plant",
      "lease-running-job",
      "--no-shrink",
    ];
    const exit = await sim(...OWN, ...failing, "--world", "4");
    expect(exit.code).toBe(1);
    expect(/^replay: (baton sim .*)$/m.exec(exit.stdout)![1]!).toBe(
      `baton sim ${OWN_ABSOLUTE} --replay 0 --workers 3 --faults default --world 4 --plant lease-running-job --trace`,
    );
  });

  it("prints a replay command that a shell runs from another folder, whatever the modules' folder is called", async () => {
    const dir = join(mkdtempSync(join(tmpdir(), "baton-sim-")), "my $HOME copy");
    folders.push(dirname(dir));
    mkdirSync(dir);
    writeFileSync(join(dir, "package.json"), JSON.stringify({ type: "module" }));
    for (const name of ["simOwn.graph.ts", "simOwn.sim.ts"]) {
      const source = readFileSync(join(ROOT, F, name), "utf8");
      writeFileSync(join(dir, name), source.replace("../../src/index.ts", "baton"));
    }
    const typed = ["simOwn.graph.ts", "--handlers", "simOwn.sim.ts"];
    const failing = [
      "--seed",
      "0",
      "--workers",
      "3",
      "--plant",
      "lease-running-job",
      "--no-shrink",
    ];
    const exit = await startBaton(["sim", ...typed, ...failing], { cwd: dir }).exit;
    expect(exit.code).toBe(1);
    const replay = /^replay: baton sim (.*)$/m.exec(exit.stdout)![1]!;
    const quoted = (name: string) => `"${join(dir, name).replace("$", "\\$")}"`;
    expect(replay).toBe(
      `${quoted("simOwn.graph.ts")} --handlers ${quoted("simOwn.sim.ts")} --replay 0 --workers 3 --faults default --plant lease-running-job --trace`,
    );
    // `exec`: the shell becomes the command, so the pid killed is the command's.
    const shell = spawn(
      "sh",
      ["-c", `exec "${process.execPath}" "${ROOT}/bin/baton.js" sim ${replay}`],
      {
        cwd: tmpdir(),
      },
    );
    shells.push(shell);
    let out = "";
    shell.stdout.setEncoding("utf8").on("data", (chunk: string) => {
      out += chunk;
    });
    const code = await new Promise((resolve) => shell.on("close", resolve));
    expect(code).toBe(1);
    expect(verdicts(out)).toEqual(verdicts(exit.stdout));
  });

  it("tells a handler whose dynamic import() failed the seed to import the module at the top of its file", async () => {
    const dir = mkdtempSync(join(tmpdir(), "baton-sim-import-"));
    folders.push(dir);
    writeFileSync(join(dir, "package.json"), '{ "type": "module" }\n');
    const file = join(dir, "lazy.sim.ts");
    writeFileSync(
      file,
      `export default () => ({
        fetch: async (name: string) => (await import("node:path")).basename(name).length,
        merge: () => 0,
      });\n`,
    );
    const exit = await sim(`${F}/simOwn.graph.ts`, "--handlers", file, "--seed", "1");
    expect(exit.code).toBe(1);
    expect(exit.stdout).toMatch(
      /violated: the handler of job [0-9a-f]{16} \(fetch\) started real asynchronous work \(MESSAGEPORT\).* If it is a dynamic import\(\) \(the module loader answers one on a MessagePort, in real time\), import the module at the top of your file instead/,
    );
  });

  it("says which of your jobs failed in a seed that passed, and in how many seeds of a range", async () => {
    const throwing = mergeThrows("boom: a part is missing\nat merge");
    const yours = [`${F}/simOwn.graph.ts`, "--handlers", throwing, "--workers", "2"];
    const one = await sim(...yours, "--seed", "1");
    expect(one.code).toBe(0);
    expect(one.stdout).toMatch(
      /^seed 1: pass \(\d+ virtual ms in \d+ ms, trace [0-9a-f]{16}\); 1 of your jobs failed: merge: boom: a part is missing\n$/,
    );
    const range = await sim(...yours, "--seeds", "1..3");
    expect(range.code).toBe(0);
    expect(range.stdout).toContain(
      "jobs of your graph failed in 3 passed seeds, the first in seed 1 (merge: boom: a part is missing): a failed job breaks no invariant; to fail a seed on a check of your own, call the tools' invariant(holds, message)",
    );
  });

  it("tells a ctx.need of a kind your handlers lack to add it to the --handlers module", async () => {
    const needs = `${F}/simOwnNeedsLacking.sim.ts`;
    const exit = await sim(`${F}/simOwn.graph.ts`, "--handlers", needs, "--seed", "1", "--json");
    expect(exit.code).toBe(0);
    expect(JSON.parse(exit.stdout).failed.map((f: { message: string }) => f.message)).toEqual([
      `Unknown job kind "score" (1 job). Add a handler for it to the --handlers module ${needs}, or fix the kind. The --handlers module ${needs} defines "fetch", "merge".`,
    ]);
  });

  it.each(["SIGINT", "SIGTERM"] as const)(
    "after %s on 2 threads, sums up the seeds done as a range's end does, with your failed jobs",
    async (signal) => {
      const throwing = mergeThrows("boom: a part is missing");
      const baton = startBaton([
        ...["sim", `${F}/simOwn.graph.ts`, "--handlers", throwing, "--workers", "2"],
        ...["--seeds", "1..5000", "--threads", "2"],
      ]);
      await stderrMatches(baton.stdout, /seed 3: pass/);
      baton.child.kill(signal);
      const { code, stdout, stderr } = await baton.exit;
      expect(code).toBe(signal === "SIGINT" ? 130 : 143);
      const [stopped, jobs, ...more] = stderr.split("\n");
      const [, done, next] = new RegExp(
        `^baton sim: ${signal}: stopped after (\\d+) of 5000 seeds, 0 failed, in [\\d.]+ s \\([\\d.]+ seeds/s on 2 threads\\)(?:; \\d+ later seeds? had ended, unreported while seed \\d+ ran)?; the rest(?: \\(which runs them again\\))?: baton sim \\S+ --handlers \\S+ --seeds (\\d+)\\.\\.5000 --workers 2 --faults default --threads 2$`,
      ).exec(stopped!)!;
      expect(Number(next)).toBe(Number(done) + 1);
      expect(stdout).toContain(`seed ${done}: pass`);
      expect(stdout).not.toContain(`seed ${next}: pass`);
      // Every seed done passed with its merge failed: the line a range's end prints, for them.
      expect(jobs).toBe(
        `jobs of your graph failed in ${done} passed seeds, the first in seed 1 (merge: boom: a part is missing): a failed job breaks no invariant; to fail a seed on a check of your own, call the tools' invariant(holds, message); --seed S --json lists a seed's failed jobs`,
      );
      expect(more).toEqual([""]);
    },
  );

  it("carries the modules in --json's replay command", async () => {
    const exit = await sim(
      ...OWN,
      ...["--seeds", "0..1", "--threads", "2", "--plant", "lease-running-job", "--json"],
      "--no-shrink",
    );
    expect(exit.code).toBe(1);
    const lines = exit.stdout
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line));
    expect(lines.map((line) => line.seed)).toEqual([0, 1]);
    const failures = lines.filter((line) => !line.ok);
    expect(exit.stderr).toMatch(
      new RegExp(
        `^2 seeds, ${failures.length} failed \\(the first in seed ${failures[0].seed}\\), in [\\d.]+ s \\([\\d.]+ seeds/s on 2 threads\\)\n$`,
      ),
    );
    const failed = failures[0];
    expect(failed.replay).toContain(`baton sim ${OWN_ABSOLUTE} --replay ${failed.seed} `);
    // Shrinking is what --no-shrink leaves out (the unit tests see smallest).
    expect(failed).not.toHaveProperty("smallest");
  });

  it("follows the job a failure names and the jobs granted again, each with its own lines, before the last events", async () => {
    const charges = [`${F}/simCharges.graph.ts`, "--handlers", `${F}/simCharges.sim.ts`];
    // Seed 36: a reset loses charge 2's worker, its second attempt charges again.
    const exit = await sim(...charges, "--seed", "36", "--no-shrink");
    expect(exit.code).toBe(1);
    const lines = exit.stdout.split("\n");
    const at = lines.findIndex((line) => line.startsWith("your jobs: "));
    expect(lines[at - 1]).toMatch(/^faults: /);
    expect(lines[at]).toBe(
      "your jobs: the one the failure names, then those granted more than once, with their lines of the trace (its replay prints them all):",
    );
    const reconcile = /^ {2}reconcile \(([0-9a-f]{16})\), 1 attempt:$/.exec(lines[at + 1]!)![1]!;
    expect(lines[1]).toContain(`job ${reconcile} (reconcile): order 2 charged 2 times`);
    const charge = lines.findIndex((line) =>
      /^ {2}charge 2 \([0-9a-f]{16}\), 2 attempts:$/.test(line),
    );
    const last = lines.findIndex((line) => line.startsWith("last "));
    expect(charge).toBeGreaterThan(at + 1);
    const timeline = lines.slice(charge + 1, last);
    expect(timeline.map((line) => line.replace(/[0-9a-f]{16}/g, "ID"))).toEqual(
      CHARGE_2_LINES.map((line) => `    ${line}`),
    );
    // The last events are those jobs', their connections' and the faults: no handshakes.
    expect(lines[last]).toBe(
      "last 13 events of your jobs, their connections and the faults (58 other lines since 0 left out: its replay prints them all):",
    );
    const events = lines.slice(
      last + 1,
      lines.findIndex((line) => line.startsWith("replay: ")),
    );
    expect(events).toHaveLength(13);
    expect(events).toContain("  953 fault reset sim:5 by client");
    expect(events.at(-1)).toMatch(/^ {2}4988 violation 15: /);
    expect(
      events.filter((line) => / > (client|server) (challenge|hello|welcome)$/.test(line)),
    ).toEqual([]);
  });

  it("gives --json of a failed seed the same jobs, as yourJobs: id, kind, attempts, running and lines, and yourJobsOf", async () => {
    const charges = [`${F}/simCharges.graph.ts`, "--handlers", `${F}/simCharges.sim.ts`];
    const exit = await sim(...charges, "--seed", "36", "--no-shrink", "--json");
    expect(exit.code).toBe(1);
    const { violation, yourJobs, yourJobsOf } = JSON.parse(exit.stdout);
    const [reconcile, charge] = yourJobs;
    expect(violation.message).toContain(`job ${reconcile.id} (reconcile): order 2 charged 2`);
    expect(yourJobs).toHaveLength(2);
    // The whole list: it follows no more than it shows.
    expect(yourJobsOf).toBe(2);
    expect(reconcile).toEqual({
      id: reconcile.id,
      kind: "reconcile",
      label: "reconcile",
      attempts: 1,
      named: true,
      running: true,
      earlier: 0,
      lines: [
        `4987 job ${reconcile.id} ready`,
        `4987 grant ${reconcile.id} (reconcile) to sim:2 attempt 1`,
      ],
    });
    expect(charge).toEqual({
      id: expect.stringMatching(/^[0-9a-f]{16}$/),
      kind: "charge",
      label: "charge 2",
      attempts: 2,
      named: false,
      running: false,
      earlier: 0,
      lines: CHARGE_2_LINES.map((line) => line.replaceAll("ID", charge.id)),
    });
  });

  it("says a run that only outlasts the default bound needs --until T, the command's flag (it said until, simulate's option)", async () => {
    const slow = [`${F}/simOwn.graph.ts`, "--handlers", `${F}/simOwnSlow.sim.ts`];
    const exit = await sim(...slow, "--seed", "1", "--faults", "none", "--no-shrink");
    expect(exit.code).toBe(1);
    expect(exit.stdout).toContain(
      "give --until T, the virtual time by which your run must be over (ms, or a duration such as 2h)",
    );
    const late = await sim(...slow, "--seed", "1", "--fault-list", "reset@5000:0", "--until", "10");
    expect(late.stdout).toContain("give --until after 5000 ms, or fewer faults");
  });

  it("starts the drawn faults within --faults-within, which finds a race a short run otherwise outruns, and its replay command keeps", async () => {
    const charges = [`${F}/simCharges.graph.ts`, "--handlers", `${F}/simCharges.sim.ts`];
    const seed = ["--seed", "1", "--workers", "2"];
    // The run is over in a few virtual seconds, before most faults drawn over 20 s.
    const outrun = await sim(...charges, ...seed, "--no-shrink");
    expect(outrun.code, outrun.stdout).toBe(0);
    const exit = await sim(...charges, ...seed, "--faults-within", "5s");
    expect(exit.stderr).toBe("");
    expect(exit.code).toBe(1);
    const [failed] = verdicts(exit.stdout);
    expect(failed).toMatch(/^seed 1: FAIL invariant 15 /);
    const faults = /^faults: (.*)$/m.exec(exit.stdout)![1]!;
    for (const at of faults.matchAll(/@(\d+)/g)) expect(Number(at[1])).toBeLessThanOrEqual(5_000);
    const replay = /^replay: (baton sim .*)$/m.exec(exit.stdout)![1]!;
    expect(replay).toMatch(
      / --replay 1 --workers 2 --faults default --faults-within 5000 --trace$/,
    );
    const replayed = await sim(...argsOf(replay));
    expect(replayed.code).toBe(1);
    expect(verdicts(replayed.stdout)).toEqual([failed]);
    // The smallest reproducer gives its faults as a list, which has their times.
    const small = /^smallest reproducer \(\d+ simulations\): (baton sim .*)$/m.exec(
      exit.stdout,
    )![1]!;
    expect(small).toMatch(/--fault-list "[^"]+"/);
    expect(small).not.toMatch(/--faults-within/);
    // A range whose runs were over before their faults says so, and what to give.
    const range = ["--seeds", "1..20", "--workers", "3", "--no-shrink"];
    const hint =
      /^your run was over before its first fault in (\d+) of (\d+) seeds .* give --faults-within (\d+)s/m;
    const outran = hint.exec((await sim(...charges, ...range)).stdout);
    expect(Number(outran![1]) * 2).toBeGreaterThan(Number(outran![2]));
    const within = await sim(...charges, ...range, "--faults-within", `${outran![3]}s`);
    expect(within.stdout).toMatch(/^20 seeds, \d+ failed/m);
    expect(within.stdout).not.toMatch(hint);
  });

  it("cancels the rest of the run after the first job failed for good with --fail-fast", async () => {
    const failFast = [`${F}/simOwn.graph.ts`, "--handlers", `${F}/simOwnFailFast.sim.ts`];
    const statuses = async (...flags: string[]) => {
      const r = await sim(...failFast, "--seed", "1", "--workers", "4", "--json", ...flags);
      expect(r.code, r.stderr).toBe(0);
      const { ok, outcomes } = JSON.parse(r.stdout) as {
        ok: boolean;
        outcomes: { kind: string; status: string }[];
      };
      expect(ok).toBe(true);
      return outcomes.map(({ kind, status }) => `${kind} ${status}`);
    };
    expect(await statuses("--fail-fast")).toEqual([
      "fetch failed",
      "fetch cancelled",
      "fetch cancelled",
      "fetch cancelled",
      "merge skipped",
    ]);
    expect(await statuses()).toEqual([
      "fetch failed",
      "fetch completed",
      "fetch completed",
      "fetch completed",
      "merge skipped",
    ]);
  });

  it("prints what each job returned in one seed's --json, and not in a range's", async () => {
    const one = await sim(...OWN, "--seed", "1", "--workers", "2", "--json");
    expect(one.stderr).toBe("");
    expect(one.code).toBe(0);
    const { outcomes } = JSON.parse(one.stdout) as {
      outcomes: { kind: string; status: string; value: unknown }[];
    };
    expect(outcomes.map(({ kind, status, value }) => [kind, status, value])).toEqual([
      ["fetch", "completed", 1],
      ["fetch", "completed", 2],
      ["fetch", "completed", 3],
      ["fetch", "completed", 4],
      ["merge", "completed", 10],
    ]);
    const range = await sim(...OWN, "--seeds", "1..2", "--workers", "2", "--json");
    expect(range.code).toBe(0);
    for (const line of range.stdout.trim().split("\n")) {
      expect(JSON.parse(line)).not.toHaveProperty("outcomes");
    }
  });
});

/**
 * Refusals, each its own `baton sim` process and nothing else: side by side, as the CLI's
 * are (cli.test.ts), where one at a time left the second core idle.
 */
describe.concurrent("baton sim's refusals of a graph of your own", () => {
  it.for<[string[], string]>([
    [
      [`${F}/nope.ts`, "--handlers", `${F}/simOwn.sim.ts`],
      `baton sim: ${F}/nope.ts does not exist`,
    ],
    [
      [`${F}/simOwn.graph.ts`, "--handlers", `${F}/simOwnNoDefault.sim.ts`],
      `baton sim: ${F}/simOwnNoDefault.sim.ts exports no handlers: give it \`export default ({ sleep, now, random }) =>`,
    ],
    [
      // The graph module again where the handlers go: it said `job kind "0": unknown option kind`.
      [`${F}/simOwn.graph.ts`, "--handlers", `${F}/simOwn.graph.ts`],
      `baton sim: ${F}/simOwn.graph.ts exports no handlers: give it \`export default ({ sleep, now, random }) => ({ kind: async (input, ctx) => …, … })\`, the handlers simulate takes (README: Simulation), not a list (the jobs of a graph?)`,
    ],
    [
      // The two swapped: the handlers function was called as the graph's, with no tools, and
      // said "the graph function … threw: Cannot destructure property 'sleep'".
      [`${F}/simOwn.sim.ts`, "--handlers", `${F}/simOwn.graph.ts`],
      `not a list (the jobs of a graph?); ${F}/simOwn.sim.ts, given as the graph, exports a function (the handlers?): were the two swapped? baton sim ${F}/simOwn.graph.ts --handlers ${F}/simOwn.sim.ts [CONFIG]`,
    ],
    [
      [`${F}/simOwn.graph.ts`, "--handlers", `${F}/simOwnLacking.sim.ts`, "--seeds", "1..4"],
      `baton sim: your graph has jobs of kind merge, which the --handlers module ${F}/simOwnLacking.sim.ts does not define (it defines fetch)`,
    ],
    [
      // They said "handlers" and "your handlers function", which baton sim has not.
      [`${F}/simOwn.graph.ts`, "--handlers", `${F}/simOwnNoKinds.sim.ts`, "--seeds", "1..4"],
      `baton sim: the --handlers module ${F}/simOwnNoKinds.sim.ts defines no job kinds: give it a handler for each kind of your graph (fetch, merge)`,
    ],
    [
      [`${F}/simOwn.graph.ts`, "--handlers", `${F}/simOwnReturnsNull.sim.ts`, "--seeds", "1..4"],
      `baton sim: the job module the function of the --handlers module ${F}/simOwnReturnsNull.sim.ts returned must be an object mapping each kind of your graph (fetch, merge) to its handler, not null`,
    ],
    [
      [`${F}/simOwn.graph.ts`],
      `baton sim: ${F}/simOwn.graph.ts: a graph of your own needs its simulated handlers: add --handlers SIM, a module whose default export is a handler for each kind, or a function of the tools`,
    ],
    [
      // A job module where the graph goes: it was asked for --handlers, as if it were a graph.
      [`${F}/plain.jobs.ts`],
      `baton sim: ${F}/plain.jobs.ts is a job module (its default export is handlers), not a graph module: give the graph module, as baton run takes it, and the handlers the simulation runs instead of yours as --handlers SIM`,
    ],
    [
      ["--handlers", `${F}/simOwn.sim.ts`],
      `baton sim: --handlers ${F}/simOwn.sim.ts goes with a graph of your own: give its module first`,
    ],
    [
      [...OWN, "--jobs", "5"],
      `baton sim: --jobs sizes the drawn graph, and you gave a graph of your own (${F}/simOwn.graph.ts): leave --jobs out`,
    ],
    [
      [...OWN, `${F}/simOwn.sim.ts`],
      `baton sim: give one graph module, not 2 (${F}/simOwn.graph.ts, ${F}/simOwn.sim.ts): GRAPH --handlers SIM (baton sim --help shows how) [CONFIG]\n`,
    ],
    [
      [`${F}/simOwn.graph.ts`, "--handlers", `${F}/simOwnThrows.sim.ts`, "--seeds", "1..4"],
      // Seed 1 of the range, on either thread (seed 2 was named when its thread threw first).
      `baton sim: seed 1: the function of the --handlers module ${F}/simOwnThrows.sim.ts threw when coordinator-0 started: TypeError: Cannot read properties of undefined (reading 'url') (at ${join(ROOT, F, "simOwnThrows.sim.ts")}:8:`,
    ],
    [
      // It began "simulate:" and named no global.
      [`${F}/simOwn.graph.ts`, "--handlers", `${F}/simOwnFrozen.sim.ts`, "--seeds", "1..4"],
      "baton sim: cannot watch your handlers for reads of the real clock and randomness: Math.random cannot be replaced (TypeError: Cannot redefine property: random)",
    ],
  ])("refuses %j with exit 2", async ([args, message], { expect, onTestFinished }) => {
    const exit = await startOwnBaton(onTestFinished, ["sim", ...args, "--threads", "2"]).exit;
    expect(exit.stdout).toBe("");
    expect(exit.stderr).toContain(message);
    expect(exit.code).toBe(2);
  });
});

describe("baton sim GRAPH on a terminal", () => {
  it("prints what your handlers print above its progress line, where it was glued to its end", async () => {
    const dir = mkdtempSync(join(tmpdir(), "baton-sim-terminal-"));
    folders.push(dir);
    writeFileSync(
      join(dir, "printing.graph.ts"),
      `import { job } from ${JSON.stringify(join(ROOT, "src/index.ts"))};
export const jobs = { say: (n: number) => n };
export default [1, 2, 3].map((n) => job("say", n));
`,
    );
    // Each job prints after a virtual second, once the line is up.
    writeFileSync(
      join(dir, "printing.sim.ts"),
      `export default ({ sleep }: { sleep(ms: number): Promise<void> }) => ({
  say: async (n: number) => {
    await sleep(1_000);
    console.log(\`printed by job \${n}\`);
    return n;
  },
});
`,
    );
    const { code, out } = await onTerminal(
      ["sim", "printing.graph.ts", "--handlers", "printing.sim.ts", "--seeds", "1..6"],
      dir,
    );
    expect(code, out).toBe(0);
    const pieces = out.split(/\r\n|\r\x1b\[2K|\n/);
    const printed = pieces.filter((piece) => piece.includes("printed by job"));
    // Three jobs a seed (a retried one prints again), each on a line of its own.
    expect(printed.length, out).toBeGreaterThanOrEqual(18);
    for (const piece of printed) expect(piece, out).toMatch(/^printed by job \d$/);
    expect(pieces.some((piece) => piece.startsWith("seeds 1..6 on "))).toBe(true);
  }, 120_000);
});
