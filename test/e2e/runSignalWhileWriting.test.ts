/**
 * `baton run --json` stopped by a signal once its run has ended, while its JSON goes into a
 * pipe its reader is slow to empty: the first signal waits for the whole JSON, a second one
 * stops at once. Real processes; each is stopped by pid when its test ends.
 */
import { describe, expect, it } from "vitest";
import { type BatonProcess, startOwnBaton } from "../fixtures/batonCli.ts";
import { within } from "../fixtures/within.ts";

/** 3,000 leaves, 300 group totals and the total: about 400 KB of JSON, six pipes' worth. */
const LEAVES = 3_000;
const JOBS = LEAVES + LEAVES / 10 + 1;
/** What baton says on stderr when it holds a first `signal` until its result is written. */
const holding = (signal: string, again: string) =>
  `stopping (${signal}) once the result is written (${again} again to stop now)`;

/**
 * Starts an in-process `baton run --json` of `LEAVES` leaves and stops reading its stdout
 * at the first piece of JSON: the pipe fills, and baton holds the rest, still to be written.
 */
async function runWhosePipeIsFull(
  onTestFinished: (hook: () => void) => void,
): Promise<BatonProcess> {
  const run = startOwnBaton(
    onTestFinished,
    ["run", "test/fixtures/counted.graph.ts", "--in-process", "--no-store", "--json"],
    { env: { BATON_TEST_JOBS: String(LEAVES) } },
  );
  // Loading tsx and planning 3,301 jobs takes seconds on a loaded machine.
  await within(
    new Promise<void>((resolve) =>
      run.child.stdout.once("data", () => {
        run.child.stdout.pause();
        resolve();
      }),
    ),
    60_000,
    `the JSON's first piece (stderr: ${run.stderr()})`,
  );
  return run;
}

/** Settles once baton says `line` on stderr, or once it has exited (it may never say it). */
async function saidOrExited(run: BatonProcess, line: string): Promise<void> {
  const exited = new Promise<void>((resolve) => {
    if (run.child.exitCode !== null || run.child.signalCode !== null) resolve();
    else run.child.once("exit", () => resolve());
  });
  let heard = false;
  const said = new Promise<void>((resolve) => {
    const listen = () => {
      if (heard || !run.stderr().includes(line)) return;
      heard = true;
      run.child.stderr.off("data", listen);
      resolve();
    };
    run.child.stderr.on("data", listen);
    listen();
  });
  await within(Promise.race([said, exited]), 30_000, `baton saying "${line}"`);
}

describe.concurrent("baton run signalled while it writes its result", () => {
  it("writes the whole JSON into a slow pipe after a first SIGTERM, then exits 143", async ({
    onTestFinished,
  }) => {
    const run = await runWhosePipeIsFull(onTestFinished);
    process.kill(run.child.pid!, "SIGTERM");
    await saidOrExited(run, holding("SIGTERM", "SIGTERM"));
    run.child.stdout.resume();
    const { code, signal, stdout, stderr } = await within(run.exit, 60_000, "baton exiting");

    expect({ code, signal }).toEqual({ code: 143, signal: null });
    const result = JSON.parse(stdout) as { ok: boolean; jobs: unknown[] };
    expect(result.ok).toBe(true);
    expect(result.jobs).toHaveLength(JOBS);
    expect(stdout.endsWith("]}\n")).toBe(true);
    expect(stderr).toBe(`\n${holding("SIGTERM", "SIGTERM")}\n`);
  }, 150_000);

  it("stops at once on a second signal, its JSON cut, with the second one's code", async ({
    onTestFinished,
  }) => {
    const run = await runWhosePipeIsFull(onTestFinished);
    process.kill(run.child.pid!, "SIGTERM");
    await saidOrExited(run, holding("SIGTERM", "SIGTERM"));
    const exited = new Promise<number | null>((resolve) =>
      run.child.once("exit", (exitCode) => resolve(exitCode)),
    );
    process.kill(run.child.pid!, "SIGINT");
    // Still not reading: only a process that stops without writing the rest exits here.
    expect(await within(exited, 30_000, "baton exiting on the second signal")).toBe(130);
    run.child.stdout.resume();
    const { stdout, stderr } = await run.exit;

    expect(stdout.endsWith("]}\n")).toBe(false);
    expect(stderr).toContain("stopping now (second Ctrl-C)");
  }, 120_000);
});
