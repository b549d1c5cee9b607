/**
 * `baton run` on a terminal, as a user sees it: run under script(1), which gives it a
 * pseudo-terminal, so that it draws its progress bar. What a handler reports with
 * `ctx.progress` shows under the bar while its job runs, and goes when the job is over. A
 * `baton worker` started on a terminal says when it has joined. The test stops script by its
 * pid when it ends (its run then gets SIGHUP, the terminal closing), and the baton it started
 * off a terminal by its pid too.
 */
import { writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ROOT, startBaton, stopBatons } from "../fixtures/batonCli.ts";
import { onTerminal, stopTerminals } from "../fixtures/onTerminal.ts";
import { printedJoin } from "../fixtures/printedJoin.ts";
import { within } from "../fixtures/within.ts";

const tempDirs: string[] = [];

afterEach(async () => {
  stopBatons();
  stopTerminals();
  await Promise.all(tempDirs.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
});

describe("baton run on a terminal", () => {
  it("shows what a running handler reports under the progress bar, until its job is over", async () => {
    const dir = await mkdtemp(join(tmpdir(), "baton-terminal-"));
    tempDirs.push(dir);
    const graph = join(dir, "steps.graph.ts");
    // `steps` reports each of its three steps; `rest` runs after it, reporting nothing.
    writeFileSync(
      graph,
      `import { job } from ${JSON.stringify(join(ROOT, "src/index.ts"))};
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
export const jobs = {
  steps: async (_: null, ctx: { progress(p: object): void }) => {
    for (let step = 1; step <= 3; step++) {
      ctx.progress({ done: step, total: 3, message: \`step \${step} of 3\` });
      await sleep(600);
    }
  },
  rest: () => sleep(1_500),
};
export default [job("rest", null, { after: [job("steps", null)] })];
`,
    );
    const { code, out } = await onTerminal(["run", graph, "--no-store", "--workers", "1"], dir);
    expect(code, out).toBe(0);
    // What the terminal showed, each time the live lines were drawn.
    const frames = out.split("\r\x1b[2K").filter((frame) => frame.includes(" done · "));
    expect(frames.some((frame) => /\n {2}steps [0-9a-f]{16}: 2\/3 · step 2 of 3/.test(frame))).toBe(
      true,
    );
    // Once `steps` was over, the bar drawn while `rest` ran showed its line no more.
    const last = frames.filter((frame) => frame.includes(" 1/2 done ")).at(-1);
    expect(last).toContain("1 running");
    expect(last).not.toContain("steps");
  }, 60_000);
});

describe("baton run --in-process on a terminal", () => {
  it("prints what a handler prints above the progress bar, where it was glued to the bar's end", async () => {
    const dir = await mkdtemp(join(tmpdir(), "baton-terminal-"));
    tempDirs.push(dir);
    const graph = join(dir, "printing.graph.ts");
    // Each job prints once the bar is up (it is drawn every 200 ms).
    writeFileSync(
      graph,
      `import { job } from ${JSON.stringify(join(ROOT, "src/index.ts"))};
export const jobs = {
  say: async (n: number) => {
    await new Promise((resolve) => setTimeout(resolve, 500));
    console.log(\`printed by job \${n}\`);
    console.error(\`also on stderr, job \${n}\`);
  },
};
export default [1, 2, 3].map((n) => job("say", n));
`,
    );
    const { code, out } = await onTerminal(
      ["run", graph, "--in-process", "--workers", "1", "--no-store"],
      dir,
    );
    expect(code, out).toBe(0);
    const pieces = out.split(/\r\n|\r\x1b\[2K|\n/);
    const printed = pieces.filter((piece) => /printed by job|also on stderr/.test(piece));
    expect(printed, out).toHaveLength(6);
    // Each on a line of its own, none after the bar's text.
    for (const piece of printed)
      expect(piece, out).toMatch(/^(printed by job|also on stderr, job) \d$/);
    expect(pieces.some((piece) => piece.includes(" done · "))).toBe(true);
  }, 60_000);
});

describe("baton worker on a terminal", () => {
  it("says it joined the run, where it said nothing until the run ended", async () => {
    const dir = await mkdtemp(join(tmpdir(), "baton-terminal-"));
    tempDirs.push(dir);
    const graph = join(dir, "joined.graph.ts");
    writeFileSync(
      graph,
      `import { job } from ${JSON.stringify(join(ROOT, "src/index.ts"))};
export const jobs = { twice: (n: number) => 2 * n };
export default [job("twice", 1), job("twice", 2)];
`,
    );
    const run = startBaton(["run", graph, "--workers", "0", "--no-store"], { cwd: dir });
    const { address, args } = await printedJoin(run);
    const worker = onTerminal([...args, "--name", "w1"], dir);
    const { code, out } = await within(worker, 60_000, "the worker on a terminal");
    expect(code, out).toBe(0);
    const lines = out.split("\r\n");
    const joined = lines.filter((line) => line.startsWith("baton worker: joined run "));
    expect(joined, out).toHaveLength(1);
    expect(joined[0]).toMatch(
      / at ws:\/\/127\.0\.0\.1:\d+ as w1: it runs the run's jobs until the run ends \(Ctrl-C leaves the run, giving back a job it holds\)$/,
    );
    expect(joined[0]).toContain(` at ${address} as w1`);
    // Before the line that says the run is over.
    expect(lines.indexOf(joined[0]!)).toBeLessThan(
      lines.findIndex((line) => line.includes("stopped this worker")),
    );
    expect((await within(run.exit, 30_000, "the run")).code).toBe(0);
  }, 90_000);
});
