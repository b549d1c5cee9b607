/**
 * `baton sim` as a user runs it: exit 0 when every seed passes, 1 when one fails, 2 for bad
 * usage; a failure prints a replay command and a smallest reproducer that both reproduce it.
 */
import { readFileSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import WebSocket from "ws";
import type { DashboardState } from "../../src/viz/dashboardModel.ts";
import { startBaton, startOwnBaton, stopBatons } from "../fixtures/batonCli.ts";
import { stderrMatches } from "../fixtures/stderrMatches.ts";

afterEach(stopBatons);

const sim = (...args: string[]) => startBaton(["sim", ...args]).exit;
const URL_LINE = /dashboard: (http:\/\/127\.0\.0\.1:\d+\/[\w-]+\/)/;

interface ReplaySnapshot {
  state: DashboardState;
  replay: { position: number; length: number; event?: string; violationAt?: number };
}

/** A replay dashboard's socket: its snapshots one by one, and `seek` as the page sends it. */
async function replayPage(url: string) {
  const ws = new WebSocket(`${url.replace(/^http/, "ws")}ws`);
  const snapshots: ReplaySnapshot[] = [];
  let wake: (() => void) | undefined;
  ws.on("message", (data) => {
    snapshots.push(JSON.parse(String(data)));
    wake?.();
  });
  await new Promise((resolve, reject) => ws.once("open", resolve).once("error", reject));
  return {
    async next(): Promise<ReplaySnapshot> {
      while (snapshots.length === 0) await new Promise<void>((resolve) => (wake = resolve));
      return snapshots.shift()!;
    },
    seek: (position: number) => ws.send(JSON.stringify({ type: "seek", position })),
    close: () => ws.terminate(),
  };
}

/** The arguments of a printed `baton sim ...` command line (quotes removed). */
function argsOf(command: string): string[] {
  const words = command.match(/"[^"]*"|\S+/g) ?? [];
  return words.slice(2).map((w) => w.replace(/^"|"$/g, ""));
}

describe("baton sim", () => {
  it("passes seeds with exit 0 and prints pass, time and trace hash per seed", async () => {
    const exit = await sim(
      "--seeds",
      "1..3",
      "--jobs",
      "5",
      "--workers",
      "2",
      "--check-determinism",
    );
    expect(exit.stderr).toBe("");
    expect(exit.code).toBe(0);
    expect(exit.stdout).toMatch(/seed 1: pass \(\d+ virtual ms in \d+ ms, trace [0-9a-f]{16}\)/);
    expect(exit.stdout).toMatch(
      /3 seeds, 0 failed, in [\d.]+ s \([\d.]+ seeds\/s on [12] threads?\)/,
    );
  });

  it("fails with exit 1, names the invariant, and prints commands that reproduce it", async () => {
    const exit = await sim(
      "--seed",
      "4",
      "--jobs",
      "6",
      "--workers",
      "4",
      "--plant",
      "lease-running-job",
    );
    expect(exit.code).toBe(1);
    expect(exit.stdout).toMatch(/seed 4: FAIL invariant 1/);
    expect(exit.stdout).toMatch(/last 30 events:/);
    const hash = /trace ([0-9a-f]{16})/.exec(exit.stdout)![1];
    const replay = /^replay: (baton sim .*)$/m.exec(exit.stdout)![1]!;
    const smallest = /^smallest reproducer .*: (baton sim .*)$/m.exec(exit.stdout)![1]!;

    const replayed = await sim(...argsOf(replay));
    expect(replayed.code).toBe(1);
    expect(replayed.stdout).toContain(`trace ${hash}`);
    expect(replayed.stdout).toMatch(/^\d+ sim seed 4 jobs 6 workers 4/m);
    // The replay prints the trace once and what broke, and neither shrinks nor replays again.
    expect(replayed.stdout.match(/^\d+ violation 1: /gm)).toHaveLength(1);
    expect(replayed.stdout).toMatch(/^seed 4 failed: invariant 1 /m);
    expect(replayed.stdout).not.toMatch(/last 30 events|^replay:|smallest reproducer/m);

    const small = await sim(...argsOf(smallest), "--no-shrink");
    expect(small.code).toBe(1);
    expect(small.stdout).toMatch(/FAIL invariant 1/);
  });

  it("runs the drawn graph with --fail-fast and a cancel@AT fault, and replays --fail-fast", async () => {
    const passed = await sim(
      ...["--seeds", "1..4", "--jobs", "20", "--workers", "4", "--fail-fast"],
      ...["--fault-list", "cancel@5000"],
    );
    expect(passed.stderr).toBe("");
    expect(passed.code).toBe(0);
    expect(passed.stdout).toMatch(/4 seeds, 0 failed/);
    const failed = await sim(
      ...["--seed", "4", "--jobs", "6", "--workers", "4", "--fail-fast", "--no-shrink"],
      ...["--plant", "lease-running-job"],
    );
    expect(failed.code).toBe(1);
    const replay = /^replay: (baton sim .*)$/m.exec(failed.stdout)![1]!;
    expect(argsOf(replay)).toContain("--fail-fast");
    const replayed = await sim(...argsOf(replay));
    expect(replayed.stdout).toMatch(/^\d+ sim seed 4 jobs 6 workers 4 .* failFast/m);
  });

  it("reports a range on 2 threads in seed order, each seed with its verdict and trace of 1 thread", async () => {
    // A range this short may end on the calling thread before the helper has loaded: that a
    // helper's seed traces as this thread's is shown by simulateSeeds' tests (callingThread:
    // false) and by simOwnGraph's, whose handlers make a helper take a seed.
    const seeds = ["--seeds", "1..6", "--jobs", "5", "--workers", "2"];
    const verdicts = (stdout: string) =>
      stdout
        .split("\n")
        .filter((line) => line.startsWith("seed "))
        .map((line) => line.replace(/ in \d+ ms/, ""));
    const one = await sim(...seeds, "--threads", "1");
    const two = await sim(...seeds, "--threads", "2");
    expect(one.code).toBe(0);
    expect(two.code).toBe(0);
    expect(verdicts(two.stdout)).toEqual(verdicts(one.stdout));
    expect(verdicts(two.stdout)).toHaveLength(6);
  });

  it("refuses bad usage with exit 2", async () => {
    const exit = await sim("--faults", "apocalyptic");
    expect(exit.code).toBe(2);
    expect(exit.stderr).toMatch(/--faults must be one of none, default, heavy/);
    const typo = await sim("--faults", "hevy");
    expect(typo.code).toBe(2);
    expect(typo.stderr).toContain('not "hevy"; did you mean heavy? [CONFIG]');
    const threads = await sim("--threads", "0");
    expect(threads.code).toBe(2);
    expect(threads.stderr).toMatch(/--threads must be a number of threads from 1 to 64, not "0"/);
  });

  it("prints what README's example says it prints", async () => {
    const readme = readFileSync(new URL("../../README.md", import.meta.url), "utf8");
    const example = /```text\n\$ (baton sim .*)\n([\s\S]*?)```/.exec(readme)!;
    const exit = await sim(...argsOf(example[1]!));
    expect(exit.code).toBe(1);
    const shown = example[2]!.split("\n").filter((line) => line !== "" && !line.startsWith("  "));
    const printed = exit.stdout.split("\n").filter((line) => !line.startsWith("  "));
    for (const line of shown) {
      expect(printed).toContain(line.replace(/ in \d+ ms,/, / in \d+ ms,/.exec(exit.stdout)![0]));
    }
  });

  it("replays seed 0 with the command its failure prints", async () => {
    const exit = await sim(
      ...["--seeds", "0..0", "--jobs", "6", "--workers", "4"],
      ...["--plant", "lease-running-job", "--no-shrink"],
    );
    expect(exit.code).toBe(1);
    const replay = /^replay: (baton sim --replay 0 .*)$/m.exec(exit.stdout)![1]!;
    const replayed = await sim(...argsOf(replay));
    expect(replayed.stderr).toBe("");
    expect(replayed.code).toBe(1);
    const again = await sim("--replay", "0", "--jobs", "6", "--workers", "4");
    expect(again.stderr).toBe("");
    expect(again.stdout).toMatch(/^seed 0: pass/m);
  });

  it("on Ctrl-C stops at once, saying how far it got and the command that runs the rest", async () => {
    const baton = startBaton(["sim", "--seeds", "1..5000", "--jobs", "10", "--workers", "2"]);
    await stderrMatches(baton.stdout, /seed 3: pass/);
    baton.child.kill("SIGINT");
    const { code, stdout, stderr } = await baton.exit;
    expect(code).toBe(130);
    // Seeds a thread ended while another still ran an earlier one are named, not reported.
    const [, done, next] =
      /^baton sim: SIGINT: stopped after (\d+) of 5000 seeds, 0 failed, in [\d.]+ s \([\d.]+ seeds\/s on \d+ threads?\)(?:; \d+ later seeds? had ended, unreported while seed \d+ ran)?; the rest(?: \(which runs them again\))?: baton sim --seeds (\d+)\.\.5000 --jobs 10 --workers 2 --faults default\n$/.exec(
        stderr,
      )!;
    expect(Number(next)).toBe(Number(done) + 1);
    // Every seed it counts as done was reported.
    expect(stdout).toContain(`seed ${done}: pass`);
    expect(stdout).not.toContain(`seed ${next}: pass`);
  });

  it("on Ctrl-C while a helper thread loads, keeps the seeds this thread ran: reported, not run again", async () => {
    // The helper never finishes loading your handlers: one handed seed 2 at its start held it,
    // and the seeds this thread ended were neither reported nor kept from the rest's command.
    const fixture = (name: string) => new URL(`../fixtures/${name}`, import.meta.url).pathname;
    const baton = startBaton([
      "sim",
      fixture("simOwn.graph.ts"),
      "--handlers",
      fixture("simOwnStuckOnHelpers.sim.ts"),
      "--seeds",
      "1..2000",
      "--threads",
      "2",
    ]);
    await stderrMatches(baton.stdout, /^seed 3: pass/m, 20_000);
    baton.child.kill("SIGINT");
    const { code, stdout, stderr } = await baton.exit;
    expect(code).toBe(130);
    const [, done, next] =
      /^baton sim: SIGINT: stopped after (\d+) of 2000 seeds, 0 failed, in [\d.]+ s \([\d.]+ seeds\/s on 2 threads\); the rest: baton sim \S+ --handlers \S+ --seeds (\d+)\.\.2000 /.exec(
        stderr,
      ) ?? [stderr];
    expect(Number(done)).toBeGreaterThanOrEqual(3);
    expect(Number(next)).toBe(Number(done) + 1);
    expect(stdout).toContain(`seed ${done}: pass`);
  });

  it("names --until when it comes before the drawn faults end, where it said until, simulate's option", async () => {
    const late = await sim(
      ...["--seed", "1", "--jobs", "5", "--workers", "1", "--world", "0"],
      ...["--fault-list", "partition@5000:0+1000", "--until", "10"],
    );
    expect(late.stdout).toContain(
      "the faults end later, at 6000 ms: a run is only bound to be over once its faults are; give until (baton sim's --until) after 6000 ms, or fewer faults",
    );
    expect(late.code).toBe(1);
  });

  it("takes --world 00 as --world 0 (no rank groups)", async () => {
    const exit = await sim("--seed", "1", "--jobs", "3", "--workers", "1", "--world", "00");
    expect(exit.stderr).toBe("");
    expect(exit.code).toBe(0);
  });
});

/**
 * Quick refusals, each its own `baton sim` process and nothing else: side by side, as the
 * CLI's are (cli.test.ts), where one at a time left the second core idle.
 */
describe.concurrent("baton sim's refusals of bad usage", () => {
  it.for<[string[], string]>([
    [["--seed", "1e3"], '--seed must be a whole number from 0 to 4294967295, not "1e3"'],
    [["--seed", "0x10"], '--seed must be a whole number from 0 to 4294967295, not "0x10"'],
    [["--replay", "abc"], '--replay must be a whole number from 0 to 4294967295, not "abc"'],
    [["--replay", "3", "--seed", "4"], "give one of --seed S, --replay S or --seeds A..B, not"],
    [
      ["--seeds", "4294967294..4294967297"],
      '--seeds must be a whole number from 0 to 4294967295, not "4294967297"',
    ],
    [
      ["--seeds", "1..99999999999999999999"],
      '--seeds must be a whole number from 0 to 4294967295, not "99999999999999999999"',
    ],
    [["--seeds", "5..1"], '--seeds must be A..B with A ≤ B, e.g. 1..1000, not "5..1"'],
    [
      ["graph.ts", "--jobs", "jobs.ts"],
      "--jobs jobs.ts: --jobs N is how many jobs the drawn graph has; your graph's handlers for the simulation go in --handlers SIM (a module whose default export is a job module, or a function of the tools",
    ],
    [["--jobs", "./jobs.mjs"], "--jobs ./jobs.mjs: --jobs N is how many jobs the drawn graph has"],
    [["--jobs", "100000000"], '--jobs must be a number of jobs from 1 to 10000, not "100000000"'],
    [["--workers", "100000"], '--workers must be a number of workers from 1 to 1000, not "100000"'],
    [["--world", "1.5"], '--world must be a number of ranks from 0 to 10000, not "1.5"'],
    [["--world", "100000"], '--world must be a number of ranks from 0 to 10000, not "100000"'],
    // A negative number gets the flag's own message, not parseArgs' about a leading dash.
    [["--world", "-1"], '--world must be a number of ranks from 0 to 10000, not "-1"'],
    [["--jobs", "-5"], '--jobs must be a number of jobs from 1 to 10000, not "-5"'],
    [["--seed", "-1"], '--seed must be a whole number from 0 to 4294967295, not "-1"'],
    [["--threads", "500"], '--threads must be a number of threads from 1 to 64, not "500"'],
    [["--plant", "nope"], '--plant: unknown planted bug "nope"; give one of lease-running-job'],
    [
      ["--fault-list", "coordinator-crash@1000+99999999999999999999/torn"],
      'bad fault "coordinator-crash@1000+99999999999999999999/torn": it (coordinator-crash) ms must be a whole number of virtual ms from 0 to 2592000000',
    ],
    [
      ["--fault-list", "worker-crash@1000:5+300"],
      'bad fault "worker-crash@1000:5+300": it (worker-crash) takes no ms',
    ],
    [
      ["--faults", "heavy", "--fault-list", "reset@100:1"],
      "give --faults PROFILE or --fault-list LIST, not both",
    ],
    [
      ["--faults", "none", "--faults-within", "3s"],
      "--faults-within is when drawn faults start, and --faults none draws none: leave out --faults-within, or give --faults default or heavy",
    ],
    [
      ["--until", "2592000001"],
      '--until must be virtual ms, a whole number from 1 to 2592000000, or a duration and its unit such as 90s, 30m, 2h or 7d (at most 30d), not "2592000001"',
    ],
    [
      ["--ui", "--replay", "3", "--ui-port", "99999"],
      '--ui-port must be a TCP port from 0 to 65535, not "99999"',
    ],
    [
      ["--ui", "--replay", "3", "--json", "--check-determinism"],
      "--ui replays one run of the seed on the dashboard and reports it as text: leave out --json and --check-determinism, or --ui",
    ],
    [
      ["--replay", "3", "--ui-port", "4000"],
      "--ui-port goes with --ui, which starts the dashboard: add --ui, or leave --ui-port out",
    ],
  ])(
    "refuses %j with exit 2 and one line, before simulating",
    async ([args, message], { expect, onTestFinished }) => {
      const exit = await startOwnBaton(onTestFinished, ["sim", ...args]).exit;
      expect(exit.code).toBe(2);
      expect(exit.stdout).toBe("");
      expect(exit.stderr).toContain(message);
      expect(exit.stderr).not.toMatch(/\n\s+at /);
    },
  );
});

describe("baton sim --ui", { timeout: 120_000 }, () => {
  it("on --ui-port 0, prints the trace and failure report of the non-UI path, then the dashboard", async () => {
    const baton = startBaton(
      [
        "sim",
        "--replay",
        "2",
        "--jobs",
        "20",
        "--workers",
        "4",
        "--plant",
        "release-lease-twice",
      ].concat(["--no-shrink", "--ui", "--ui-port", "0", "--trace"]),
    );
    await stderrMatches(baton.stderr, URL_LINE, 90_000);
    const out = baton.stdout();
    expect(out).toMatch(
      /^seed 2: FAIL invariant 1 \(\d+ virtual ms in \d+ ms, trace [0-9a-f]{16}\)$/m,
    );
    expect(out).toMatch(/^seed 2 failed: invariant 1 .* violated: /m);
    expect(out).toMatch(/^faults: partition@/m);
    // --trace: the whole trace before the report, which then leaves out its last events.
    expect(out).toMatch(/^0 sim seed 2 jobs 20 workers 4 /m);
    expect(out).not.toMatch(/^last 30 events:$/m);
    // It is the replay: no command to replay it again.
    expect(out).not.toMatch(/^replay:/m);
    // The dashboard shows the broken invariant at the step it broke on, not before.
    const url = URL_LINE.exec(baton.stderr())![1]!;
    const message = /^seed 2 failed: (.*)$/m.exec(out)![1]!;
    const page = await replayPage(url);
    const first = await page.next();
    expect(first.state.violation).toBeUndefined();
    const at = first.replay.violationAt!;
    expect(at).toBe(first.replay.length);
    page.seek(at);
    const broken = await page.next();
    expect(broken.replay.position).toBe(at);
    expect(broken.state.violation).toMatchObject({ invariant: 1 });
    expect(message).toContain(broken.state.violation!.message);
    expect(broken.replay.event).toBe(broken.state.violation!.message);
    page.close();
    baton.child.kill("SIGINT");
    const exit = await baton.exit;
    expect(exit.code).toBe(1);
  });
});
